package nodebox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// FakeNode is a node's cgroup and sysfs roots laid out in files, as a real
// node of a Layout has them, for tests that inspect a node without running
// anything on it (e.g. the preflight): no processes, no API server.
type FakeNode struct {
	// CgroupRoot is the cgroup mount root (koordlet's --cgroup-root-dir):
	// the v1 controller directories, or the unified hierarchy.
	CgroupRoot string
	// SysFSRoot is koordlet's --sys-fs-root-dir (resctrl below it).
	SysFSRoot string
	// Layout is the layout the node was made with.
	Layout Layout
}

// FakeNodeOptions say what a fake node has beyond its layout.
type FakeNodeOptions struct {
	// Containers are YARN container ids with a cgroup in every controller
	// YARN manages in the layout.
	Containers []string
	// NoYARNRoot leaves the YARN hierarchy out (the NodeManager has not
	// started, or uses another hierarchy).
	NoYARNRoot bool
	// KernelFiles adds the files of the kernel features this machine lacks
	// (Group Identity, Anolis Memory QoS) to kubepods and the YARN
	// hierarchy, as fake-root boxes have them.
	KernelFiles bool
	// ResctrlBE makes koordlet's resctrl BE group under the sysfs root.
	ResctrlBE bool
}

// LayOutFakeNode makes a fake node of layout l under dir: the kubepods and
// QoS cgroups named as the layout's kubelet driver names them, the YARN
// hierarchy in the controllers YARN manages (cgroup v1; on the unified
// layout one directory whose cgroup.subtree_control enables them), the
// co-mounted cpu,cpuacct directory with its symlinks, and what opts ask for.
func LayOutFakeNode(dir string, l Layout, opts FakeNodeOptions) (FakeNode, error) {
	n := FakeNode{CgroupRoot: filepath.Join(dir, "cgroup"), SysFSRoot: filepath.Join(dir, "sysfs"), Layout: l}
	ctrls := []string{""}
	if !l.Unified {
		ctrls = controllers
		if l.CoMounted {
			if err := os.MkdirAll(filepath.Join(n.CgroupRoot, "cpu,cpuacct"), 0o755); err != nil {
				return n, err
			}
			for _, link := range []string{"cpu", "cpuacct"} {
				if err := os.Symlink("cpu,cpuacct", filepath.Join(n.CgroupRoot, link)); err != nil {
					return n, err
				}
			}
		}
	}
	mkdir := func(ctrl, rel string, files map[string]string) error {
		d := filepath.Join(n.CgroupRoot, ctrl, rel)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		for name, v := range files {
			if err := os.WriteFile(filepath.Join(d, name), []byte(v), 0o644); err != nil {
				return fmt.Errorf("fake node: %w", err)
			}
		}
		return nil
	}
	if l.Unified {
		if err := mkdir("", "", map[string]string{"cgroup.controllers": "cpuset cpu io memory pids\n", "cgroup.procs": ""}); err != nil {
			return n, err
		}
	}
	for _, ctrl := range ctrls {
		files := map[string]string{"cgroup.procs": ""}
		if opts.KernelFiles {
			for k, v := range fakeKernelFiles[ctrl] {
				files[k] = v
			}
		}
		for _, rel := range []string{l.kubepods(), l.qosDir(corev1.PodQOSBestEffort), l.qosDir(corev1.PodQOSBurstable)} {
			if err := mkdir(ctrl, rel, files); err != nil {
				return n, err
			}
		}
	}
	if !opts.NoYARNRoot {
		yarnCtrls := l.yarnControllers()
		if l.CoMounted {
			yarnCtrls = l.mirrorControllers()
		}
		for _, ctrl := range yarnCtrls {
			files := map[string]string{"cgroup.procs": ""}
			if opts.KernelFiles {
				for k, v := range fakeKernelFiles[ctrl] {
					files[k] = v
				}
			}
			if l.Unified {
				enabled := "cpu io memory"
				if len(l.YARNControllers) > 0 {
					enabled = strings.Join(l.YARNControllers, " ")
				}
				files["cgroup.subtree_control"] = enabled + "\n"
			}
			if err := mkdir(ctrl, l.Hierarchy(), files); err != nil {
				return n, err
			}
			for _, id := range opts.Containers {
				if err := mkdir(ctrl, l.Hierarchy()+"/"+id, map[string]string{"cgroup.procs": ""}); err != nil {
					return n, err
				}
			}
		}
	}
	if err := os.MkdirAll(n.SysFSRoot, 0o755); err != nil {
		return n, err
	}
	if opts.ResctrlBE {
		for _, f := range []string{"resctrl/schemata", "resctrl/BE/tasks", "resctrl/BE/schemata"} {
			p := filepath.Join(n.SysFSRoot, f)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return n, err
			}
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}
