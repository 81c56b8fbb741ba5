package yarnadopt

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// TestRealKernelExecWatch: an exec in a watched cgroup is reported with its
// pid; an exec elsewhere is not.
func TestRealKernelExecWatch(t *testing.T) {
	dir, key := execTestCgroup(t)
	w, err := OpenExecWatch()
	if err != nil {
		kerneltest.Skipf(t, "real-kernel test: cannot load the exec watch here: %v", err)
	}
	defer w.Close()
	require.NoError(t, w.Watch(key))
	events := make(chan ExecEvent, 64)
	go func() {
		for {
			ev, err := w.Read()
			if err != nil {
				close(events)
				return
			}
			events <- ev
		}
	}()

	// Outside: not reported.
	require.NoError(t, exec.Command("/bin/true").Run())
	// Inside: a child moved in, then it execs.
	cmd := exec.Command("sh", "-c", "read x; exec /bin/sleep 0.2")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0))
	_, _ = stdin.Write([]byte("go\n"))
	select {
	case ev := <-events:
		require.Equal(t, cmd.Process.Pid, ev.Pid, "the exec in the watched cgroup")
		require.Equal(t, key, ev.Cgroup)
	case <-time.After(5 * time.Second):
		t.Fatal("no exec event from the watched cgroup")
	}
	_ = cmd.Wait()
	n, err := w.Lost()
	require.NoError(t, err)
	require.Zero(t, n)
}

// execTestCgroup is the NM pod's process cgroup of a test node (newNode)
// in the hierarchy the exec watch keys, with its key.
func execTestCgroup(t *testing.T) (string, CgroupKey) {
	t.Helper()
	n := newNode(t)
	dir := n.h.AbsDir(scanCtrl, n.pod+"/nm")
	hid, err := cgroups.HierarchyID(n.h, scanCtrl)
	require.NoError(t, err)
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(dir, &st))
	return dir, CgroupKey{HierarchyID: hid, ID: st.Ino}
}
