package cgroups

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"time"
)

// ClockTicks is the unit of the times in /proc/<pid>/stat (USER_HZ): the
// kernel exports them in 1/100 s on every architecture Kubernetes runs on,
// whatever its internal HZ.
const ClockTicks = 100

// BootTime reads the boot time (btime, whole seconds since the epoch) from
// procRoot/stat.
func BootTime(procRoot string) (time.Time, error) {
	b, err := readInto(filepath.Join(procRoot, "stat"), nil)
	if err != nil {
		return time.Time{}, err
	}
	for rest := b; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			sec, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil || sec <= 0 {
				return time.Time{}, fmt.Errorf("invalid btime %q in %s/stat", v, procRoot)
			}
			return time.Unix(sec, 0), nil
		}
	}
	return time.Time{}, fmt.Errorf("no btime in %s/stat", procRoot)
}

// parseStartTicks returns field 22 of /proc/<pid>/stat (starttime: clock
// ticks after boot). The command (field 2) may hold spaces and parentheses,
// so the fields are counted after its last ')'.
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
	b, err := readInto(filepath.Join(procRoot, strconv.Itoa(pid), "stat"), nil)
	if err != nil {
		return time.Time{}, err
	}
	t, ok := startTimeOf(b, boot)
	if !ok {
		return time.Time{}, fmt.Errorf("unparsable %s/%d/stat", procRoot, pid)
	}
	return t, nil
}

// startTimeOf returns the start time in the content of /proc/<pid>/stat.
func startTimeOf(stat []byte, boot time.Time) (time.Time, bool) {
	ticks, ok := parseStartTicks(stat)
	if !ok {
		return time.Time{}, false
	}
	return boot.Add(time.Duration(ticks) * (time.Second / ClockTicks)), true
}
