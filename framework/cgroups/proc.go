package cgroups

import (
	"fmt"
	"math"
	"time"

	"github.com/prometheus/procfs"
)

// ClockTicks is the unit of the times in /proc/<pid>/stat (USER_HZ): the
// kernel exports them in 1/100 s on every architecture Kubernetes runs on,
// whatever its internal HZ. prometheus/procfs assumes the same (its
// userHZ, unexported: ProcStat gives raw ticks), hence this constant.
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
