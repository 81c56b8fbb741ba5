package nmemu

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// The DefaultContainerExecutor's launch chain, as Hadoop writes it
// (DefaultContainerExecutor.launchContainer and its
// UnixLocalWrapperScriptBuilder, 3.3 and 3.5 alike) into the container's
// work directory:
//
//	default_container_executor.sh          the NM forks it (bash, with the
//	                                        container's environment, in the
//	                                        NM's cgroup); it stays the parent
//	                                        and writes the exit code
//	  default_container_executor_session.sh  a child bash: writes its pid to
//	                                        the pid file, then
//	                                        "exec setsid /bin/bash launch_container.sh"
//	    launch_container.sh                 exports the environment and
//	                                        execs the engine's command
//
// The NM ends the container by signalling the process group of the pid in
// the pid file (the session's, a leader after setsid), not the wrapper's.
const (
	dceWrapper = "default_container_executor.sh"
	dceSession = "default_container_executor_session.sh"
	dceLaunch  = "launch_container.sh"
	dcePidFile = "container.pid"
)

// dceWorkDir returns a new work directory for container id, under the
// emulator's own temporary directory (made at the first launch, removed by
// Close).
func (nm *NM) dceWorkDir(id string) (string, error) {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	if nm.workDir == "" {
		dir, err := os.MkdirTemp("", "nmemu-")
		if err != nil {
			return "", fmt.Errorf("nmemu: work directory: %w", err)
		}
		nm.workDir = dir
	}
	dir := filepath.Join(nm.workDir, id)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("nmemu: container work directory: %w", err)
	}
	return dir, nil
}

// dceLaunchScripts writes the three scripts for a container whose command
// is script (run by sh -c, as the engine's command line is run by bash -c)
// and returns the wrapper's path. gate is put first in the wrapper: the
// emulator's wait until the wrapper is in the NM pod's cgroup (the real
// wrapper is born there). exportAll puts the whole environment in the
// launch script, as the NodeManager writes it (the LCE's chain runs with
// none before it); else only CONTAINER_ID and the APP variables (the DCE's
// wrapper already has the rest).
func dceLaunchScripts(dir, gate, script string, env []string, exportAll bool) (string, error) {
	var launch strings.Builder
	launch.WriteString("#!/bin/bash\n")
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && shellName(k) && (exportAll || k == "CONTAINER_ID" || strings.HasPrefix(k, "APP")) {
			fmt.Fprintf(&launch, "export %s=%s\n", k, shellQuote(v))
		}
	}
	fmt.Fprintf(&launch, "exec /bin/sh -c %s\n", shellQuote(script))
	pid := filepath.Join(dir, dcePidFile)
	session := fmt.Sprintf("#!/bin/bash\n\necho $$ > %[1]s.tmp\n/bin/mv -f %[1]s.tmp %[1]s\nexec setsid /bin/bash %[2]s\n",
		shellQuote(pid), shellQuote(filepath.Join(dir, dceLaunch)))
	exit := filepath.Join(dir, "container.exitcode")
	wrapper := fmt.Sprintf("#!/bin/bash\n%s\n/bin/bash %s\nrc=$?\necho $rc > %[3]s.tmp\n/bin/mv -f %[3]s.tmp %[3]s\nexit $rc\n",
		gate, shellQuote(filepath.Join(dir, dceSession)), shellQuote(exit))
	for name, body := range map[string]string{dceLaunch: launch.String(), dceSession: session, dceWrapper: wrapper} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			return "", fmt.Errorf("nmemu: write %s: %w", name, err)
		}
	}
	return filepath.Join(dir, dceWrapper), nil
}

// dcePid returns the pid in the container's pid file (the launch's
// session), 0 before the session wrote it.
func dcePid(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, dcePidFile))
	if err != nil {
		return 0
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
		return pid
	}
	return 0
}

// dceKill sends SIGKILL to the process group of the pid in the container's
// pid file, as DefaultContainerExecutor.signalContainer does with
// "kill -- -pid"; no pid file yet: nothing launched.
func dceKill(dir string) {
	if pid := dcePid(dir); pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}

// shellName reports whether k can be exported by a shell.
func shellName(k string) bool {
	for i, r := range k {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return k != ""
}
