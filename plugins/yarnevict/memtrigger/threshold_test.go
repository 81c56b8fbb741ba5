package memtrigger

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	koordletutil "github.com/koordinator-sh/koordinator/pkg/koordlet/util"

	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

func TestMain(m *testing.M) {
	kerneltest.RunHelperIfRequested() // allocators re-exec this binary
	os.Exit(m.Run())
}

func TestThresholdFor(t *testing.T) {
	tests := []struct {
		name               string
		usage, used, level int64
		want               int64
		ok                 bool
	}{
		{"the room left below the level, on top of the usage file", 5000, 1000, 1300, 5300, true},
		{"at the level: already reached", 5000, 1300, 1300, 0, false},
		{"above it", 5000, 1400, 1300, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ThresholdFor(tt.usage, tt.used, tt.level)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func waitFire(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

// TestRealKernelThresholdFires: a usage threshold armed on a memory cgroup
// of the test's own fires once a process in it allocates across the level,
// not before; re-arming within the slack keeps the registration; a level
// already reached disarms; after Disarm nothing fires.
func TestKeepArmed(t *testing.T) {
	const mi = 1 << 20
	cases := []struct {
		name             string
		armed, th, usage int64
		want             bool
	}{
		{"within the slack, not reached: kept", 100 * mi, 104 * mi, 90 * mi, true},
		{"moved beyond the slack: registered again", 100 * mi, 120 * mi, 90 * mi, false},
		{"within the slack but reached (fired early): registered again", 100 * mi, 104 * mi, 102 * mi, false},
		{"at the armed value: reached", 100 * mi, 101 * mi, 100 * mi, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, keepArmed(tc.armed, tc.th, tc.usage))
		})
	}
}

func TestRealKernelThresholdFires(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "memory")
	dir := kerneltest.MakeCgroup(t, "memory", kerneltest.UniqueRoot(t))
	fired := make(chan struct{}, 16)
	th, err := NewThreshold(dir, func() { fired <- struct{}{} })
	require.NoError(t, err)
	t.Cleanup(func() { _ = th.Close() })

	usage, err := th.Usage()
	require.NoError(t, err)
	// Here "used" is the cgroup's own usage: the level is 64 MiB above it.
	require.NoError(t, th.Arm(usage, usage+64<<20))
	armed := th.Armed()
	assert.Equal(t, usage+64<<20, armed)
	require.NoError(t, th.Arm(usage+1<<20, usage+65<<20), "within the slack")
	assert.Equal(t, armed, th.Armed(), "not registered again")
	assert.False(t, waitFire(fired, 300*time.Millisecond), "nothing crossed yet")

	start := time.Now()
	require.NoError(t, kerneltest.Start(t, kerneltest.HelperScript("grow=256@512"), dir).Release())
	ok := waitFire(fired, 5*time.Second)
	u2, _ := th.Usage()
	t.Logf("usage %d -> %d, armed %d", usage, u2, th.Armed())
	require.True(t, ok, "crossing 64 MiB fires")
	t.Logf("64 MiB crossed and signalled %v after the allocator started", time.Since(start).Round(time.Millisecond))

	// The crossed threshold is spent: re-armed above the usage now, it is
	// registered again and fires at the next crossing (keepArmed decides
	// the case within the slack).
	require.Eventually(t, func() bool { u, _ := th.Usage(); return u >= 256<<20 }, 30*time.Second, 10*time.Millisecond,
		"the first allocator holds its 256 MiB")
	usage, err = th.Usage()
	require.NoError(t, err)
	spent := th.Armed()
	require.Less(t, spent, usage)
	require.NoError(t, th.Arm(usage, usage+4<<20))
	require.NotEqual(t, spent, th.Armed(), "a threshold already reached is registered again")
	assert.InDelta(t, usage+4<<20, th.Armed(), 2<<20)
	require.NoError(t, kerneltest.Start(t, kerneltest.HelperScript("grow=64@512"), dir).Release())
	require.True(t, waitFire(fired, 5*time.Second), "the new threshold fires at the next crossing")

	usage, err = th.Usage()
	require.NoError(t, err)
	require.NoError(t, th.Arm(usage, usage), "a level already reached")
	assert.Zero(t, th.Armed(), "disarmed")
}

// TestRealKernelThresholdReplacesWithoutLeak: re-arming many times leaves
// one registration (the old eventfds are closed) and disarming ends the
// waiters.
func TestRealKernelThresholdReplacesWithoutLeak(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "memory")
	dir := kerneltest.MakeCgroup(t, "memory", kerneltest.UniqueRoot(t))
	th, err := NewThreshold(dir, func() {})
	require.NoError(t, err)
	before := openFDs(t)
	for i := int64(1); i <= 50; i++ {
		require.NoError(t, th.Arm(0, i*(RearmSlack+1)))
	}
	assert.LessOrEqual(t, openFDs(t), before+1, "one eventfd open")
	th.Disarm()
	assert.LessOrEqual(t, openFDs(t), before)
}

