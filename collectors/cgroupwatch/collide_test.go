package cgroupwatch

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// Each cgroup v1 hierarchy numbers its kernfs nodes (directories and files)
// on its own, cyclically: a mkdir takes the next id for the directory and
// one per file in it, so every directory id of a hierarchy is congruent to
// its cursor modulo the ids a mkdir takes there. Two hierarchies' ids can
// meet only when they agree modulo the gcd of their steps.

// mkdirIno creates dir and returns its inode number (its kernfs id).
func mkdirIno(dir string) (uint64, error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return 0, err
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// idStep measures the ids one mkdir takes in the cgroup directory parent
// (a multiple of the true step when others create cgroups there meanwhile).
func idStep(parent string) (uint64, error) {
	var ids [3]uint64
	for i := range ids {
		dir := filepath.Join(parent, fmt.Sprintf("step-%d", i))
		id, err := mkdirIno(dir)
		if err != nil {
			return 0, err
		}
		if err := os.Remove(dir); err != nil {
			return 0, err
		}
		ids[i] = id
	}
	return gcd(ids[1]-ids[0], ids[2]-ids[1]), nil
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// collision is a YARN root in a watched controller and a cgroup of another
// hierarchy with the same kernfs id.
type collision struct {
	watched, other string // controllers
	yarnRoot       string // absolute: <cgroup root>/<watched>/<top>/hadoop-yarn
	twin           string // absolute: <cgroup root>/<other>/<top>/twin, same kernfs id
	id             uint64
}

// maxCollisionSteps bounds the mkdir/rmdir pairs spent to make ids meet
// (~60µs each here; a first run on a long-lived host spends ~30000 per
// hierarchy, later runs only what the watched hierarchy grew since).
const maxCollisionSteps = 2_000_000

// collide makes, for the other hierarchy, a cgroup whose kernfs id equals
// that of a YARN root made in the first of watched for which the two
// hierarchies' ids can meet. It moves the hierarchy that is behind forward
// by creating and removing cgroups (ids are never reused before they wrap)
// until the two ids are equal. Everything is made below top and removed
// when the test ends.
func collide(t *testing.T, top string, other string, watched ...string) collision {
	t.Helper()
	otherTop := kerneltest.MakeCgroup(t, other, top)
	sOther, err := idStep(otherTop)
	if err != nil {
		t.Fatalf("measure the id step of %s: %v", other, err)
	}
	for _, w := range watched {
		wTop := kerneltest.MakeCgroup(t, w, top)
		sW, err := idStep(wTop)
		if err != nil {
			t.Fatalf("measure the id step of %s: %v", w, err)
		}
		yarnRoot := filepath.Join(wTop, "hadoop-yarn")
		a, err := mkdirIno(yarnRoot)
		if err != nil {
			t.Fatalf("create %s: %v", yarnRoot, err)
		}
		probe := filepath.Join(otherTop, "probe")
		b, err := mkdirIno(probe)
		if err != nil {
			t.Fatalf("create %s: %v", probe, err)
		}
		g := gcd(sW, sOther)
		if a%g != b%g {
			t.Logf("ids of %s (%d, step %d) and %s (%d, step %d) never meet; trying the next controller", w, a, sW, other, b, sOther)
			_ = os.Remove(probe)
			_ = os.Remove(yarnRoot)
			continue
		}
		for steps := 0; a != b; steps++ {
			if steps == maxCollisionSteps {
				_ = os.Remove(probe)
				_ = os.Remove(yarnRoot)
				t.Fatalf("ids of %s and %s did not meet within %d steps (at %d and %d)", w, other, steps, a, b)
			}
			if a < b {
				err = os.Remove(yarnRoot)
				if err == nil {
					a, err = mkdirIno(yarnRoot)
				}
			} else {
				err = os.Remove(probe)
				if err == nil {
					b, err = mkdirIno(probe)
				}
			}
			if err != nil {
				_ = os.Remove(probe)
				_ = os.Remove(yarnRoot)
				t.Fatalf("advance the ids of %s and %s: %v", w, other, err)
			}
		}
		twin := probe
		t.Cleanup(func() {
			kerneltest.RemoveCgroupTree(t, twin)
			kerneltest.RemoveCgroupTree(t, yarnRoot)
		})
		t.Logf("%s root %s and %s cgroup %s share kernfs id %d", w, yarnRoot, other, twin, a)
		return collision{watched: w, other: other, yarnRoot: yarnRoot, twin: twin, id: a}
	}
	kerneltest.Skipf(t, "real-kernel test: the kernfs ids of %s cannot meet those of %v on this host", other, watched)
	return collision{}
}

// TestRealKernelEBPFFilterKeysOnHierarchy: for each of pids, freezer and
// devices, a cgroup whose kernfs id equals the watched YARN root's (made so
// on purpose) gets a container_* child: the watcher gets no event, user
// space is not even woken, and the store stays empty. A container made in
// the real YARN root right after is reported, credited to the watched
// controller.
func TestRealKernelEBPFFilterKeysOnHierarchy(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "cpu", "cpuacct", "pids", "freezer", "devices")
	for _, other := range []string{"pids", "freezer", "devices"} {
		t.Run(other, func(t *testing.T) {
			top := kerneltest.UniqueRoot(t)
			c := collide(t, top, other, "cpu", "cpuacct")
			watched, ok := cgroups.ParseController(c.watched)
			require.True(t, ok)
			h := cgroups.Hierarchy{CgroupRoot: kerneltest.CgroupRoot, ProcRoot: "/proc", Dir: top + "/hadoop-yarn"}
			st := store.New()
			w := New(Options{Store: st, Force: SourceEBPF, ResyncInterval: time.Hour,
				Hierarchy: func() (cgroups.Hierarchy, bool) { return h, true }})
			stop := make(chan struct{})
			defer close(stop)
			w.Run(stop)
			require.Eventually(t, func() bool { return w.Active() != "" }, 5*time.Second, 10*time.Millisecond)
			if w.Active() != SourceEBPF {
				kerneltest.Skipf(t, "real-kernel test: eBPF is not available here (active: %s)", w.Active())
			}
			require.Equal(t, c.id, inode(t, h.RootDir(watched)))

			name := "container_e17_1700000000000_0042_01_000002"
			twinChild := filepath.Join(c.twin, name)
			require.NoError(t, os.Mkdir(twinChild, 0o755))
			t.Cleanup(func() { kerneltest.RemoveCgroupTree(t, twinChild) })
			time.Sleep(300 * time.Millisecond)
			assert.Zero(t, w.Wakeups(), "a mkdir in %s woke user space", other)
			assert.Zero(t, st.Len(), "a mkdir in %s reached the store", other)

			own := filepath.Join(c.yarnRoot, name)
			require.NoError(t, os.Mkdir(own, 0o755))
			t.Cleanup(func() { kerneltest.RemoveCgroupTree(t, own) })
			require.Eventually(t, func() bool { _, ok := st.Get(name); return ok }, 2*time.Second, 5*time.Millisecond)
			got, _ := st.Get(name)
			assert.Equal(t, cgroups.Ref{Dir: h.ContainerRelDir(name), Owned: true}, got.Cgroups[watched])
			assert.Equal(t, int64(1), w.Wakeups())
		})
	}
}
