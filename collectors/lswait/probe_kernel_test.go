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
// two cpu cgroups of this test: ls, watched into slot, and other, not.
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
	return p, ls, other, key
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

	// A hog and a task that sleeps and wakes, both on CPU 0, for a second.
	h := kerneltest.Start(t, "exec taskset -c 0 sh -c 'while :; do :; done'", hog)
	l := kerneltest.Start(t, "exec taskset -c 0 sh -c 'while :; do i=0; while [ $i -lt 200 ]; do i=$((i+1)); done; sleep 0.005; done'", ls)
	require.NoError(t, h.Release())
	require.NoError(t, l.Release())
	time.Sleep(time.Second)

	after, err := p.Read(7)
	require.NoError(t, err)
	d := after.Sub(before)
	require.Greater(t, d.All.Count(), uint64(50), "the LS task's wake-ups were timed")
	require.Greater(t, d.All.Sum, time.Duration(0))
	require.Equal(t, d.All.Count(), d.Others.Count(), "every wait is in both")
	require.Greater(t, d.Others.Sum, time.Duration(0), "the waits behind the hogs (no LS pod's) count as interference")
	require.LessOrEqual(t, d.Others.Sum, d.All.Sum)
	t.Logf("LS waits: %d, mean %v, p99 ≤ %v; behind non-LS tasks: %v of %v", d.All.Count(), d.All.Mean(), d.All.Quantile(0.99), d.Others.Sum, d.All.Sum)
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
// interference; the same hog in a cgroup of no LS pod makes the same waits
// interference. Compared under the same load, so that the machine's own
// tasks (counted as interference in both) do not decide it.
func TestRealKernelProbeSelfWaitIsNoInterference(t *testing.T) {
	p, ls, other, _ := watchedTestCgroup(t, 9)
	// run times a sleeper in the LS cgroup beside a hog in hogDir, both on
	// CPU 1, for a second.
	run := func(hogDir string) Waits {
		before, err := p.Read(9)
		require.NoError(t, err)
		hog := kerneltest.Start(t, "exec taskset -c 1 sh -c 'while :; do :; done'", hogDir)
		sleeper := kerneltest.Start(t, "exec taskset -c 1 sh -c 'while :; do sleep 0.005; done'", ls)
		require.NoError(t, hog.Release())
		require.NoError(t, sleeper.Release())
		time.Sleep(time.Second)
		after, err := p.Read(9)
		require.NoError(t, err)
		for _, pr := range []*kerneltest.Process{hog, sleeper} {
			_ = syscall.Kill(-pr.Pid(), syscall.SIGKILL)
		}
		return after.Sub(before)
	}
	self, foreign := run(ls), run(other)
	t.Logf("behind the pod's own hog: %d waits, %v in all, %v as interference; behind a foreign hog: %d waits, %v in all, %v as interference",
		self.All.Count(), self.All.Sum, self.Others.Sum, foreign.All.Count(), foreign.All.Sum, foreign.Others.Sum)
	require.Greater(t, self.All.Count(), uint64(20))
	require.Greater(t, foreign.Others.Sum, time.Duration(0))
	// The waits counted as behind LS tasks (all − interference): the
	// pod's own hog's, not the foreign hog's.
	selfLS, foreignLS := self.All.Sum-self.Others.Sum, foreign.All.Sum-foreign.Others.Sum
	require.Greater(t, selfLS, 50*time.Millisecond, "the waits behind the pod's own hog are not interference")
	require.Greater(t, selfLS, 3*foreignLS, "the waits behind a foreign hog are interference")
}
