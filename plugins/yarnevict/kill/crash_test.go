package kill

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"k8s.io/component-base/featuregate"

	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// crashEnv makes a re-executed test binary a killer that SIGKILLs itself
// at one step of a kill: "<step>|<cgroup root>|<hierarchy dir>|<container>".
const crashEnv = "KOORDLET_YARN_TEST_KILL_CRASH"

// runCrashingKillerIfRequested is the re-executed killer; call it first in
// TestMain.
func runCrashingKillerIfRequested() {
	spec := os.Getenv(crashEnv)
	if spec == "" {
		return
	}
	f := strings.Split(spec, "|")
	if len(f) != 4 {
		fmt.Fprintln(os.Stderr, "bad", crashEnv, spec)
		os.Exit(2)
	}
	step, h, name := Step(f[0]), cgroups.Hierarchy{CgroupRoot: f[1], ProcRoot: "/proc", Dir: f[2]}, f[3]
	k := &Killer{H: h, Grace: 300 * time.Millisecond, Journal: NewJournal(), Reason: "crash-test",
		Hook: func(s Step) {
			if s == step {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				time.Sleep(time.Hour)
			}
		}}
	own := cgroups.Ref{Dir: h.ContainerRelDir(name), Owned: true}
	_, err := k.Kill(&store.Container{Name: name, Cgroups: cgroups.Cgroups{cgroups.CPU: own, cgroups.Memory: own}})
	fmt.Fprintln(os.Stderr, "the kill ended without reaching step", step, err)
	os.Exit(3)
}

// procState returns the state letter of pid ("" when gone).
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return f[0]
}

// TestRealKernelKillerDiesAtEachStep kills the killing process at each step
// of a kill (intent recorded, SIGTERM sent, first SIGKILL pass made). Right
// after, the container's processes are all running normally or all gone —
// none stopped, frozen or stuck, and nothing made in the freezer hierarchy;
// after a restart (Recover with the journal on the cgroup) a kill that had
// sent a signal is finished and one that had not leaves the container
// running.
func TestRealKernelKillerDiesAtEachStep(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "cpu", "memory")
	kerneltest.UseHostRoots(t)
	for _, tc := range []struct {
		step Step
		// runningAfterCrash: every process still runs normally right after
		// the crash (else all are gone within a moment).
		runningAfterCrash, finishedOnRestart bool
	}{
		{StepJournaled, true, false},
		{StepTermSent, true, true},
		{StepKillSent, false, true},
	} {
		t.Run(string(tc.step), func(t *testing.T) {
			hier := kerneltest.UniqueRoot(t) + "/hadoop-yarn"
			name := "container_e17_1700000000000_0042_01_000003"
			dirs := []string{kerneltest.MakeCgroup(t, "cpu", hier+"/"+name), kerneltest.MakeCgroup(t, "memory", hier+"/"+name)}
			// An executor that ignores SIGTERM (so that a crash after it
			// leaves everything running) and keeps forking.
			p := kerneltest.Start(t, "trap '' TERM; (trap '' TERM; while :; do sleep 0.05 & wait; done) & (trap '' TERM; sleep 3600) & wait", dirs...)
			require.NoError(t, p.Release())
			// The long-lived processes: those in two listings 300 ms apart
			// (the loop's short sleeps, 50 ms each, come and go), once the
			// shell, the loop and the long sleep have all started (on a
			// busy machine the first listing may come before the last fork).
			var before []int
			require.Eventually(t, func() bool {
				first := map[int]bool{}
				for _, pid := range kerneltest.Pids(dirs[0]) {
					first[pid] = true
				}
				time.Sleep(300 * time.Millisecond)
				before = before[:0]
				for _, pid := range kerneltest.Pids(dirs[0]) {
					if first[pid] {
						before = append(before, pid)
					}
				}
				return len(before) >= 3
			}, 10*time.Second, 10*time.Millisecond)
			require.GreaterOrEqual(t, len(before), 3)

			self, err := os.Executable()
			require.NoError(t, err)
			cmd := exec.Command(self, "-test.run=^$")
			cmd.Env = append(os.Environ(), crashEnv+"="+strings.Join([]string{string(tc.step), kerneltest.CgroupRoot, hier, name}, "|"))
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "the killer must die at %s: %s", tc.step, out)
			ws := ee.Sys().(syscall.WaitStatus)
			require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "the killer died by SIGKILL at %s: %s", tc.step, out)

			// Afterwards: never stopped, frozen or stuck.
			assertNoneStopped := func() {
				for _, pid := range kerneltest.Pids(dirs[0]) {
					st := procState(pid)
					assert.NotContains(t, []string{"T", "t", "D"}, st, "pid %d is %s after the killer died", pid, st)
				}
			}
			assertNoneStopped()
			_, err = os.Stat(filepath.Join(kerneltest.CgroupRoot, "freezer", hier))
			assert.True(t, os.IsNotExist(err), "nothing made in the freezer hierarchy")
			if tc.runningAfterCrash {
				time.Sleep(200 * time.Millisecond)
				for _, pid := range before {
					assert.Contains(t, []string{"S", "R"}, procState(pid), "pid %d runs normally", pid)
				}
			} else {
				require.Eventually(t, func() bool { return len(kerneltest.Pids(dirs[0])) == 0 }, 5*time.Second, 20*time.Millisecond,
					"after the first SIGKILL pass every process dies without the killer: %v", kerneltest.Pids(dirs[0]))
			}
			buf := make([]byte, 256)
			_, xerr := unix.Getxattr(dirs[0], journalXattr, buf)
			assert.NoError(t, xerr, "the journal on the container's cgroup records the kill in progress")

			// A restarted koordlet.
			k := &Killer{H: cgroups.Hierarchy{CgroupRoot: kerneltest.CgroupRoot, ProcRoot: "/proc", Dir: hier}, Journal: NewJournal(), ExitTimeout: 5 * time.Second}
			own := cgroups.Ref{Dir: hier + "/" + name, Owned: true}
			// The eviction gate is still on (a kill journaled without a
			// reason may finish under any YARN eviction gate).
			require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{string(features.YARNBEMemoryEvict): true}))
			t.Cleanup(func() {
				_ = koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{string(features.YARNBEMemoryEvict): false})
			})
			rec := k.Recover([]*store.Container{{Name: name, Cgroups: cgroups.Cgroups{cgroups.CPU: own, cgroups.Memory: own}}}, time.Time{})
			require.Len(t, rec, 1)
			assert.Equal(t, tc.finishedOnRestart, rec[0].Finished)
			assert.Zero(t, rec[0].Remaining)
			if tc.finishedOnRestart {
				assert.Empty(t, kerneltest.Pids(dirs[0]), "the interrupted kill is finished")
			} else {
				for _, pid := range before {
					assert.Contains(t, []string{"S", "R"}, procState(pid), "pid %d still runs normally", pid)
				}
			}
			assertNoneStopped()
			_, xerr = unix.Getxattr(dirs[0], journalXattr, buf)
			assert.ErrorIs(t, xerr, unix.ENODATA, "the journal entry is cleared")
			assert.Empty(t, k.Recover([]*store.Container{{Name: name, Cgroups: cgroups.Cgroups{cgroups.CPU: own}}}, time.Time{}), "recovered once")
		})
	}
}

