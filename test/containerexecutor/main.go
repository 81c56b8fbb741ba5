// Command container-executor stands in, in the real-YARN tests, for
// Hadoop's native setuid container-executor, which is not in the Hadoop
// jars. The NodeManager's LinuxContainerExecutor runs it as it runs the
// native binary (yarn.nodemanager.linux-container-executor.path), and it
// does what the native one does for a non-secure cluster, except that it
// does not change user (it runs as the NodeManager's user; the tests run
// as root).
//
// Operations and arguments, from Hadoop 3.5.0's PrivilegedOperation
// (RunAsUserCommand codes), LinuxContainerExecutor (startLocalizer,
// deleteAsUser, listAsUser) and DefaultLinuxContainerRuntime
// (launchContainer, signalContainer), checked against a NodeManager run
// with a logging shell stand-in:
//
//	--checksetup                                   exit 0
//	--<other feature flag>                         exit 32 (feature disabled)
//	<runAs> <user> 0 <appId> <locId> <tokens> <localDirs> <logDirs> <cmd…>
//	    INITIALIZE_CONTAINER: makes usercache/<user>/appcache/<appId> in
//	    each local dir and <logDir>/<appId>, copies the tokens into
//	    <appDir> under their own name (and <locId>.tokens), and execs the
//	    localizer command there.
//	<runAs> <user> 1 <appId> <containerId> <workDir> <script> <tokens>
//	    --http|--https [keystore truststore] <pidFile> <localDirs> <logDirs>
//	    cgroups=<task file>%…|none
//	    LAUNCH_CONTAINER: makes the container's app, work and log dirs,
//	    copies the script to <workDir>/launch_container.sh and the tokens
//	    to <workDir>/container_tokens; starts a session leader that writes
//	    its pid to the pid file (atomically) and to every task file, then
//	    execs bash on the script in the work dir with stdio on /dev/null;
//	    waits for it, writes <pidFile>.exitcode and exits with the
//	    container's code (128+signal when killed).
//	<runAs> <user> 2 <pid> <signal>
//	    SIGNAL_CONTAINER: signals the process group <pid> (the session the
//	    launch made), else the process; exit 9 (INVALID_CONTAINER_PID) when
//	    neither exists.
//	<runAs> <user> 3 <dir> [<baseDir>…]
//	    DELETE_AS_USER: removes <dir>, or <baseDir>/<dir> for each base dir.
//	<runAs> <user> 5 <dir>
//	    LIST_AS_USER: prints the names in <dir>, one a line.
//	<runAs> <user> 6 …
//	    SYNC_YARN_SYSFS: nothing (no YARN sysfs here).
//
// Any other code exits 3 (INVALID_COMMAND_PROVIDED), a wrong argument count
// 1 (INVALID_ARGUMENT_NUMBER), as the native binary does. Every call is
// appended, with the reason of every failure, to $KOORDLET_YARN_CE_LOG, else
// to container-executor.log beside the binary.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Exit codes of the native container-executor (container-executor.h).
const (
	exitInvalidArgumentNumber = 1
	exitInvalidCommand        = 3
	exitInvalidContainerPid   = 9
	exitFeatureDisabled       = 32
	exitSetupFailed           = 27
)

// childMode makes the binary the container's session leader (see launch).
const childMode = "--koordlet-yarn-container-child"

func init() {
	// The child writes its own task id into the cgroup task files and
	// execs from the same thread: keep the main goroutine on the main
	// thread (tid == pid).
	if len(os.Args) > 1 && os.Args[1] == childMode {
		runtime.LockOSThread()
	}
}

func main() {
	logCall(os.Args[1:])
	os.Exit(run(os.Args[1:]))
}

// logPath is the call log: $KOORDLET_YARN_CE_LOG, else container-executor.log
// beside the binary (the NodeManager runs it with an empty environment).
func logPath() string {
	if p := os.Getenv("KOORDLET_YARN_CE_LOG"); p != "" {
		return p
	}
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	return self + ".log"
}

func logLine(format string, a ...any) {
	p := logPath()
	if p == "" {
		return
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %d %s\n", time.Now().Format(time.RFC3339Nano), os.Getpid(), fmt.Sprintf(format, a...))
}

func logCall(args []string) {
	if len(args) > 0 && args[0] == childMode {
		return
	}
	logLine("call: %s", strings.Join(args, " "))
}

func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: container-executor --checksetup | <run as user> <user> <command> <args…>")
		return exitInvalidArgumentNumber
	}
	switch {
	case args[0] == "--checksetup":
		return 0
	case args[0] == childMode:
		return child(args[1:])
	case strings.HasPrefix(args[0], "--"):
		fmt.Fprintf(os.Stderr, "Feature disabled: %s\n", args[0])
		return exitFeatureDisabled
	}
	if len(args) < 3 {
		return exitInvalidArgumentNumber
	}
	user, code, rest := args[1], args[2], args[3:]
	switch code {
	case "0":
		return initialize(user, rest)
	case "1":
		return launch(user, rest)
	case "2":
		return signal(rest)
	case "3":
		return deleteAsUser(rest)
	case "5":
		return listAsUser(rest)
	case "6":
		return 0
	}
	fmt.Fprintf(os.Stderr, "Invalid command %s not supported.\n", code)
	return exitInvalidCommand
}

