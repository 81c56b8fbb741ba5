package kerneltest

import "fmt"

// ProcStat is a /proc/<pid>/stat line as Linux 6.x writes it (52 fields)
// for a sleeping task with the given command, parent and start time (clock
// ticks after boot), for fake proc roots: parsers of the whole record
// (prometheus/procfs) need every field.
func ProcStat(pid int, comm string, ppid int, startTicks int64) string {
	return fmt.Sprintf("%d (%s) S %d %d %d 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 %d 10000000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
		pid, comm, ppid, pid, pid, startTicks)
}
