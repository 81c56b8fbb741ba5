package cgroupwatch

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

func inode(t testing.TB, dir string) uint64 {
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(dir, &st))
	return st.Ino
}

// TestRealKernelEBPF loads the programs on this kernel, creates container
// cgroups below a watched YARN root with real processes, and checks the
// events; a cgroup created elsewhere (a pod) yields none.
func TestRealKernelEBPF(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "cpu")
	top := kerneltest.UniqueRoot(t)
	yarnRoot := kerneltest.MakeCgroup(t, "cpu", top+"/hadoop-yarn")
	pods := kerneltest.MakeCgroup(t, "cpu", top+"/pods")
	w, err := OpenEBPF(inode(t, yarnRoot))
	if err != nil {
		kerneltest.Skipf(t, "real-kernel test: cannot load the BPF programs here: %v", err)
	}
	defer w.Close()
	events := make(chan Event, 64)
	go func() {
		for {
			ev, err := w.Read()
			if err != nil {
				return
			}
			events <- ev
		}
	}()

	require.NoError(t, os.Mkdir(filepath.Join(pods, "pod-1234"), 0o755)) // not watched
	name := "container_e17_1700000000000_0042_01_000002"
	dir := filepath.Join(yarnRoot, name)
	require.NoError(t, os.Mkdir(dir, 0o755))
	p := kerneltest.Start(t, "exec sleep 3600", dir)
	require.NoError(t, p.Release())

	next := func() Event {
		select {
		case ev := <-events:
			return ev
		case <-time.After(5 * time.Second):
			t.Fatal("no event")
		}
		return Event{}
	}
	ev := next()
	assert.Equal(t, Mkdir, ev.Type)
	assert.Equal(t, name, ev.Name)
	assert.Equal(t, inode(t, dir), ev.CgroupID)
	ev = next()
	assert.Equal(t, Attach, ev.Type)
	assert.Equal(t, p.Pid(), ev.Pid)
	assert.Equal(t, name, ev.Name)

	kerneltest.RemoveCgroupTree(t, dir)
	for ev = next(); ev.Type != Rmdir; ev = next() {
	}
	assert.Equal(t, name, ev.Name)
	select {
	case ev := <-events:
		t.Fatalf("unexpected event %+v", ev)
	case <-time.After(100 * time.Millisecond):
	}
}