func fail(code int, format string, a ...any) int {
	fmt.Fprintf(os.Stderr, format+"\n", a...)
	logLine("exit %d: %s", code, fmt.Sprintf(format, a...))
	return code
}

// appDirs makes usercache/<user>/appcache/<app> in each local dir and the
// application's log dir in each log dir; it returns the first app dir.
func appDirs(user, app string, localDirs, logDirs []string) (string, error) {
	first := ""
	for _, l := range localDirs {
		d := filepath.Join(l, "usercache", user, "appcache", app)
		if err := os.MkdirAll(d, 0o750); err != nil {
			return "", err
		}
		if first == "" {
			first = d
		}
	}
	for _, l := range logDirs {
		if err := os.MkdirAll(filepath.Join(l, app), 0o750); err != nil {
			return "", err
		}
	}
	if first == "" {
		return "", errors.New("no local dir")
	}
	return first, nil
}

func split(dirs string) []string {
	var out []string
	for _, d := range strings.Split(dirs, "%") {
		if d = strings.TrimSpace(d); d != "" {
			out = append(out, d)
		}
	}
	return out
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func initialize(user string, a []string) int {
	if len(a) < 6 {
		return fail(exitInvalidArgumentNumber, "initialize: want appId locId tokens localDirs logDirs command…, got %q", a)
	}
	app, loc, tokens := a[0], a[1], a[2]
	dir, err := appDirs(user, app, split(a[3]), split(a[4]))
	if err != nil {
		return fail(exitSetupFailed, "initialize %s: %v", app, err)
	}
	// The native binary copies the tokens under their own file name (the
	// NM's nmPrivate/<container id><hex>.tokens: ContainerLocalizer reads
	// that name, Hadoop 3.3 and 3.5 alike); <locId>.tokens too, the name
	// older localizers read.
	for _, name := range []string{filepath.Base(tokens), loc + ".tokens"} {
		if err := copyFile(tokens, filepath.Join(dir, name), 0o600); err != nil {
			return fail(exitSetupFailed, "initialize %s: copy tokens: %v", app, err)
		}
	}
	if err := os.Chdir(dir); err != nil {
		return fail(exitSetupFailed, "initialize %s: %v", app, err)
	}
	cmd := a[5:]
	path, err := exec.LookPath(cmd[0])
	if err != nil {
		return fail(exitSetupFailed, "initialize %s: %v", app, err)
	}
	err = syscall.Exec(path, cmd, os.Environ())
	return fail(exitSetupFailed, "initialize %s: exec %s: %v", app, path, err)
}

func launch(user string, a []string) int {
	// appId cid workDir script tokens --http|--https [keystore truststore]
	// pidFile localDirs logDirs cgroups
	if len(a) < 10 {
		return fail(exitInvalidArgumentNumber, "launch: too few arguments: %q", a)
	}
	app, cid, work, script, tokens := a[0], a[1], a[2], a[3], a[4]
	rest := a[5:]
	switch rest[0] {
	case "--http":
		rest = rest[1:]
	case "--https":
		if len(rest) < 3 {
			return fail(exitInvalidArgumentNumber, "launch: --https without keystore and truststore")
		}
		rest = rest[3:]
	default:
		return fail(exitInvalidArgumentNumber, "launch: want --http or --https, got %q", rest[0])
	}
	if len(rest) < 4 {
		return fail(exitInvalidArgumentNumber, "launch: too few arguments after the scheme: %q", rest)
	}
	pidFile, localDirs, logDirs, cg := rest[0], split(rest[1]), split(rest[2]), rest[3]
	if _, err := appDirs(user, app, localDirs, logDirs); err != nil {
		return fail(exitSetupFailed, "launch %s: %v", cid, err)
	}
	for _, l := range logDirs {
		if err := os.MkdirAll(filepath.Join(l, app, cid), 0o750); err != nil {
			return fail(exitSetupFailed, "launch %s: %v", cid, err)
		}
	}
	if err := os.MkdirAll(filepath.Join(work, "tmp"), 0o750); err != nil {
		return fail(exitSetupFailed, "launch %s: %v", cid, err)
	}
	launchScript := filepath.Join(work, "launch_container.sh")
	if err := copyFile(script, launchScript, 0o700); err != nil {
		return fail(exitSetupFailed, "launch %s: copy script: %v", cid, err)
	}
	if err := copyFile(tokens, filepath.Join(work, "container_tokens"), 0o600); err != nil {
		return fail(exitSetupFailed, "launch %s: copy tokens: %v", cid, err)
	}
	taskFiles := "none"
	if f, ok := strings.CutPrefix(cg, "cgroups="); ok && f != "" {
		taskFiles = f
	}
	self, err := os.Executable()
	if err != nil {
		return fail(exitSetupFailed, "launch %s: %v", cid, err)
	}
	c := exec.Command(self, childMode, pidFile, taskFiles, work, launchScript)
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	c.Env = os.Environ()
	if err := c.Start(); err != nil {
		return fail(exitSetupFailed, "launch %s: %v", cid, err)
	}
	code := 0
	if err := c.Wait(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return fail(exitSetupFailed, "launch %s: wait: %v", cid, err)
		}
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	}
	if err := writeAtomic(pidFile+".exitcode", strconv.Itoa(code)); err != nil {
		fmt.Fprintf(os.Stderr, "launch %s: write exit code: %v\n", cid, err)
	}
	return code
}

