package yarnqos

import (
	"os"
	"path/filepath"
	"strings"

	"k8s.io/klog/v2"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

// RestoreDisabled undoes, once, what the QoS gates that are off wrote when
// they were on (koordlet restarted without them): with YARNMemoryQoS off,
// the prior Memory QoS values recorded on each container (MemoryQoSMarker);
// with YARNCPUQoS off, cpu.idle of the YARN root back to 0 (unless the root
// is a kubelet-managed cgroup, never written) and the tasks of every
// container cgroup marked SchedIdleMarker back to SCHED_OTHER. It returns
// how many values changed. The framework calls it for disabled loops once
// the hierarchy is known.
func (a *Applier) RestoreDisabled() int {
	if a.opts.Hierarchy == nil {
		return 0
	}
	root := a.opts.Hierarchy()
	if root == "" {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	if !features.Enabled(features.YARNMemoryQoS) {
		if m := a.restoreMemoryDisabled(root); m > 0 {
			n += m
			klog.Infof("yarn: YARNMemoryQoS is off: %d Memory QoS values of YARN containers given back their prior values", m)
		}
	}
	if !features.Enabled(features.YARNResctrlQoS) {
		if m := a.leaveResctrlDisabled(root); m > 0 {
			n += m
			a.wrote(ResctrlTasksResource, m)
			klog.Infof("yarn: YARNResctrlQoS is off: %d YARN container tasks moved out of resctrl %s back to the default group", m, BEResctrlGroup)
		}
	}
	if features.Enabled(features.YARNCPUQoS) {
		return n
	}
	rootAbs := cpuDir(root)
	if rootAbs == "" {
		return n
	}
	if !KubeletManaged(root) {
		path := filepath.Join(rootAbs, system.CPUIdleName)
		if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == "1" {
			if err := os.WriteFile(path, []byte("0"), 0); err != nil {
				klog.Warningf("yarn: YARNCPUQoS is off: reset cpu.idle of the YARN hierarchy %s: %v", root, err)
			} else {
				n++
				klog.Infof("yarn: YARNCPUQoS is off: cpu.idle of the YARN hierarchy %s reset to 0", root)
			}
		}
	}
	tasks := 0
	for _, c := range cpuChildren(root, rootAbs) {
		if marked(filepath.Join(rootAbs, c.Name)) {
			tasks += a.applySchedIdle(c, false)
		}
	}
	if tasks > 0 {
		a.wrote(SchedPolicyResource, tasks)
		klog.Infof("yarn: YARNCPUQoS is off: %d YARN container tasks given back SCHED_OTHER", tasks)
	}
	return n + tasks
}

// childDirs lists the names of the directories in abs.
func childDirs(abs string) []string {
	entries, _ := os.ReadDir(abs)
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// cpuChildren returns the cgroups below the YARN root (rel root, absolute
// cpu dir rootAbs) as containers owning their cpu cgroup, for the restores
// that run without the store.
func cpuChildren(root, rootAbs string) []*store.Container {
	var out []*store.Container
	for _, name := range childDirs(rootAbs) {
		c := &store.Container{Name: name, Source: store.SourceCgroup}
		c.Cgroups[cgroups.CPU] = cgroups.Ref{Dir: filepath.Join(root, name), Owned: true}
		out = append(out, c)
	}
	return out
}
