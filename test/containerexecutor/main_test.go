package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// build compiles the stand-in once per test.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "container-executor")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(out))
	return bin
}

func code(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestOperations runs each operation as the NodeManager's
// LinuxContainerExecutor calls it.
func TestOperations(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	run := func(args ...string) (string, int) {
		out, err := exec.Command(bin, args...).Output()
		return string(out), code(err)
	}

	_, c := run("--checksetup")
	assert.Equal(t, 0, c)
	_, c = run("--mount-cgroups", "x")
	assert.Equal(t, exitFeatureDisabled, c)
	_, c = run("nobody", "nobody", "42")
	assert.Equal(t, exitInvalidCommand, c)
	_, c = run("nobody")
	assert.Equal(t, exitInvalidArgumentNumber, c)

	// LAUNCH: the script runs in the work dir, its pid is in the pid file
	// and in every task file, its code comes back, with the exit code file.
	local, logs, work := filepath.Join(dir, "local"), filepath.Join(dir, "logs"), filepath.Join(dir, "work")
	require.NoError(t, os.MkdirAll(work, 0o755))
	script := filepath.Join(dir, "script.sh")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/bash\necho $$ > pid.seen\npwd > cwd.seen\nexit 7\n"), 0o755))
	tokens := filepath.Join(dir, "tokens")
	require.NoError(t, os.WriteFile(tokens, []byte("t"), 0o600))
	tasks1, tasks2 := filepath.Join(dir, "cpu.tasks"), filepath.Join(dir, "memory.tasks")
	pidFile := filepath.Join(dir, "c.pid")
	_, c = run("yarn", "spark", "1", "application_1_0001", "container_1_0001_01_000002", work, script, tokens, "--http",
		pidFile, local, logs, "cgroups="+tasks1+"%"+tasks2)
	assert.Equal(t, 7, c)
	pid := read(t, pidFile)
	assert.Equal(t, pid, strings.TrimSpace(read(t, filepath.Join(work, "pid.seen"))), "the pid file names the script's shell")
	assert.Equal(t, pid, read(t, tasks1))
	assert.Equal(t, pid, read(t, tasks2))
	assert.Equal(t, work, strings.TrimSpace(read(t, filepath.Join(work, "cwd.seen"))))
	assert.Equal(t, "7", read(t, pidFile+".exitcode"))
	assert.FileExists(t, filepath.Join(work, "launch_container.sh"))
	assert.FileExists(t, filepath.Join(work, "container_tokens"))
	assert.DirExists(t, filepath.Join(local, "usercache", "spark", "appcache", "application_1_0001"))
	assert.DirExists(t, filepath.Join(logs, "application_1_0001", "container_1_0001_01_000002"))

	// SIGNAL: the session the launch made; a gone pid is 9. A killed
	// container exits 128+signal.
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/bash\nsleep 60 &\nwait\n"), 0o755))
	pidFile2 := filepath.Join(dir, "c2.pid")
	l := exec.Command(bin, "yarn", "spark", "1", "application_1_0001", "container_1_0001_01_000003", work, script, tokens,
		"--http", pidFile2, local, logs, "cgroups=none")
	require.NoError(t, l.Start())
	require.Eventually(t, func() bool { _, err := os.Stat(pidFile2); return err == nil }, 10*time.Second, 10*time.Millisecond)
	_, c = run("yarn", "spark", "2", read(t, pidFile2), strconv.Itoa(int(syscall.SIGTERM)))
	assert.Equal(t, 0, c)
	assert.Equal(t, 128+int(syscall.SIGTERM), code(l.Wait()))
	assert.Equal(t, strconv.Itoa(128+int(syscall.SIGTERM)), read(t, pidFile2+".exitcode"))
	// Gone once every member of its process group is (the killed sleep
	// may linger a moment as a zombie that init has not reaped).
	assert.Eventually(t, func() bool {
		_, c = run("yarn", "spark", "2", read(t, pidFile2), "0")
		return c == exitInvalidContainerPid
	}, 10*time.Second, 20*time.Millisecond, "a pid that is gone: 9")

	// LIST and DELETE.
	out, c := run("yarn", "spark", "5", work)
	assert.Equal(t, 0, c)
	assert.Contains(t, strings.Fields(out), "launch_container.sh")
	_, c = run("yarn", "spark", "3", "application_1_0001", filepath.Join(local, "usercache", "spark", "appcache"))
	assert.Equal(t, 0, c)
	assert.NoDirExists(t, filepath.Join(local, "usercache", "spark", "appcache", "application_1_0001"))
	_, c = run("yarn", "spark", "3", "relative/path")
	assert.Equal(t, exitSetupFailed, c, "a relative path is refused")
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

// TestInitialize: INITIALIZE_CONTAINER makes the application's dirs,
// copies the NM's tokens into the application dir under their own name
// (what Hadoop 3's ContainerLocalizer opens) and execs the localizer there.
func TestInitialize(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	local, logs := filepath.Join(dir, "local"), filepath.Join(dir, "logs")
	tokens := filepath.Join(dir, "nmPrivate", "container_1_0001_01_0000011a2b3c.tokens")
	require.NoError(t, os.MkdirAll(filepath.Dir(tokens), 0o755))
	require.NoError(t, os.WriteFile(tokens, []byte("t"), 0o600))
	out, err := exec.Command(bin, "yarn", "spark", "0", "application_1_0001", "container_1_0001_01_000001", tokens,
		local, logs, "sh", "-c", "pwd; ls").Output()
	require.NoError(t, err)
	app := filepath.Join(local, "usercache", "spark", "appcache", "application_1_0001")
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.NotEmpty(t, lines)
	assert.Equal(t, app, lines[0], "the localizer runs in the application dir")
	assert.Contains(t, lines[1:], "container_1_0001_01_0000011a2b3c.tokens", "the tokens under their own name")
	assert.Contains(t, lines[1:], "container_1_0001_01_000001.tokens")
	assert.DirExists(t, filepath.Join(logs, "application_1_0001"))
}
