package kerneltest

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// BoxLockPath is the machine-wide lock the node in a box holds while it
// runs (test/nodebox takes the same file).
const BoxLockPath = "/run/koordlet-yarn-nodebox.lock"

// HoldBoxLock takes the node-in-a-box lock for the rest of t, waiting up to
// wait: a real-kernel test that moves node memory by hundreds of MiB (and
// would cross a running box's memory evict threshold, or have its own
// crossed by the box's workloads) runs while no box does.
func HoldBoxLock(t testing.TB, wait time.Duration) {
	t.Helper()
	f, err := os.OpenFile(BoxLockPath, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatalf("open %s: %v", BoxLockPath, err)
	}
	deadline := time.Now().Add(wait)
	for syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		if time.Now().After(deadline) {
			f.Close()
			t.Fatalf("a node in a box still runs after %v (%s is locked)", wait, BoxLockPath)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Cleanup(func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	})
}
