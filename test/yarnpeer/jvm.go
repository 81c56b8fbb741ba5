package yarnpeer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// jvm is one of the peer's JVMs: a line protocol on its stdin and stdout
// ("ok …" or "err …" a line), its log on stderr into a file.
type jvm struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	exited chan struct{}
	log    string
	cds    classSharing
	mu     sync.Mutex
}

// startJVM starts java with args in dir, its stderr into log, and moves it
// into each cgroup.procs file of procs at once.
// cds is its class-data sharing (kept at its exit).
// Idle runs it SCHED_IDLE.
func startJVM(dir, log string, env, args, procs []string, cds classSharing, idle bool) (*jvm, error) {
	cmd := javaCommand(args, idle)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logf, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd.Stderr = logf
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start java: %w", err)
	}
	j := &jvm{cmd: cmd, in: in, out: bufio.NewReader(outp), exited: make(chan struct{}), log: log, cds: cds}
	go func() { _ = cmd.Wait(); close(j.exited) }()
	for _, f := range procs {
		if err := os.WriteFile(f, []byte(strconv.Itoa(j.pid())), 0o644); err != nil {
			j.kill()
			return nil, fmt.Errorf("move the JVM into %s: %w", f, err)
		}
	}
	return j, nil
}

func (j *jvm) pid() int { return j.cmd.Process.Pid }

// ready waits for the JVM's "ready k=v …" line and returns its fields.
func (j *jvm) ready(ctx context.Context, what string) (map[string]string, error) {
	line, err := j.readLine(ctx)
	if err != nil {
		j.kill()
		return nil, fmt.Errorf("the real-YARN %s did not start: %w (log: %s)", what, err, j.logTail(20))
	}
	if !strings.HasPrefix(line, "ready ") {
		j.kill()
		return nil, fmt.Errorf("the real-YARN %s did not start: %s (log: %s)", what, line, j.logTail(20))
	}
	return fields(strings.TrimPrefix(line, "ready ")), nil
}

func (j *jvm) readLine(ctx context.Context) (string, error) {
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := j.out.ReadString('\n')
		ch <- res{strings.TrimSpace(s), err}
	}()
	select {
	case r := <-ch:
		return r.s, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	case <-j.exited:
		select {
		case r := <-ch:
			return r.s, r.err
		default:
		}
		return "", errors.New("the JVM exited")
	}
}

// do sends one command and returns the answer after "ok ".
func (j *jvm) do(ctx context.Context, command string) (string, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, err := io.WriteString(j.in, command+"\n"); err != nil {
		return "", fmt.Errorf("peer %q: %w", command, err)
	}
	line, err := j.readLine(ctx)
	if err != nil {
		return "", fmt.Errorf("peer %q: %w", command, err)
	}
	if s, ok := strings.CutPrefix(line, "ok"); ok {
		return strings.TrimSpace(s), nil
	}
	return "", fmt.Errorf("peer %q: %s", command, line)
}

// logTail is the last n lines of the JVM's log.
func (j *jvm) logTail(n int) string {
	b, _ := os.ReadFile(j.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (j *jvm) kill() {
	_ = syscall.Kill(-j.pid(), syscall.SIGKILL)
	<-j.exited
}

// stop asks the JVM to stop; after 60 s its process group is killed.
func (j *jvm) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, _ = j.do(ctx, "stop")
	select {
	case <-j.exited:
	case <-ctx.Done():
		j.kill()
	}
}

// logName is the log file of a JVM of the peer in dir.
func logName(dir, name string) string { return filepath.Join(dir, name+".log") }
