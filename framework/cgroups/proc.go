package cgroups

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/prometheus/procfs"
)

// ClockTicks is the unit of the times in /proc/<pid>/stat (USER_HZ): the
// kernel exports them in 1/100 s on every architecture Kubernetes runs on,
// whatever its internal HZ.
const ClockTicks = 100

// BootTime reads the boot time (btime, whole seconds since the epoch) from
// procRoot/stat (prometheus/procfs).
func BootTime(procRoot string) (time.Time, error) {
	fs, err := procfs.NewFS(procRoot)
	if err != nil {
		return time.Time{}, err
	}
	st, err := fs.Stat()
	if err != nil {
		return time.Time{}, err
	}
	if st.BootTime == 0 || st.BootTime > math.MaxInt64 {
		return time.Time{}, fmt.Errorf("invalid btime %d in %s/stat", st.BootTime, procRoot)
	}
	return time.Unix(int64(st.BootTime), 0), nil
}

// TaskStat reads procRoot/<id>/stat of a pid or a tid (prometheus/procfs).
// A pid names a process only while it lives: callers that act on the
// process pin it (pidfd) first and compare its start time afterwards.
func TaskStat(procRoot string, id int) (procfs.ProcStat, error) {
	fs, err := procfs.NewFS(procRoot)
	if err != nil {
		return procfs.ProcStat{}, err
	}
	p, err := fs.Proc(id)
	if err != nil {
		return procfs.ProcStat{}, err
	}
	return p.Stat()
}

// parseStartTicks returns field 22 of /proc/<pid>/stat (starttime: clock
// ticks after boot). The command (field 2) may hold spaces and parentheses,
// so the fields are counted after its last ')'. The scan parses the stat
// of every container process at every resync into one reused buffer;
// procfs's ProcStat (which allocates the whole record) is for the rest.
func parseStartTicks(stat []byte) (int64, bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	fields := bytes.Fields(stat[i+1:])
	const startTime = 22 - 3 // fields after the command start at field 3 (state)
	if len(fields) <= startTime {
		return 0, false
	}
	v, err := strconv.ParseInt(string(fields[startTime]), 10, 64)
	if err != nil || v < 0 {
		return 0, false
	}
	return v, true
}

// ProcessStartTime returns when process pid started, from
// procRoot/<pid>/stat and the boot time.
func ProcessStartTime(procRoot string, pid int, boot time.Time) (time.Time, error) {
	st, err := TaskStat(procRoot, pid)
	if err != nil {
		return time.Time{}, err
	}
	if st.Starttime > math.MaxInt64/uint64(time.Second/ClockTicks) {
		return time.Time{}, fmt.Errorf("unparsable %s/%d/stat: start time %d", procRoot, pid, st.Starttime)
	}
	return boot.Add(time.Duration(st.Starttime) * (time.Second / ClockTicks)), nil
}

// startTimeOf returns the start time in the content of /proc/<pid>/stat.
func startTimeOf(stat []byte, boot time.Time) (time.Time, bool) {
	ticks, ok := parseStartTicks(stat)
	if !ok {
		return time.Time{}, false
	}
	return boot.Add(time.Duration(ticks) * (time.Second / ClockTicks)), true
}