// TestRealKernelTrigger: on this machine kind (cgroup v1) memory cgroups
// take usage thresholds: New uses those that exist (a missing one is left
// out), a process of a child cgroup allocating across the level wakes it
// (the parent's threshold sees its children's charges), and PSI triggers
// are used where the kernel accepts them, otherwise New says why.
func TestRealKernelTrigger(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "memory")
	parent := kerneltest.UniqueRoot(t)
	dir := kerneltest.MakeCgroup(t, "memory", parent+"/child")
	tr := New(Options{CgroupRoot: kerneltest.CgroupRoot, ProcRoot: "/proc", MemoryDirs: []string{parent, parent + "-missing"}})
	t.Cleanup(func() { _ = tr.Close() })
	require.Len(t, tr.Kinds(), 1+len(psiKinds(tr)))
	assert.Equal(t, KindThreshold+" on "+parent, tr.Kinds()[0])

	// Node memory used (koordlet's definition) 64 MiB below the level.
	mi, err := koordletutil.GetMemInfo()
	require.NoError(t, err)
	used := int64(mi.MemUsageBytes())
	require.NoError(t, tr.Arm(used, used+64<<20))
	start := time.Now()
	require.NoError(t, kerneltest.Start(t, kerneltest.HelperScript("grow=256@512"), dir).Release())
	assert.True(t, waitFire(tr.C(), 5*time.Second), "the parent's threshold fires")
	t.Logf("woken %v after the allocator started", time.Since(start).Round(time.Millisecond))
	tr.Disarm()

	p, err := NewPSI("/proc/pressure/memory", DefaultPSIStall, DefaultPSIWindow, func() {})
	if err != nil {
		assert.Empty(t, psiKinds(tr))
		assert.Contains(t, err.Error(), "/proc/pressure/memory", "the error names the file")
	} else {
		assert.NotEmpty(t, psiKinds(tr))
		assert.NoError(t, p.Close())
	}
}

func psiKinds(tr *Trigger) []string {
	var out []string
	for _, k := range tr.Kinds() {
		if k == KindPSI {
			out = append(out, k)
		}
	}
	return out
}

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir(filepath.Join("/proc", "self", "fd"))
	require.NoError(t, err)
	return len(ents)
}

