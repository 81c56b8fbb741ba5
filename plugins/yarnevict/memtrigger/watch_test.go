package memtrigger

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func setCurrent(t *testing.T, dir string, v int64) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "memory.current"), []byte(strconv.FormatInt(v, 10)+"\n"), 0o644))
}

// TestWatch: on a fake cgroup, the watch fires once when memory.current
// reaches the armed threshold, is spent until armed again, never fires
// disarmed or when the level is already reached, and follows a cgroup
// removed and made again.
func TestWatch(t *testing.T) {
	dir := t.TempDir()
	setCurrent(t, dir, 5000)
	var fired atomic.Int32
	w, err := NewWatch(dir, 5*time.Millisecond, func() { fired.Add(1) })
	require.NoError(t, err)
	defer w.Close()
	settle := func() { time.Sleep(50 * time.Millisecond) }

	require.NoError(t, w.Arm(1000, 1300))
	assert.Equal(t, int64(5300), w.Armed(), "the room below the level on top of the usage file")
	setCurrent(t, dir, 5299)
	settle()
	assert.Zero(t, fired.Load(), "below the threshold")
	setCurrent(t, dir, 5300)
	require.Eventually(t, func() bool { return fired.Load() == 1 }, time.Second, 5*time.Millisecond, "fires at the threshold")
	settle()
	assert.Equal(t, int32(1), fired.Load(), "spent: once")
	assert.Zero(t, w.Armed())

	require.NoError(t, w.Arm(1000, 1400))
	w.Disarm()
	setCurrent(t, dir, 9000)
	settle()
	assert.Equal(t, int32(1), fired.Load(), "disarmed: no fire")

	require.NoError(t, w.Arm(1400, 1300))
	assert.Zero(t, w.Armed(), "a level already reached disarms")

	// The cgroup removed and made again: the new one's file is read.
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.Mkdir(dir, 0o755))
	setCurrent(t, dir, 100)
	require.NoError(t, w.Arm(1000, 1100))
	setCurrent(t, dir, 200)
	require.Eventually(t, func() bool { return fired.Load() == 2 }, time.Second, 5*time.Millisecond, "fires on the cgroup made again")
}

func TestNewWatchNeedsMemoryCurrent(t *testing.T) {
	_, err := NewWatch(t.TempDir(), time.Second, func() {})
	assert.ErrorContains(t, err, "memory.current")
}

// TestTriggerV2UsesWatch: on cgroup v2 the trigger watches memory.current of
// the cgroups it is given (relative to the unified root), and leaves out
// those without one.
func TestTriggerV2UsesWatch(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "kubepods"), 0o755))
	setCurrent(t, filepath.Join(root, "kubepods"), 1<<30)
	tr := New(Options{CgroupRoot: root, ProcRoot: filepath.Join(root, "no-proc"), V2: true, MemoryDirs: []string{"kubepods", "elsewhere/hadoop-yarn"}})
	defer tr.Close()
	require.Len(t, tr.Kinds(), 1)
	assert.Equal(t, KindWatch+" on kubepods", tr.Kinds()[0])
	require.NoError(t, tr.Arm(2<<30, 2<<30+4096))
	setCurrent(t, filepath.Join(root, "kubepods"), 1<<30+4096)
	select {
	case <-tr.C():
	case <-time.After(2 * time.Second):
		t.Fatal("the trigger did not wake at the crossing")
	}
}

// BenchmarkWatchRead: one read of a real memory cgroup's page counter, what
// a Watch does every DefaultWatchInterval while armed: memory.current of a
// cgroup the benchmark makes on a cgroup v2 host (the root has none),
// memory.usage_in_bytes (the same kernfs read of a page counter) on a v1
// host.
func BenchmarkWatchRead(b *testing.B) {
	var read func() (int64, error)
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		dir := filepath.Join("/sys/fs/cgroup", fmt.Sprintf("koordlet-yarn-bench-%d", os.Getpid()))
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Skipf("make a cgroup to read: %v", err)
		}
		defer os.Remove(dir)
		read = (&Watch{dir: dir}).Usage
	} else {
		file := "/sys/fs/cgroup/memory/memory.usage_in_bytes"
		read = func() (int64, error) {
			v, err := os.ReadFile(file)
			if err != nil {
				return 0, err
			}
			return strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64)
		}
	}
	if _, err := read(); err != nil {
		b.Skipf("no memory cgroup file to read: %v", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := read(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestTriggerOpensARootMadeLater: the YARN root does not exist when the
// trigger is made (the node booted before its NodeManager); the first Arm
// after the NM made it watches it too, and a crossing there wakes. The code
// before opened the dirs once and dropped the missing one for good.
func TestTriggerOpensARootMadeLater(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "kubepods"), 0o755))
	setCurrent(t, filepath.Join(root, "kubepods"), 1<<30)
	tr := New(Options{CgroupRoot: root, ProcRoot: filepath.Join(root, "no-proc"), V2: true, MemoryDirs: []string{"kubepods", "hadoop-yarn"}})
	defer tr.Close()
	require.Equal(t, []string{KindWatch + " on kubepods"}, tr.Kinds())
	require.NoError(t, tr.Arm(2<<30, 2<<30+4096))
	assert.Len(t, tr.Kinds(), 1, "still missing: nothing more")

	yarnRoot := filepath.Join(root, "hadoop-yarn")
	require.NoError(t, os.Mkdir(yarnRoot, 0o755))
	setCurrent(t, yarnRoot, 1<<20)
	require.NoError(t, tr.Arm(2<<30, 2<<30+4096))
	assert.Equal(t, []string{KindWatch + " on kubepods", KindWatch + " on hadoop-yarn"}, tr.Kinds())
	setCurrent(t, yarnRoot, 1<<20+4096)
	select {
	case <-tr.C():
	case <-time.After(2 * time.Second):
		t.Fatal("the trigger did not wake at a crossing in the YARN root made later")
	}
}

// TestTriggerReopensARootRemovedWhileOpened (issue 55 item 16): the YARN
// root is there when the trigger stats it but gone by the time its usage
// file is opened (the NodeManager removing it to make it again; the fake
// shows the same as a directory without memory.current). That was taken
// for a cgroup that takes no usage source and dropped for good, so the
// root made again was never watched. It is missing, like a root not made
// yet: opened at the first Arm after it is there again.
func TestTriggerReopensARootRemovedWhileOpened(t *testing.T) {
	root := t.TempDir()
	yarnRoot := filepath.Join(root, "hadoop-yarn")
	require.NoError(t, os.Mkdir(yarnRoot, 0o755)) // no memory.current: removed after the stat
	tr := New(Options{CgroupRoot: root, ProcRoot: filepath.Join(root, "no-proc"), V2: true, MemoryDirs: []string{"hadoop-yarn"}})
	defer tr.Close()
	require.Empty(t, tr.Kinds())
	require.NoError(t, tr.Arm(2<<30, 2<<30+4096))
	require.Empty(t, tr.Kinds(), "still gone")

	setCurrent(t, yarnRoot, 1<<20) // made again
	require.NoError(t, tr.Arm(2<<30, 2<<30+4096))
	assert.Equal(t, []string{KindWatch + " on hadoop-yarn"}, tr.Kinds(), "the root made again is watched")
}