func TestDecideRecovery(t *testing.T) {
	now := time.Unix(1700000000, 0)
	on := func(gates ...featuregate.Feature) func(featuregate.Feature) bool {
		return func(f featuregate.Feature) bool { return slices.Contains(gates, f) }
	}
	for _, tc := range []struct {
		name  string
		e     JournalEntry
		gates func(featuregate.Feature) bool
		want  RecoverAction
	}{
		{"begun, gate on", JournalEntry{Step: StepKillSent, Reason: ReasonBEMemoryEvict, At: now.Add(-time.Minute)}, on(features.YARNBEMemoryEvict), RecoverFinish},
		{"begun, rolled back: gate off", JournalEntry{Step: StepKillSent, Reason: ReasonBEMemoryEvict, At: now.Add(-time.Minute)}, on(features.YARNBECPUEvict), RecoverGateOff},
		{"begun long ago", JournalEntry{Step: StepTermSent, Reason: ReasonBECPUEvict, At: now.Add(-time.Hour)}, on(features.YARNBECPUEvict), RecoverStale},
		{"nothing sent", JournalEntry{Step: StepJournaled, Reason: ReasonBEMemoryEvict, At: now}, on(features.YARNBEMemoryEvict), RecoverNotStarted},
		{"arbitration", JournalEntry{Step: StepKillSent, Reason: ReasonMemoryAllocatableEvict, At: now}, on(features.YARNAllocatableEvict), RecoverFinish},
		{"no reason (older version), guard on", JournalEntry{Step: StepKillSent, At: now}, on(features.YARNNodeManagerGuard), RecoverFinish},
		{"no reason, every gate off", JournalEntry{Step: StepKillSent, At: now}, on(), RecoverGateOff},
	} {
		assert.Equal(t, tc.want, DecideRecovery(tc.e, now, tc.gates), tc.name)
	}
}

// TestRealKernelRecoverRespectsGatesAndAge: a kill journaled mid-way by a
// koordlet that died is not finished by one started with the eviction
// gate off (a rollback), nor when it is older than MaxRecoverAge; the
// container runs on and the entry goes. The code before finished both.
func TestRealKernelRecoverRespectsGatesAndAge(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "cpu", "memory")
	kerneltest.UseHostRoots(t)
	hier := kerneltest.UniqueRoot(t) + "/hadoop-yarn"
	k := &Killer{H: cgroups.Hierarchy{CgroupRoot: kerneltest.CgroupRoot, ProcRoot: "/proc", Dir: hier}, Journal: NewJournal(), ExitTimeout: 2 * time.Second}
	for _, tc := range []struct {
		name string
		at   time.Time
		gate bool
	}{
		{"gate off", time.Now(), false},
		{"stale", time.Now().Add(-MaxRecoverAge - time.Minute), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := realContainer(t, hier, "container_e17_1700000000000_0042_01_00000"+map[bool]string{false: "6", true: "7"}[tc.gate], true)
			require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{string(features.YARNBEMemoryEvict): tc.gate}))
			t.Cleanup(func() {
				_ = koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{string(features.YARNBEMemoryEvict): false})
			})
			abs := k.H.AbsDir(cgroups.CPU, c.Cgroups[cgroups.CPU].Dir)
			k.Journal.now = func() time.Time { return tc.at }
			k.Journal.record(abs, StepKillSent, ReasonBEMemoryEvict)
			rec := k.Recover([]*store.Container{c}, time.Time{})
			require.Len(t, rec, 1)
			assert.False(t, rec[0].Finished)
			assert.True(t, alive(c.Pids[0]), "the container runs on")
			_, ok := k.Journal.read(abs)
			assert.False(t, ok, "the entry goes")
		})
	}
}
