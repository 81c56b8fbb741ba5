package nodebox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/koordlet-yarn/koordlet-yarn/test/cgtree"
)

// CgroupRoot is the host cgroup v1 mount root the box uses.
const CgroupRoot = "/sys/fs/cgroup"

// controllers are the cgroup v1 controllers the box builds its kubepods
// hierarchy in.
var controllers = []string{"cpu", "cpuacct", "cpuset", "memory", "blkio"}

// makeCgroup creates rel in every controller under root, recording each
// level it creates in created (nil: a fake root, not recorded); in cpuset
// each new level inherits its parent's cpus and mems so that tasks can join
// it.
func makeCgroup(created *cgtree.Tracker, root string, ctrls []string, rel string) error {
	for _, ctrl := range ctrls {
		base := filepath.Join(root, ctrl)
		cur := base
		for _, part := range strings.Split(rel, "/") {
			parent := cur
			cur = filepath.Join(cur, part)
			if _, err := os.Stat(cur); err != nil {
				if ctrl == "" && parent != base {
					// cgroup v2: the parent hands its controllers down, as
					// the kubelet's cgroup manager enables them on the
					// levels it makes (the root's are the init system's).
					if err := EnableSubtreeControllers(parent); err != nil {
						return err
					}
				}
				mkdir := func(d string) error { return os.Mkdir(d, 0o755) }
				if created != nil {
					mkdir = created.Mkdir
				}
				if err := mkdir(cur); err != nil {
					return fmt.Errorf("create cgroup %s: %w", cur, err)
				}
			}
			if ctrl == "cpuset" {
				for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
					if b, err := os.ReadFile(filepath.Join(cur, f)); err == nil && strings.TrimSpace(string(b)) != "" {
						continue
					}
					v, err := os.ReadFile(filepath.Join(parent, f))
					if err != nil {
						return err
					}
					if err := os.WriteFile(filepath.Join(cur, f), v, 0o644); err != nil {
						return fmt.Errorf("init %s/%s: %w", cur, f, err)
					}
				}
			}
		}
	}
	return nil
}

// EnableSubtreeControllers enables, in dir's cgroup.subtree_control, every
// controller dir has (cgroup.controllers), as the kubelet's cgroup manager
// (runc's fs2) does on each level it makes: none on a cgroup2 hierarchy
// without controllers (a hybrid host's).
func EnableSubtreeControllers(dir string) error {
	avail, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("read %s/cgroup.controllers: %w", dir, err)
	}
	var enable []string
	for _, c := range strings.Fields(string(avail)) {
		enable = append(enable, "+"+c)
	}
	if len(enable) == 0 {
		return nil
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(strings.Join(enable, " ")), 0o644); err != nil {
		return fmt.Errorf("enable %s in %s/cgroup.subtree_control: %w", strings.Join(enable, " "), dir, err)
	}
	return nil
}

// checkV2Controllers checks that a cgroup v2 root hands cpu and memory to
// its children, as systemd does on a node (make test-v2's guest enables
// them at boot).
func checkV2Controllers(root string) error {
	b, err := os.ReadFile(filepath.Join(root, "cgroup.subtree_control"))
	if err != nil {
		return fmt.Errorf("the node in a box on cgroup v2: %w", err)
	}
	for _, c := range []string{"cpu", "memory"} {
		if !slices.Contains(strings.Fields(string(b)), c) {
			return fmt.Errorf("the node in a box on cgroup v2 needs %s enabled in %s/cgroup.subtree_control (has %q)", c, root, strings.TrimSpace(string(b)))
		}
	}
	return nil
}

// movePid moves pid into rel in every controller of ctrls under root.
func movePid(root string, ctrls []string, pid int, rel string) error {
	for _, ctrl := range ctrls {
		p := filepath.Join(root, ctrl, rel, "cgroup.procs")
		if err := os.WriteFile(p, []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("move pid %d to %s: %w", pid, p, err)
		}
	}
	return nil
}

// fakeKernelFiles are the cgroup files of the kernel features this machine
// lacks (Group Identity, Anolis memory QoS), with their initial values: the
// fake root has them in kubepods (where koordlet checks support) and the NM
// emulator creates them in every container cgroup.
var fakeKernelFiles = map[string]map[string]string{
	"cpu": {"cpu.bvt_warp_ns": "0", "cpu.idle": "0", "cpu.shares": "1024", "cpu.cfs_quota_us": "-1", "cpu.cfs_period_us": "100000",
		"cpu.stat": "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n"},
	"cpuacct": {"cpuacct.usage": "0"},
	"memory": {"memory.min": "0", "memory.low": "0", "memory.high": "9223372036854771712", "memory.wmark_ratio": "0",
		"memory.wmark_scale_factor": "50", "memory.wmark_min_adj": "0", "memory.priority": "0", "memory.use_priority_oom": "0",
		"memory.oom.group": "0", "memory.limit_in_bytes": "9223372036854771712",
		"memory.stat": "total_cache 0\ntotal_rss 0\ntotal_inactive_file 0\ntotal_active_file 0\ntotal_inactive_anon 0\ntotal_active_anon 0\ntotal_unevictable 0\n"},
}

// makeFakeRoot builds a fake cgroup v1 root at dir with kubepods and the
// files of the kernel features this machine lacks.
func makeFakeRoot(dir string, coMounted bool) error {
	if coMounted {
		if err := os.MkdirAll(filepath.Join(dir, "cpu,cpuacct"), 0o755); err != nil {
			return err
		}
		for _, link := range []string{"cpu", "cpuacct"} {
			if err := os.Symlink("cpu,cpuacct", filepath.Join(dir, link)); err != nil {
				return err
			}
		}
	}
	for _, ctrl := range controllers {
		if err := os.MkdirAll(filepath.Join(dir, ctrl), 0o755); err != nil {
			return err
		}
	}
	for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
		b, err := os.ReadFile(filepath.Join(CgroupRoot, "cpuset", f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "cpuset", f), b, 0o644); err != nil {
			return err
		}
	}
	// The YARN hierarchy too: the NodeManager makes it at start-up, and on
	// a fake root its files must be there before any container's.
	for _, rel := range []string{"kubepods", "kubepods/besteffort", "kubepods/burstable", YARNHierarchy} {
		if err := makeCgroup(nil, dir, controllers, rel); err != nil {
			return err
		}
		for ctrl, files := range fakeKernelFiles {
			for name, v := range files {
				if err := os.WriteFile(filepath.Join(dir, ctrl, rel, name), []byte(v), 0o644); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
