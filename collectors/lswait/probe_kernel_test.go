package lswait

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// watchedTestCgroup loads the probe (closed when the test ends) and makes
// two cpu cgroups of this test: ls, watched into slot, and other, not
// watched and marked batch (a YARN hierarchy).
func watchedTestCgroup(t *testing.T, slot uint32) (p *Probe, ls, other string, key CgroupKey) {
	t.Helper()
	kerneltest.RequireCgroupV1(t, "cpu")
	kerneltest.UseHostRoots(t)
	root := kerneltest.UniqueRoot(t)
	ls = kerneltest.MakeCgroup(t, "cpu", filepath.Join(root, "ls"))
	other = kerneltest.MakeCgroup(t, "cpu", filepath.Join(root, "other"))
	p, err := OpenProbe(false)
	if err != nil {
		kerneltest.Skipf(t, "real-kernel test: cannot load the CPU wait probe here: %v", err)
	}
	t.Cleanup(p.Close)
	hid, err := cgroups.HierarchyID(cgroups.Hierarchy{CgroupRoot: kerneltest.CgroupRoot}, cgroups.CPU)
	require.NoError(t, err)
	var st unix.Stat_t
	require.NoError(t, unix.Stat(ls, &st))
	key = CgroupKey{HierarchyID: hid, ID: st.Ino}
	require.NoError(t, p.Watch(key, slot))
	require.NoError(t, unix.Stat(other, &st))
	require.NoError(t, p.MarkBatch(CgroupKey{HierarchyID: hid, ID: st.Ino}))
	return p, ls, other, key
}

// runBeside times, for a second, a task in the LS cgroup ls that sleeps
// and wakes beside a CPU hog in hogDir, both on CPU cpu, and returns the
// waits counted in slot.
func runBeside(t *testing.T, p *Probe, slot uint32, ls, hogDir, cpu string) Waits {
	t.Helper()
	before, err := p.Read(slot)
	require.NoError(t, err)
	hog := kerneltest.Start(t, "exec taskset -c "+cpu+" sh -c 'while :; do :; done'", hogDir)
	sleeper := kerneltest.Start(t, "exec taskset -c "+cpu+" sh -c 'while :; do sleep 0.005; done'", ls)
	require.NoError(t, hog.Release())
	require.NoError(t, sleeper.Release())
	time.Sleep(time.Second)
	after, err := p.Read(slot)
	require.NoError(t, err)
	for _, pr := range []*kerneltest.Process{hog, sleeper} {
		_ = syscall.Kill(-pr.Pid(), syscall.SIGKILL)
	}
	return after.Sub(before)
}

// TestRealKernelProbe: the waits of the tasks in a watched cgroup are
// counted in its slot, those elsewhere in no slot; a task that competes
// with a CPU hog on one CPU waits.
func TestRealKernelProbe(t *testing.T) {
	p, ls, hog, lsKey := watchedTestCgroup(t, 7)
	before, err := p.Read(7)
	require.NoError(t, err)
	other, err := p.Read(8)
	require.NoError(t, err)

	// A hog and a task that sleeps and wakes, both on CPU 0, until more
	// than 50 of the task's waits are timed: within a second on a host; in
	// make test-kernel-510's emulated guest the task's loop of forks and
	// execs runs a few iterations a second (5.10 there: 5 beside the hog,
	// 6.1: 8), and a second held 30-76 waits on 5.10.
	h := kerneltest.Start(t, "exec taskset -c 0 sh -c 'while :; do :; done'", hog)
	l := kerneltest.Start(t, "exec taskset -c 0 sh -c 'while :; do i=0; while [ $i -lt 200 ]; do i=$((i+1)); done; sleep 0.005; done'", ls)
	require.NoError(t, h.Release())
	require.NoError(t, l.Release())
	var (
		d       Waits
		readErr error
	)
	require.Eventually(t, func() bool {
		var after Waits
		if after, readErr = p.Read(7); readErr != nil {
			return true
		}
		d = after.Sub(before)
		return d.All.Count() > 50
	}, time.Minute, 50*time.Millisecond, "the LS task's wake-ups were timed")
	require.NoError(t, readErr)
	require.Greater(t, d.All.Sum, time.Duration(0))
	require.Equal(t, d.All.Count(), d.Others.Count(), "every wait is in both")
	require.Greater(t, d.Others.Sum, time.Duration(0), "the waits behind the batch hog count as interference")
	require.LessOrEqual(t, d.Others.Sum, d.All.Sum)
	t.Logf("LS waits: %d, mean %v, p99 ≤ %v; behind batch: %v of %v", d.All.Count(), d.All.Mean(), d.All.Quantile(0.99), d.Others.Sum, d.All.Sum)
	otherAfter, err := p.Read(8)
	require.NoError(t, err)
	require.Equal(t, other.All.Count(), otherAfter.All.Count(), "no wait counted in a slot no cgroup maps to")

	require.NoError(t, p.Unwatch(lsKey))
	time.Sleep(100 * time.Millisecond)
	mid, err := p.Read(7)
	require.NoError(t, err)
	time.Sleep(500 * time.Millisecond)
	end, err := p.Read(7)
	require.NoError(t, err)
	require.Equal(t, mid.All.Count(), end.All.Count(), "an unwatched cgroup's waits are not counted")
}