// child runs as the container's session leader: pid file, cgroups, then
// the launch script.
func child(a []string) int {
	if len(a) != 4 {
		return fail(exitInvalidArgumentNumber, "child: %q", a)
	}
	pidFile, taskFiles, work, script := a[0], a[1], a[2], a[3]
	pid := strconv.Itoa(os.Getpid())
	if err := writeAtomic(pidFile, pid); err != nil {
		return fail(exitSetupFailed, "write pid file %s: %v", pidFile, err)
	}
	if taskFiles != "none" {
		for _, f := range split(taskFiles) {
			// The native binary writes its pid into each task file the
			// NodeManager names (tasks on v1, cgroup.procs on v2); this
			// thread is the process's only one at the exec below.
			if err := os.WriteFile(f, []byte(pid), 0); err != nil {
				return fail(exitSetupFailed, "add %s to %s: %v", pid, f, err)
			}
		}
	}
	if err := os.Chdir(work); err != nil {
		return fail(exitSetupFailed, "chdir %s: %v", work, err)
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return fail(exitSetupFailed, "%v", err)
	}
	for fd := 0; fd < 3; fd++ {
		if err := syscall.Dup2(int(null.Fd()), fd); err != nil {
			return fail(exitSetupFailed, "stdio: %v", err)
		}
	}
	// As the native binary: /bin/bash by its path (the NodeManager runs
	// the executor with an empty environment: no PATH).
	err = syscall.Exec("/bin/bash", []string{"/bin/bash", script}, os.Environ())
	return fail(exitSetupFailed, "exec /bin/bash %s: %v", script, err)
}

func writeAtomic(path, content string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func signal(a []string) int {
	if len(a) != 2 {
		return fail(exitInvalidArgumentNumber, "signal: want pid signal, got %q", a)
	}
	pid, err1 := strconv.Atoi(a[0])
	sig, err2 := strconv.Atoi(a[1])
	if err1 != nil || err2 != nil || pid <= 1 {
		return fail(exitInvalidArgumentNumber, "signal: bad pid or signal %q", a)
	}
	if syscall.Kill(-pid, 0) != nil {
		if syscall.Kill(pid, 0) != nil {
			return exitInvalidContainerPid
		}
		if err := syscall.Kill(pid, syscall.Signal(sig)); err != nil {
			return exitInvalidContainerPid
		}
		return 0
	}
	if err := syscall.Kill(-pid, syscall.Signal(sig)); err != nil {
		return exitInvalidContainerPid
	}
	return 0
}

func deleteAsUser(a []string) int {
	if len(a) == 0 {
		return fail(exitInvalidArgumentNumber, "delete: no path")
	}
	dir, bases := a[0], a[1:]
	targets := []string{dir}
	if len(bases) > 0 {
		targets = nil
		for _, b := range bases {
			targets = append(targets, filepath.Join(b, dir))
		}
	}
	code := 0
	for _, t := range targets {
		if !filepath.IsAbs(t) || filepath.Clean(t) == "/" {
			fmt.Fprintf(os.Stderr, "delete: refusing %q\n", t)
			code = exitSetupFailed
			continue
		}
		if err := os.RemoveAll(t); err != nil {
			fmt.Fprintf(os.Stderr, "delete %s: %v\n", t, err)
			code = exitSetupFailed
		}
	}
	return code
}

func listAsUser(a []string) int {
	if len(a) != 1 {
		return fail(exitInvalidArgumentNumber, "list: want one dir, got %q", a)
	}
	es, err := os.ReadDir(a[0])
	if err != nil {
		return fail(exitSetupFailed, "list %s: %v", a[0], err)
	}
	for _, e := range es {
		fmt.Println(e.Name())
	}
	return 0
}
