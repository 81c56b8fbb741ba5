package lswait

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Schedstat is one thread's /proc/<pid>/task/<tid>/schedstat: time on a
// CPU, time waiting on a run queue, and time slices run.
type Schedstat struct {
	Run, Wait time.Duration
	Slices    uint64
}

// ParseSchedstat parses a schedstat line ("<run ns> <wait ns> <slices>").
func ParseSchedstat(b []byte) (Schedstat, error) {
	f := strings.Fields(string(b))
	if len(f) != 3 {
		return Schedstat{}, fmt.Errorf("schedstat %q: want 3 fields", strings.TrimSpace(string(b)))
	}
	var v [3]uint64
	for i, s := range f {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return Schedstat{}, fmt.Errorf("schedstat %q: %w", strings.TrimSpace(string(b)), err)
		}
		v[i] = n
	}
	return Schedstat{Run: time.Duration(v[0]), Wait: time.Duration(v[1]), Slices: v[2]}, nil
}

// schedstatSource is the fallback without eBPF: the run-queue wait of every
// thread of a pod's cgroups, from procfs. It gives the mean wait per time
// slice (no distribution).
type schedstatSource struct {
	procRoot string
	// last holds each thread's previous reading.
	last map[int]Schedstat
}

// tidsFile is the file listing a cgroup's threads.
func tidsFile(v2 bool) string {
	if v2 {
		return "cgroup.threads"
	}
	return "tasks"
}

// readTids lists the threads in the cgroup dirs.
func readTids(dirs []string, v2 bool) []int {
	var out []int
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, tidsFile(v2)))
		if err != nil {
			continue // the cgroup went away
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if tid, err := strconv.Atoi(strings.TrimSpace(sc.Text())); err == nil && tid > 0 {
				out = append(out, tid)
			}
		}
	}
	return out
}

// delta returns the waits of the threads since their previous readings
// (a thread seen first counts from the next interval) and keeps the new
// readings in next.
func (s *schedstatSource) delta(tids []int, next map[int]Schedstat) (wait time.Duration, slices uint64) {
	for _, tid := range tids {
		b, err := os.ReadFile(filepath.Join(s.procRoot, strconv.Itoa(tid), "schedstat"))
		if err != nil {
			continue // exited
		}
		st, err := ParseSchedstat(b)
		if err != nil {
			continue
		}
		next[tid] = st
		if prev, ok := s.last[tid]; ok && st.Wait >= prev.Wait && st.Slices >= prev.Slices {
			wait += st.Wait - prev.Wait
			slices += st.Slices - prev.Slices
		}
	}
	return wait, slices
}

// PSITotal parses the "some" line's total (µs stalled) of a cpu.pressure file.
func PSITotal(b []byte) (time.Duration, error) {
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "some" {
			continue
		}
		for _, kv := range f[1:] {
			if v, ok := strings.CutPrefix(kv, "total="); ok {
				n, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return 0, fmt.Errorf("cpu.pressure total %q: %w", v, err)
				}
				return time.Duration(n) * time.Microsecond, nil
			}
		}
	}
	return 0, fmt.Errorf("cpu.pressure: no \"some ... total=\" line in %q", strings.TrimSpace(string(b)))
}
