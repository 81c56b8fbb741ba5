package colocation

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// acct is the directory whose CPU time usageSeconds reads for rel.
func (f cgroupFS) acct(rel string) string { return f.dir("cpuacct", rel) }

// usageSeconds is the CPU time the cgroup at dir (acct's) has used, in
// seconds; 0 when it does not exist (nothing ran there).
func (f cgroupFS) usageSeconds(dir string) (float64, error) {
	if !f.unified {
		return cpuacctSeconds(dir)
	}
	return cpuStatSeconds(dir)
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

// cpuStatSeconds reads usage_usec of dir's cpu.stat (cgroup v2) in
// seconds (0 when the cgroup does not exist).
func cpuStatSeconds(dir string) (float64, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
			us, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s/cpu.stat usage_usec %q: %w", dir, v, err)
			}
			return float64(us) / 1e6, nil
		}
	}
	return 0, fmt.Errorf("%s/cpu.stat has no usage_usec", dir)
}