// TestRealKernelThresholdFollowsARecreatedCgroup: the memory cgroup a
// threshold watches is removed and made again (the NodeManager recreating
// the YARN root): the next Arm registers on the new cgroup, and a crossing
// there fires. The code before kept the old registration (the new usage
// was within its slack), dead with the old cgroup: no wake-up ever again.
func TestRealKernelThresholdFollowsARecreatedCgroup(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "memory")
	dir := kerneltest.MakeCgroup(t, "memory", kerneltest.UniqueRoot(t))
	fired := make(chan struct{}, 16)
	th, err := NewThreshold(dir, func() { fired <- struct{}{} })
	require.NoError(t, err)
	t.Cleanup(func() { _ = th.Close() })
	usage, err := th.Usage()
	require.NoError(t, err)
	require.NoError(t, th.Arm(usage, usage+64<<20))

	require.NoError(t, unix.Rmdir(dir))
	// The kernel signals a registration when its cgroup goes (a moment
	// later, when the cgroup is offlined).
	assert.True(t, waitFire(fired, 5*time.Second), "the removal is signalled")
	require.NoError(t, os.Mkdir(dir, 0o755))
	usage, err = th.Usage()
	require.NoError(t, err)
	require.NoError(t, th.Arm(usage, usage+64<<20))
	assert.False(t, waitFire(fired, 300*time.Millisecond), "nothing crossed yet")
	require.NoError(t, kerneltest.Start(t, kerneltest.HelperScript("grow=256@512"), dir).Release())
	assert.True(t, waitFire(fired, 5*time.Second), "a crossing in the new cgroup fires")
}

// TestRealKernelTriggerOpensARootMadeLater: on the real memory controller,
// a YARN root that does not exist when the trigger is made gets its usage
// threshold at the first Arm after it exists, and a process allocating in
// a child of it wakes the trigger. The code before dropped it for good.
func TestRealKernelTriggerOpensARootMadeLater(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "memory")
	parent := kerneltest.UniqueRoot(t)
	tr := New(Options{CgroupRoot: kerneltest.CgroupRoot, ProcRoot: filepath.Join(t.TempDir(), "no-proc"), MemoryDirs: []string{parent}})
	t.Cleanup(func() { _ = tr.Close() })
	require.Empty(t, tr.Kinds(), "the root does not exist yet")

	dir := kerneltest.MakeCgroup(t, "memory", parent+"/child")
	mi, err := koordletutil.GetMemInfo()
	require.NoError(t, err)
	used := int64(mi.MemUsageBytes())
	require.NoError(t, tr.Arm(used, used+64<<20))
	require.Equal(t, []string{KindThreshold + " on " + parent}, tr.Kinds())
	require.NoError(t, kerneltest.Start(t, kerneltest.HelperScript("grow=256@512"), dir).Release())
	assert.True(t, waitFire(tr.C(), 5*time.Second), "the threshold on the root made later fires")
}

// TestRealKernelTriggerFollowsARootRemovedAndMadeAgain (issue 55 item 16,
// on this v1 host): a YARN root the trigger watches from the start is
// removed (Arm fails while it is gone, and says which cgroup) and made
// again; the next Arm registers on the new cgroup and a process allocating
// in a child of it wakes the trigger.
func TestRealKernelTriggerFollowsARootRemovedAndMadeAgain(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "memory")
	parent := kerneltest.UniqueRoot(t)
	dir := kerneltest.MakeCgroup(t, "memory", parent)
	tr := New(Options{CgroupRoot: kerneltest.CgroupRoot, ProcRoot: filepath.Join(t.TempDir(), "no-proc"), MemoryDirs: []string{parent}})
	t.Cleanup(func() { _ = tr.Close() })
	require.Equal(t, []string{KindThreshold + " on " + parent}, tr.Kinds())
	mi, err := koordletutil.GetMemInfo()
	require.NoError(t, err)
	used := int64(mi.MemUsageBytes())
	require.NoError(t, tr.Arm(used, used+64<<20))

	require.NoError(t, unix.Rmdir(dir))
	assert.ErrorContains(t, tr.Arm(used, used+64<<20), parent, "gone: the error names it")
	require.NoError(t, os.Mkdir(dir, 0o755))
	waitFire(tr.C(), 0) // drop the removal's signal, if it came already
	require.NoError(t, tr.Arm(used, used+64<<20))
	require.Equal(t, []string{KindThreshold + " on " + parent}, tr.Kinds(), "the same source, on the new cgroup")
	child := kerneltest.MakeCgroup(t, "memory", parent+"/child")
	require.NoError(t, kerneltest.Start(t, kerneltest.HelperScript("grow=256@512"), child).Release())
	assert.True(t, waitFire(tr.C(), 5*time.Second), "a crossing under the root made again wakes the trigger")
}
