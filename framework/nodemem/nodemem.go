// Package nodemem reads the node's memory usage as koordlet defines it
// (MemTotal − MemAvailable, /proc/meminfo), corrected for the pages that
// are free but parked on the kernel's per-CPU page lists.
//
// Why the correction: since Linux 6.7 the per-CPU free lists grow on their
// own when a CPU frees many pages (pcp->high auto-tuning) and shrink back
// over seconds. Pages on those lists are free (the allocator drains them
// under pressure) but are not in MemFree, so MemAvailable lags a large
// free: on this project's CI kernel (6.18, 2 CPUs, 24 GiB) a killed
// 600 MiB process raised MemAvailable by 0–100 MiB at once and by less
// than 150 MiB 4 s later, while /proc/zoneinfo counted about 1 GiB on the
// lists. An evictor that reads MemAvailable right after a kill sees the
// victim's memory as still used and evicts another container.
package nodemem

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/prometheus/procfs"
)

// Usage is one reading of the node's memory.
type Usage struct {
	// Total is MemTotal, in bytes.
	Total int64
	// Available is MemAvailable, in bytes.
	Available int64
	// PerCPUFree is the bytes on the per-CPU free page lists (the
	// pagesets' counts in /proc/zoneinfo); 0 where the file has none.
	PerCPUFree int64
}

// KoordletUsed is koordlet's node memory usage: MemTotal − MemAvailable.
func (u Usage) KoordletUsed() int64 { return u.Total - u.Available }

// Used is koordlet's usage less the free pages on the per-CPU lists: the
// memory the node's processes and kernel hold now.
func (u Usage) Used() int64 { return max(u.Total-u.Available-u.PerCPUFree, 0) }

// Read reads /proc/meminfo (through prometheus/procfs) and /proc/zoneinfo
// under procRoot. A missing or unreadable zoneinfo leaves PerCPUFree 0
// (koordlet's usage, uncorrected).
func Read(procRoot string) (Usage, error) {
	fs, err := procfs.NewFS(procRoot)
	if err != nil {
		return Usage{}, fmt.Errorf("read node memory: %w", err)
	}
	mi, err := fs.Meminfo()
	if err != nil {
		return Usage{}, fmt.Errorf("read node memory: %w", err)
	}
	if mi.MemTotalBytes == nil || mi.MemAvailableBytes == nil {
		return Usage{}, fmt.Errorf("read node memory: no MemTotal or MemAvailable in %s", filepath.Join(procRoot, "meminfo"))
	}
	u := Usage{Total: int64(*mi.MemTotalBytes), Available: int64(*mi.MemAvailableBytes)}
	if z, err := os.ReadFile(filepath.Join(procRoot, "zoneinfo")); err == nil {
		u.PerCPUFree = PerCPUFreePages(z) * int64(os.Getpagesize())
	}
	return u, nil
}

// PerCPUFreePages sums the per-CPU page list counts ("count:" under each
// zone's pagesets) of a /proc/zoneinfo. It is not prometheus/procfs's
// Zoneinfo because that parses the zone counters only, no pageset (none up
// to procfs v0.23.0): the pagesets' counts are all this package reads.
func PerCPUFreePages(zoneinfo []byte) int64 {
	var n int64
	sc := bufio.NewScanner(bytes.NewReader(zoneinfo))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) == 2 && string(f[0]) == "count:" {
			if v, err := strconv.ParseInt(string(f[1]), 10, 64); err == nil && v > 0 {
				n += v
			}
		}
	}
	return n
}
