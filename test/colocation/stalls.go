package colocation

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
)

// Stalls are what the LS service and the node waited for over a phase,
// beside CPU time: the counters that tell CPU contention (the service's
// run-queue wait, the node's CPU pressure) from memory (direct reclaim,
// refaults, memory pressure) and I/O (major faults, I/O pressure). Each is
// a delta over the phase; a counter the kernel lacks stays 0.
type Stalls struct {
	// LSRunQueueWait is the LS service's threads' time runnable but not
	// running (/proc/<pid>/task/*/schedstat, its second field).
	LSRunQueueWait time.Duration
	// LSMajorFaults are the LS pod's major page faults (memory.stat).
	LSMajorFaults int64
	// AllocStalls are the node's direct reclaims (/proc/vmstat's
	// allocstall_*), DirectScan the pages they scanned (pgscan_direct),
	// Refaults the file pages read back soon after reclaim
	// (workingset_refault_file, or workingset_refault before 5.9).
	AllocStalls, DirectScan, Refaults int64
	// PSI are the node's /proc/pressure/{cpu,memory,io} "some" totals:
	// the time at least one task waited on that resource.
	CPUPressure, MemoryPressure, IOPressure time.Duration
	// Steal is the node's CPU time taken by the hypervisor (/proc/stat's
	// cpu line, summed over the CPUs): on a VM, a spike that hits every
	// configuration at once and no controller on the node can remove.
	Steal time.Duration
}

// Sub is s minus an earlier reading (a counter that went down, as the LS
// threads' wait when a thread exits, gives 0).
func (s Stalls) Sub(from Stalls) Stalls {
	pos := func(a, b int64) int64 { return max(a-b, 0) }
	dur := func(a, b time.Duration) time.Duration { return max(a-b, 0) }
	return Stalls{
		LSRunQueueWait: dur(s.LSRunQueueWait, from.LSRunQueueWait),
		LSMajorFaults:  pos(s.LSMajorFaults, from.LSMajorFaults),
		AllocStalls:    pos(s.AllocStalls, from.AllocStalls),
		DirectScan:     pos(s.DirectScan, from.DirectScan),
		Refaults:       pos(s.Refaults, from.Refaults),
		CPUPressure:    dur(s.CPUPressure, from.CPUPressure),
		MemoryPressure: dur(s.MemoryPressure, from.MemoryPressure),
		IOPressure:     dur(s.IOPressure, from.IOPressure),
		Steal:          dur(s.Steal, from.Steal),
	}
}

// Per is the phase line's form: the durations per second of a phase of d.
func (s Stalls) Per(d time.Duration) string {
	per := func(x time.Duration) float64 {
		if d <= 0 {
			return 0
		}
		return float64(x.Milliseconds()) / d.Seconds()
	}
	return fmt.Sprintf("LS run-queue wait %.0f ms/s, LS major faults %d; node: direct reclaims %d (%d pages scanned), refaults %d, pressure cpu/memory/io %.0f/%.0f/%.0f ms/s, steal %.0f ms/s",
		per(s.LSRunQueueWait), s.LSMajorFaults, s.AllocStalls, s.DirectScan, s.Refaults,
		per(s.CPUPressure), per(s.MemoryPressure), per(s.IOPressure), per(s.Steal))
}

// readStalls reads the counters now: the LS service's process pid, the LS
// pod's memory cgroup lsRel on fs.
func readStalls(fs cgroupFS, pid int, lsRel string) (Stalls, error) {
	var s Stalls
	if pid > 0 {
		s.LSRunQueueWait = runQueueWait(pid)
	}
	if n, err := cgroups.NewUsageReader(fs.root, fs.unified).NoKeep().MajorFaults(lsRel); err == nil {
		s.LSMajorFaults = n
	} else if !cgroups.IsGone(err) {
		return s, fmt.Errorf("the LS pod's major faults: %w", err)
	}
	b, err := os.ReadFile("/proc/vmstat")
	if err != nil {
		return s, err
	}
	s.AllocStalls, s.DirectScan, s.Refaults = parseVMStat(b)
	if fs, err := procfs.NewDefaultFS(); err == nil {
		for _, p := range []struct {
			resource string
			dst      *time.Duration
		}{{"cpu", &s.CPUPressure}, {"memory", &s.MemoryPressure}, {"io", &s.IOPressure}} {
			if psi, err := fs.PSIStatsForResource(p.resource); err == nil && psi.Some != nil {
				*p.dst = time.Duration(psi.Some.Total) * time.Microsecond
			}
		}
		if st, err := fs.Stat(); err == nil {
			s.Steal = time.Duration(st.CPUTotal.Steal * float64(time.Second))
		}
	}
	return s, nil
}

// parseVMStat sums /proc/vmstat's direct reclaim counters: allocstall_*
// (one per zone; allocstall on old kernels), pgscan_direct (pgscan_direct_*
// per zone on old kernels) and the file refaults.
func parseVMStat(b []byte) (allocStalls, directScan, refaults int64) {
	var refaultAll, refaultFile int64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
		if err != nil {
			continue
		}
		switch {
		case name == "allocstall" || strings.HasPrefix(name, "allocstall_"):
			allocStalls += v
		case name == "pgscan_direct" || strings.HasPrefix(name, "pgscan_direct_") && name != "pgscan_direct_throttle":
			directScan += v
		case name == "workingset_refault_file":
			refaultFile = v
		case name == "workingset_refault":
			refaultAll = v
		}
	}
	if refaultFile > 0 {
		return allocStalls, directScan, refaultFile
	}
	return allocStalls, directScan, refaultAll
}

// runQueueWait sums the run-queue wait of every thread of process pid
// (0 once it is gone).
func runQueueWait(pid int) time.Duration {
	threads, err := procfs.AllThreads(pid)
	if err != nil {
		return 0
	}
	var ns uint64
	for _, t := range threads {
		if st, err := t.Schedstat(); err == nil {
			ns += st.WaitingNanoseconds
		}
	}
	return time.Duration(ns)
}
