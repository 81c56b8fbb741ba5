package colocation

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// helperProc is a re-executed copy of this binary in a helper role
// (RunHelperIfRequested), started in given cgroups.
type helperProc struct {
	cmd    *exec.Cmd
	stdout *bufio.Reader
	done   chan error
}

// startHelper starts this binary with env added, moves it into every
// cgroup directory of dirs (absolute), makes its threads SCHED_FIFO when
// realtime (threads it makes later inherit the policy), and only then lets
// it start.
func startHelper(env []string, dirs []string, realtime bool) (*helperProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start helper: %w", err)
	}
	p := &helperProc{cmd: cmd, stdout: bufio.NewReaderSize(stdout, 1<<16), done: make(chan error, 1)}
	for _, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			p.kill()
			return nil, fmt.Errorf("move helper %d into %s: %w", cmd.Process.Pid, d, err)
		}
	}
	if realtime {
		if err := setFIFO(cmd.Process.Pid); err != nil {
			p.kill()
			return nil, err
		}
	}
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		p.kill()
		return nil, fmt.Errorf("start helper: %w", err)
	}
	return p, nil
}

// fifoPriority is the load generator's real-time priority (any: it is the
// only real-time task the harness makes).
const fifoPriority = 10

// setFIFO makes every thread of pid SCHED_FIFO.
func setFIFO(pid int) error {
	tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetAttr(tid, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: fifoPriority}, 0); err != nil {
			return fmt.Errorf("make thread %d of %d SCHED_FIFO: %w", tid, pid, err)
		}
	}
	return nil
}

// line reads the helper's next line of output.
func (p *helperProc) line() (string, error) {
	s, err := p.stdout.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("helper output: %w", err)
	}
	return strings.TrimSpace(s), nil
}

// wait waits for the helper to exit.
func (p *helperProc) wait() error { return p.cmd.Wait() }

// kill ends the helper and reaps it.
func (p *helperProc) kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	_ = p.cmd.Wait()
}

// readCPUTimes reads the "cpu" line of /proc/stat.
func readCPUTimes() (CPUTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPUTimes{}, err
	}
	return parseCPUTimes(string(b))
}

// parseCPUTimes parses the aggregate "cpu" line of /proc/stat: user nice
// system idle iowait irq softirq steal (guest time is within user).
func parseCPUTimes(stat string) (CPUTimes, error) {
	for _, line := range strings.Split(stat, "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || f[0] != "cpu" {
			continue
		}
		var v [8]uint64
		for i := range v {
			n, err := strconv.ParseUint(f[i+1], 10, 64)
			if err != nil {
				return CPUTimes{}, fmt.Errorf("/proc/stat: %w", err)
			}
			v[i] = n
		}
		busy := v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
		return CPUTimes{Busy: busy, Total: busy + v[3] + v[4]}, nil
	}
	return CPUTimes{}, fmt.Errorf("/proc/stat: no cpu line")
}

// processCPUSeconds is the CPU time (user + system, all threads) process
// pid has spent; 0 when pid is 0 or gone (koordlet between restarts).
func processCPUSeconds(pid int) (float64, error) {
	if pid <= 0 {
		return 0, nil
	}
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, nil
	}
	st, err := p.Stat()
	if err != nil {
		if os.IsNotExist(err) {
			return 0, nil
		}
		return 0, fmt.Errorf("process %d: %w", pid, err)
	}
	return st.CPUTime(), nil
}
