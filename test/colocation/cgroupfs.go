package colocation

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
)

// cgroupFS reads and writes the harness's cgroup files on the box's
// layout: cgroup v1 (a hierarchy per controller: cpu, cpuacct) or v2 (one
// unified tree, where CPU time is cpu.stat's usage_usec and the CFS quota
// cpu.max).
type cgroupFS struct {
	// root is the box's cgroup root; unified its layout is v2.
	root    string
	unified bool
}

// dir is cgroup rel's directory in controller ctrl (v2: the one tree).
func (f cgroupFS) dir(ctrl, rel string) string {
	if f.unified {
		return filepath.Join(f.root, rel)
	}
	return filepath.Join(f.root, ctrl, rel)
}

// usageSeconds is the CPU time cgroup rel has used, in seconds (the
// framework's reader: cpuacct.usage on v1, cpu.stat usage_usec on v2); 0
// when it does not exist (nothing ran there).
func (f cgroupFS) usageSeconds(rel string) (float64, error) {
	ns, err := cgroups.NewUsageReader(f.root, f.unified).NoKeep().CPUUsage(rel)
	if cgroups.IsGone(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return float64(ns) / 1e9, nil
}

// memoryCounts are cgroup rel's page faults so far (hierarchical) and, on
// v2, how often it went over memory.high (-1 on v1, which has none); zero
// when it does not exist.
func (f cgroupFS) memoryCounts(rel string) (faults, high int64, err error) {
	r := cgroups.NewUsageReader(f.root, f.unified).NoKeep()
	if faults, err = r.PageFaults(rel); cgroups.IsGone(err) {
		return 0, 0, nil
	} else if err != nil {
		return 0, 0, err
	}
	if !f.unified {
		return faults, -1, nil
	}
	high, err = r.MemoryHighEvents(rel)
	if cgroups.IsGone(err) {
		return faults, 0, nil
	}
	return faults, high, err
}

// quota is the CFS quota and period of cgroup rel in µs (quota -1:
// unlimited).
func (f cgroupFS) quota(rel string) (quota, period int64, err error) {
	dir := f.dir("cpu", rel)
	if f.unified {
		b, err := os.ReadFile(filepath.Join(dir, "cpu.max"))
		if err != nil {
			return 0, 0, err
		}
		return parseCPUMax(string(b))
	}
	if quota, err = readInt(filepath.Join(dir, "cpu.cfs_quota_us")); err != nil {
		return 0, 0, err
	}
	period, err = readInt(filepath.Join(dir, "cpu.cfs_period_us"))
	return quota, period, err
}

// quotaText is cgroup rel's quota as its file says it ("-" unreadable).
func (f cgroupFS) quotaText(rel string) string {
	file := "cpu.cfs_quota_us"
	if f.unified {
		file = "cpu.max"
	}
	return f.read(rel, file)
}

// read is cgroup rel's cpu controller file, trimmed ("-" unreadable).
func (f cgroupFS) read(rel, file string) string {
	b, err := os.ReadFile(filepath.Join(f.dir("cpu", rel), file))
	if err != nil {
		return "-"
	}
	return strings.TrimSpace(string(b))
}

// unlimited are the cpu controller's files and values that undo BE
// suppress and sched-idle on cgroup rel.
func (f cgroupFS) unlimited() map[string]string {
	if f.unified {
		return map[string]string{"cpu.max": "max", "cpu.idle": "0"}
	}
	return map[string]string{"cpu.cfs_quota_us": "-1", "cpu.idle": "0"}
}

// parseCPUMax parses cgroup v2's cpu.max ("max 100000" or "50000
// 100000"): quota -1 when unlimited.
func parseCPUMax(s string) (quota, period int64, err error) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("cpu.max %q: want \"<quota|max> <period>\"", strings.TrimSpace(s))
	}
	if period, err = strconv.ParseInt(f[1], 10, 64); err != nil || period <= 0 {
		return 0, 0, fmt.Errorf("cpu.max %q: bad period", strings.TrimSpace(s))
	}
	if f[0] == "max" {
		return -1, period, nil
	}
	if quota, err = strconv.ParseInt(f[0], 10, 64); err != nil || quota <= 0 {
		return 0, 0, fmt.Errorf("cpu.max %q: bad quota", strings.TrimSpace(s))
	}
	return quota, period, nil
}
