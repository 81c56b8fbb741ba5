package cgroups

import (
	"math"
	"time"
)

// ProcessTicks is one process's CPU time: utime + stime of all its threads,
// live and exited, in ClockTicks, and its start (ClockTicks after boot)
// that tells a reused pid apart.
type ProcessTicks struct {
	Start, Ticks uint64
}

// ReadProcessTicks reads the CPU time of each process in the cgroup dir
// (absolute) from procRoot/<pid>/stat, at most MaxMemoryProcesses of them.
// It is the CPU of a container whose cpu cgroup has no cpuacct beside it
// (cpu and cpuacct mounted apart, YARN managing cpu only). A process that
// left between the listing and the read is skipped.
func ReadProcessTicks(procRoot, dir string) (map[int]ProcessTicks, error) {
	pids, err := ReadPids(dir)
	if err != nil {
		return nil, err
	}
	if len(pids) > MaxMemoryProcesses {
		pids = pids[:MaxMemoryProcesses]
	}
	out := make(map[int]ProcessTicks, len(pids))
	for _, pid := range pids {
		st, err := TaskStat(procRoot, pid)
		if err != nil || st.UTime > math.MaxUint32*uint(ClockTicks) {
			continue
		}
		out[pid] = ProcessTicks{Start: st.Starttime, Ticks: uint64(st.UTime) + uint64(st.STime)}
	}
	return out, nil
}

// TicksSince returns the CPU time the processes of cur used since prev was
// read at prevAt (boot is the boot time): a process in both (same start)
// adds what it used since; a process started after prevAt adds all of its
// time; one that was there before but not listed, or whose counter went
// back, adds nothing. Processes that ran and exited between the reads are
// not seen: their time is missing (a container's main processes live far
// longer than a collect interval).
func TicksSince(prev, cur map[int]ProcessTicks, prevAt, boot time.Time) uint64 {
	since := uint64(0)
	if d := prevAt.Sub(boot); d > 0 {
		since = uint64(d / (time.Second / ClockTicks))
	}
	var n uint64
	for pid, c := range cur {
		p, ok := prev[pid]
		switch {
		case ok && p.Start == c.Start:
			if c.Ticks >= p.Ticks {
				n += c.Ticks - p.Ticks
			}
		case c.Start >= since:
			n += c.Ticks
		}
	}
	return n
}