// TestRealKernelProbeSelfWaitIsNoInterference: a task that waits behind a
// hog of its own pod (both in watched cgroups) waits, but not as
// interference; the same hog in a batch cgroup makes waits interference.
// Nothing but the test's batch cgroup is batch, so the machine's other
// tasks, which the LS task also waits behind on a busy machine, count in
// neither case: a wait counts only when the hog had the CPU before it.
func TestRealKernelProbeSelfWaitIsNoInterference(t *testing.T) {
	p, ls, other, _ := watchedTestCgroup(t, 9)
	self, foreign := runBeside(t, p, 9, ls, ls, "1"), runBeside(t, p, 9, ls, other, "1")
	t.Logf("behind the pod's own hog: %d waits, %v in all, %v as interference; behind a batch hog: %d waits, %v in all, %v as interference",
		self.All.Count(), self.All.Sum, self.Others.Sum, foreign.All.Count(), foreign.All.Sum, foreign.Others.Sum)
	require.Greater(t, self.All.Count(), uint64(20))
	require.Greater(t, self.All.Sum, 50*time.Millisecond, "the LS task waited behind its own pod's hog")
	require.Zero(t, self.Others.Sum, "the waits behind the pod's own hog are not interference")
	require.Greater(t, foreign.Others.Sum, time.Duration(0), "the waits behind a batch hog are interference")
}

// TestRealKernelProbeInterferenceIsBatchOnly: a wait behind a hog in a
// cgroup that is neither LS nor batch (a node daemon's, kubelet's, the
// runtime's) is no interference at all; the same hog in a container cgroup
// below the batch root (the YARN hierarchy) is. The machine's other tasks
// are in no batch cgroup: nothing else can count (on a busy machine the
// LS task waits behind them too, and the hog ran last before few of its
// waits: no share is asserted).
func TestRealKernelProbeInterferenceIsBatchOnly(t *testing.T) {
	p, ls, yarn, _ := watchedTestCgroup(t, 10)
	root := filepath.Dir(ls)
	daemon := kerneltest.MakeCgroup(t, "cpu", filepath.Join(filepath.Base(root), "daemon"))
	container := kerneltest.MakeCgroup(t, "cpu", filepath.Join(filepath.Base(root), filepath.Base(yarn), "container_1"))
	behindDaemon := runBeside(t, p, 10, ls, daemon, "1")
	behindYARN := runBeside(t, p, 10, ls, container, "1")
	t.Logf("behind a daemon's hog: %d waits, %v in all, %v as interference; behind a YARN container's hog: %d waits, %v in all, %v as interference",
		behindDaemon.All.Count(), behindDaemon.All.Sum, behindDaemon.Others.Sum, behindYARN.All.Count(), behindYARN.All.Sum, behindYARN.Others.Sum)
	require.Greater(t, behindDaemon.All.Sum, 50*time.Millisecond, "the LS task waited behind the daemon")
	require.Zero(t, behindDaemon.Others.Sum, "a wait behind a task of no batch cgroup is not interference")
	require.Greater(t, behindYARN.Others.Sum, time.Duration(0), "a wait behind a YARN container's task (below the batch root) is interference")
}

// TestRealKernelProbeLoads: the probe loads and attaches for either kind
// of hierarchy (the program differs only in a constant the verifier
// prunes by), on every kernel the tests run on (the v2 guest's too).
func TestRealKernelProbeLoads(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		p, err := OpenProbe(v2)
		if err != nil {
			kerneltest.Skipf(t, "real-kernel test: cannot load the CPU wait probe here (v2 %v): %v", v2, err)
		}
		p.Close()
	}
}
