package yarnpeer

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// client is an engine's client JVM (MapReduce's job client, Spark's
// spark-submit) in a process group of its own, killed with the test
// process, its standard output and error into a log file.
type client struct {
	cmd     *exec.Cmd
	log     string
	done    chan struct{}
	err     error
	Started time.Time
	Ended   time.Time
}

// startClient runs java with args in dir, env added to this process's
// environment, its output into log; what names the client in errors.
// Idle runs it SCHED_IDLE (Options.OffNode).
func startClient(what, dir, log string, env, args []string, idle bool) (*client, error) {
	f, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	cmd := javaCommand(args, idle)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	c := &client{cmd: cmd, log: log, done: make(chan struct{}), Started: time.Now()}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start the %s: %w", what, err)
	}
	go func() {
		c.err = cmd.Wait()
		c.Ended = time.Now()
		f.Close()
		close(c.done)
	}()
	return c, nil
}

// Done is closed when the client has exited.
func (c *client) Done() <-chan struct{} { return c.done }

// Kill ends the client (not its application).
func (c *client) Kill() {
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	<-c.done
}

// Output is what the client printed so far.
func (c *client) Output() string {
	b, _ := os.ReadFile(c.log)
	return string(b)
}

// javaCommand is java with args, under SCHED_IDLE (chrt --idle 0, which
// execs it: the pid is java's) when idle.
func javaCommand(args []string, idle bool) *exec.Cmd {
	if idle {
		return exec.Command("chrt", append([]string{"--idle", "0", "java"}, args...)...)
	}
	return exec.Command("java", args...)
}
