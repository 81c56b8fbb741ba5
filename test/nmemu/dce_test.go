package nmemu

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// procStat returns the ppid, pgid and sid of pid from /proc/<pid>/stat.
func procStat(t *testing.T, pid int) (ppid, pgid, sid int) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ppid, _ = strconv.Atoi(f[1])
	pgid, _ = strconv.Atoi(f[2])
	sid, _ = strconv.Atoi(f[3])
	return ppid, pgid, sid
}

// waitExited waits up to 10 s for container id to exit.
func waitExited(t *testing.T, nm *NM, id string) {
	t.Helper()
	select {
	case <-nm.Exited(id):
	case <-time.After(10 * time.Second):
		t.Fatalf("container %s did not exit", id)
	}
}

func environHas(pid int, kv string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	return err == nil && strings.Contains("\x00"+string(b)+"\x00", "\x00"+kv+"\x00")
}

// TestDefaultContainerExecutorChain: a container launched the
// DefaultContainerExecutor's way is Hadoop's chain of real processes — the
// wrapper (the NM's child, with CONTAINER_ID) stays the parent of the
// session, which setsid made a session leader and which exec'd the launch
// script and then the command; the pid file names the session; the NM's
// kill ends both process groups and reports the wrapper's exit code.
func TestDefaultContainerExecutorChain(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skipf("no /proc: %v", err)
	}
	nm := New(Config{NoContainerCgroups: true})
	t.Cleanup(nm.Close)
	id, err := nm.Launch(Spec{AppID: 3, Attempt: 1, Sequence: 2, User: "u", MemoryMB: 128, VCores: 1,
		Script: "sleep 3600 & exec sleep 3601"})
	require.NoError(t, err)
	wrapper := nm.WrapperPid(id)
	require.Positive(t, wrapper)
	nm.mu.Lock()
	dir := nm.byID[id].workDir
	nm.mu.Unlock()

	var session int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(dir, dcePidFile))
		if err != nil {
			return false
		}
		session, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		c, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", session))
		return err == nil && strings.HasPrefix(string(c), "sleep\x003601")
	}, 10*time.Second, 20*time.Millisecond, "the session execs the launch script, which execs the command")

	assert.Equal(t, session, nm.Pid(id), "the container's pid is the pid file's")
	wPPid, wPgid, _ := procStat(t, wrapper)
	assert.Equal(t, os.Getpid(), wPPid, "the NM forks the wrapper")
	assert.Equal(t, wrapper, wPgid)
	cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", wrapper))
	require.NoError(t, err)
	assert.Equal(t, "/bin/bash\x00"+filepath.Join(dir, dceWrapper)+"\x00", string(cmd), "the wrapper stays")
	assert.True(t, environHas(wrapper, "CONTAINER_ID="+id), "the wrapper has the container's environment")

	sPPid, sPgid, sSid := procStat(t, session)
	assert.Equal(t, wrapper, sPPid, "the session is the wrapper's child")
	assert.Equal(t, session, sPgid, "setsid: its own process group")
	assert.Equal(t, session, sSid, "setsid: its own session")
	assert.True(t, environHas(session, "CONTAINER_ID="+id))

	nm.Exit(id)
	waitExited(t, nm, id)
	c, _ := nm.Get(id)
	assert.Equal(t, "EXITED_WITH_FAILURE", c.State)
	assert.Equal(t, 137, c.ExitCode)
	require.Eventually(t, func() bool {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", session))
		return os.IsNotExist(err)
	}, 5*time.Second, 20*time.Millisecond, "the session's group is killed")

	nm.Close()
	_, err = os.Stat(dir)
	assert.True(t, os.IsNotExist(err), "Close removes the work directories")
}

// TestLinuxContainerExecutorChain: the LCE without a resources handler:
// the executor's two processes run with an empty environment (the
// NodeManager gives the native binary none), the launch script exports
// the container's, CONTAINER_ID among it, and execs the command.
func TestLinuxContainerExecutorChain(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skipf("no /proc: %v", err)
	}
	nm := New(Config{NoContainerCgroups: true, LCELaunch: true})
	t.Cleanup(nm.Close)
	id, err := nm.Launch(Spec{AppID: 3, Attempt: 1, Sequence: 2, User: "u", MemoryMB: 128, VCores: 1,
		Script: "exec sleep 3602"})
	require.NoError(t, err)
	wrapper := nm.WrapperPid(id)
	var session int
	require.Eventually(t, func() bool {
		session = nm.Pid(id)
		c, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", session))
		return session > 0 && err == nil && strings.HasPrefix(string(c), "sleep\x003602")
	}, 10*time.Second, 20*time.Millisecond, "the session execs the launch script, which execs the command")
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", wrapper))
	require.NoError(t, err)
	assert.Empty(t, env, "the executor's launch has no environment")
	sPPid, _, sSid := procStat(t, session)
	assert.Equal(t, wrapper, sPPid, "the launch stays the parent")
	assert.Equal(t, session, sSid, "setsid")
	assert.True(t, environHas(session, "CONTAINER_ID="+id), "the command has the container's environment from the launch script")
	assert.True(t, environHas(session, "PATH="+os.Getenv("PATH")), "and the rest of it")
	nm.Exit(id)
	waitExited(t, nm, id)
}
