/*
Copyright 2022 The Koordinator Authors.
Copyright 2026 The koordlet-yarn Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.

Derived from Koordinator v1.8.0 pkg/koordlet/qosmanager/plugins/cgreconcile/cgroup_reconcile.go (the memory cgroup updaters);
modified for koordlet-yarn.
*/

package yarnqos

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	koordmetrics "github.com/koordinator-sh/koordinator/pkg/koordlet/metrics"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/resourceexecutor"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/logonce"
	"github.com/koordlet-yarn/koordlet-yarn/framework/policy"
	"github.com/koordlet-yarn/koordlet-yarn/framework/promreg"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

// BEResctrlGroup is koordlet's resctrl group of BE work.
const BEResctrlGroup = "BE"

// Options wire the applier to koordlet.
type Options struct {
	Store *store.Store
	// StatesInformer returns koordlet's states informer (nil before capture).
	StatesInformer func() statesinformer.StatesInformer
	// Hierarchy returns the YARN hierarchy dir ("" when unknown). Its root
	// gets the CPU QoS too: sched-idle and Group Identity act between
	// siblings, so the YARN root must be BE towards its own siblings.
	Hierarchy func() string
	// Locate returns the full YARN hierarchy (ok false when unknown): its
	// cgroup namespace reads /proc/<pid>/cgroup for the checks of a task
	// before its id is written by number. Without it the paths are taken
	// as the host's.
	Locate func() (cgroups.Hierarchy, bool)
	// Interval is the periodic reconcile.
	Interval time.Duration
	// OnApplied, when set, is called after a container's settings were
	// written (for measurements).
	OnApplied func(c *store.Container, at time.Time)
	// Registerer receives koordlet_yarn_qos_writes_total (nil: none).
	Registerer prometheus.Registerer
	// Policy gives containers their YARN QoS policy tier, whose CPU and
	// Memory QoS override the BE class's (nil: the BE class for all).
	Policy *policy.Resolver
}

// Applier applies the BE QoS to YARN containers.
type Applier struct {
	opts     Options
	executor resourceexecutor.ResourceUpdateExecutor
	reader   resourceexecutor.CgroupReader

	mu          sync.Mutex // serialises applies (events, callbacks, reconcile)
	unsupported map[string]bool
	// schedIdleOff: the node cannot have SCHED_IDLE given to YARN tasks
	// (no CAP_SYS_NICE, no xattrs on cgroups); said once.
	schedIdleOff bool
	// said holds the conditions already logged: marking a container for
	// resctrl failed, recording Memory QoS prior values failed, the YARN
	// root is kubelet-managed and left alone.
	said logonce.Set
	// writes counts changed files by resource (resctrl: tasks moved).
	writes *prometheus.CounterVec
	// resctrlWrite writes task ids to a resctrl group's tasks file
	// (writeResctrlTasks; tests put a fake kernel in).
	resctrlWrite func(group string, ids []int32) error
}

// ResctrlTasksResource is the resource label of the tasks the applier moves
// into the resctrl BE group.
const ResctrlTasksResource = "resctrl_tasks"

// New returns an applier.
func New(opts Options) *Applier {
	a := &Applier{opts: opts, executor: resourceexecutor.NewResourceUpdateExecutor(), unsupported: map[string]bool{},
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: koordmetrics.KoordletSubsystem, Name: "yarn_qos_writes_total",
			Help: "QoS values the YARN appliers changed, by resource (a cgroup file such as cpu.idle or memory.min; resctrl_tasks: tasks moved into the resctrl BE group; sched_policy: YARN tasks given SCHED_IDLE or back SCHED_OTHER). Unchanged values are not written again."},
			[]string{"resource"})}
	a.resctrlWrite = a.writeResctrlTasks
	if err := promreg.Register(opts.Registerer, &a.writes); err != nil {
		klog.Warningf("yarn: register koordlet_yarn_qos_writes_total: %v", err)
	}
	return a
}

// wrote counts n changed values of resource.
func (a *Applier) wrote(resource string, n int) {
	if n > 0 {
		a.writes.WithLabelValues(resource).Add(float64(n))
	}
}

// Name names the loop.
func (a *Applier) Name() string { return "YARN QoS applier" }

// Enabled is true when any of the QoS gates is on.
func (a *Applier) Enabled() bool {
	return features.Enabled(features.YARNCPUQoS) || features.Enabled(features.YARNMemoryQoS) || features.Enabled(features.YARNResctrlQoS)
}

// Run applies on every added or updated container, on NodeSLO changes and
// every interval, until stopCh closes. It returns at once.
func (a *Applier) Run(stopCh <-chan struct{}) {
	if features.Enabled(features.YARNCPUQoS) {
		klog.Infof("yarn: YARN CPU QoS: a sched-idle BE class makes the YARN hierarchy root cpu.idle=1 and YARN container tasks SCHED_IDLE; " +
			"the besteffort QoS cgroup, pod cgroups and the YARN containers' own cgroups are never made idle, because the kubelet and YARN's " +
			"LinuxContainerExecutor write cpu.shares/cpu.weight there and the kernel refuses those writes while cpu.idle=1")
	}
	if features.Enabled(features.YARNMemoryQoS) {
		klog.Infof("yarn: YARN Memory QoS: while the BE class's Memory QoS is on, memory.min, memory.low and memory.high of a YARN container are koordlet's, " +
			"from its request (a value YARN's memory handler writes over them, as Hadoop 3.5's does with memory.enforced at a launch or a container update, " +
			"is written back at the next apply); memory.max (memory.limit_in_bytes) and cpu.weight (cpu.shares) stay YARN's; withdrawn, each file gets back what it held before")
	}
	if n := a.RestoreDisabled(); n > 0 {
		klog.Infof("yarn: %d QoS values written earlier under gates now off restored", n)
	}
	a.executor.Run(stopCh)
	a.ApplyRoot()
	unsubscribe := a.opts.Store.Subscribe("yarn-qos", func(ev store.Event) {
		switch {
		case ev.Type == store.ResyncNeeded:
			a.ReconcileAll() // events were dropped: apply to every container
		case ev.Type == store.Added:
			// The root may have been made after Run (by the NodeManager at
			// its start, or by koordlet for containers YARN gives no
			// cgroup): its QoS comes with its first container, not a
			// reconcile later. Unchanged values are not written again.
			a.ApplyRoot()
			a.Apply(ev.Container)
		case ev.Type == store.Updated && inputsChanged(ev.Previous, ev.Container):
			a.Apply(ev.Container)
		}
	})
	if si := a.opts.StatesInformer(); si != nil {
		si.RegisterCallbacks(statesinformer.RegisterTypeNodeSLOSpec, "yarn-qos", "apply BE QoS to YARN containers",
			func(statesinformer.RegisterType, interface{}, *statesinformer.CallbackTarget) { a.ReconcileAll() })
	}
	go func() {
		defer unsubscribe()
		ticker := time.NewTicker(a.opts.Interval)
		defer ticker.Stop()
		for {
			select {
			case <-stopCh:
				return
			case <-ticker.C:
				a.ReconcileAll()
			}
		}
	}()
}

// inputsChanged reports whether an update changed what the applied values
// depend on: the processes (resctrl tasks, a cgroup that now has them), the
// cgroups, or the memory request (Memory QoS; the NM reports it after the
// cgroup scan or an event has added the container).
func inputsChanged(prev, cur *store.Container) bool {
	return prev == nil || !samePids(prev, cur) || prev.Cgroups != cur.Cgroups || prev.RequestMemoryBytes != cur.RequestMemoryBytes
}

func samePids(a, b *store.Container) bool {
	if a == nil || b == nil || len(a.Pids) != len(b.Pids) {
		return false
	}
	for i := range a.Pids {
		if a.Pids[i] != b.Pids[i] {
			return false
		}
	}
	return true
}

// ReconcileAll applies to every container; unchanged values are not
// written again (the executor caches what it wrote).
func (a *Applier) ReconcileAll() (written int) {
	written += a.ApplyRoot()
	for _, c := range a.opts.Store.Snapshot() {
		written += a.Apply(c)
	}
	return written
}

// ApplyRoot writes the CPU QoS to the YARN hierarchy root (all of it is BE
// work: sched-idle and Group Identity act between siblings, so the root
// must be BE towards its own siblings) and returns how many files changed.
// A root that is itself a cgroup the kubelet writes shares to (see
// KubeletManaged) is left alone.
func (a *Applier) ApplyRoot() int {
	if a.opts.Hierarchy == nil || !features.Enabled(features.YARNCPUQoS) {
		return 0
	}
	dir := a.opts.Hierarchy()
	spec, _ := a.spec()
	if dir == "" || spec == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	written := 0
	if KubeletManaged(dir) {
		if a.said.First("kubelet-managed-root") {
			klog.Warningf("yarn: the YARN hierarchy %s is a cgroup the kubelet writes cpu.shares/cpu.weight to; YARN CPU QoS leaves it as it is (cpu.idle=1 there would make the kernel refuse the kubelet's writes)", dir)
		}
		return written
	}
	root := &store.Container{Name: dir, Source: store.SourceCgroup}
	root.Cgroups[cgroups.CPU] = cgroups.Ref{Dir: dir, Owned: true}
	for _, u := range a.cpuUpdaters(root, CPURuleOf(spec), true) {
		if updated, err := a.executor.Update(true, u); err == nil && updated {
			written++
			a.wrote(string(u.ResourceType()), 1)
		} else if err != nil {
			klog.V(4).Infof("yarn: apply %s to the YARN hierarchy %s: %v", u.Name(), dir, err)
		}
	}
	return written
}

func (a *Applier) spec() (*slov1alpha1.NodeSLOSpec, *corev1.Node) {
	si := a.opts.StatesInformer()
	if si == nil {
		return nil, nil
	}
	slo := si.GetNodeSLO()
	if slo == nil {
		return nil, si.GetNode()
	}
	return &slo.Spec, si.GetNode()
}

// Apply writes the container's settings and returns how many files changed.
// A container that vanishes meanwhile is not an error.
func (a *Applier) Apply(c *store.Container) int {
	if c == nil || !c.HasCgroup() {
		return 0
	}
	spec, node := a.spec()
	if spec == nil {
		return 0
	}
	spec = TierSpec(spec, a.opts.Policy.For(c).Effective)
	a.mu.Lock()
	defer a.mu.Unlock()
	var ups []resourceexecutor.ResourceUpdater
	written := 0
	if features.Enabled(features.YARNCPUQoS) {
		rule := CPURuleOf(spec)
		ups = append(ups, a.cpuUpdaters(c, rule, false)...)
		// An ApplicationMaster stays SCHED_OTHER (and is given it back once
		// known as one): under a budget cut to the floor, SCHED_IDLE AMs
		// beside CPU-bound SCHED_IDLE executors get too little CPU to
		// heartbeat and the RM expires them with their whole job attempt.
		// SCHED_OTHER wins over the executors inside YARN's budget and
		// still yields to LS through the besteffort cgroup's low weight and
		// the YARN root's cpu.idle.
		if n := a.applySchedIdle(c, rule.Idle == 1 && !c.IsAM); n > 0 {
			written += n
			a.wrote(SchedPolicyResource, n)
		}
	}
	if features.Enabled(features.YARNMemoryQoS) {
		written += a.applyMemory(c, a.memoryUpdaters(c, spec, node))
	}
	written += a.update(c.Name, ups)
	if features.Enabled(features.YARNResctrlQoS) {
		moved := 0
		if ResctrlEnabled(spec) {
			moved = a.joinResctrl(c)
		} else {
			moved = a.leaveResctrl(c)
		}
		a.wrote(ResctrlTasksResource, moved)
		written += moved
	}
	if written > 0 && a.opts.OnApplied != nil {
		a.opts.OnApplied(c, time.Now())
	}
	return written
}

// update writes ups (cacheable) for container name and returns how many
// files changed; a container gone meanwhile is not an error. The caller
// holds a.mu.
func (a *Applier) update(name string, ups []resourceexecutor.ResourceUpdater) int {
	written := 0
	for _, u := range ups {
		updated, err := a.executor.Update(true, u)
		if err == nil && !updated {
			if held, ok := overwritten(u); ok {
				// Another writer changed the file since koordlet wrote
				// it; the executor's cache would skip the unchanged value
				// for up to --resource-force-update-seconds (60 s).
				klog.Infof("yarn: %s of container %s held %s, not koordlet's %s (YARN's cgroup handler rewrites it at a launch or a container update): written back",
					u.ResourceType(), name, held, u.Value())
				_, err = a.executor.Update(false, u)
				updated = err == nil
			}
		}
		if err != nil {
			if !os.IsNotExist(err) && !resourceexecutor.IsCgroupDirErr(err) {
				klog.V(4).Infof("yarn: apply %s to container %s: %v", u.Name(), name, err)
			}
			continue
		}
		if updated {
			written++
			a.wrote(string(u.ResourceType()), 1)
		}
	}
	return written
}

// supported checks a resource once per kind and logs one line when the
// kernel lacks it.
// A check on a directory that does not exist (a container that has just
// exited) decides nothing and is not remembered: it must not turn the
// feature off for every container.
func (a *Applier) supported(r system.Resource, dir, what string) bool {
	key := string(r.ResourceType())
	if v, ok := a.unsupported[key]; ok {
		return !v
	}
	ok, msg := r.IsSupported(dir)
	if !ok {
		if _, err := os.Stat(filepath.Dir(r.Path(dir))); err != nil {
			return false
		}
	}
	a.unsupported[key] = !ok
	if !ok {
		klog.Infof("yarn: %s (%s) is not supported on this node, skipped for YARN containers: %s", what, key, msg)
	}
	return ok
}

// cpuUpdaters returns the Group Identity value of the container's own cpu
// cgroup and, with withIdle (the YARN root only), its cpu.idle.
func (a *Applier) cpuUpdaters(c *store.Container, rule CPURule, withIdle bool) []resourceexecutor.ResourceUpdater {
	ref := c.Cgroups[cgroups.CPU]
	if !ref.Owned {
		return nil
	}
	var ups []resourceexecutor.ResourceUpdater
	if r, ok := resourceOf(system.CPUBVTWarpNsName); ok && a.supported(r, ref.Dir, "Group Identity") {
		if u, err := resourceexecutor.NewCommonCgroupUpdater(system.CPUBVTWarpNsName, ref.Dir, strconv.FormatInt(rule.BVT, 10), nil); err == nil {
			ups = append(ups, u)
		}
	}
	if r, ok := resourceOf(system.CPUIdleName); withIdle && ok && a.supported(r, ref.Dir, "cgroup sched-idle") {
		if u, err := resourceexecutor.NewCommonCgroupUpdater(system.CPUIdleName, ref.Dir, strconv.FormatInt(rule.Idle, 10), nil); err == nil {
			ups = append(ups, u)
		}
	}
	return ups
}

func (a *Applier) memoryUpdaters(c *store.Container, spec *slov1alpha1.NodeSLOSpec, node *corev1.Node) []resourceexecutor.ResourceUpdater {
	ref := c.Cgroups[cgroups.Memory]
	if !ref.Owned {
		return nil
	}
	if a.reader == nil {
		a.reader = resourceexecutor.NewCgroupReader()
	}
	limit, err := a.reader.ReadMemoryLimit(ref.Dir)
	if err != nil || limit <= 0 || limit >= 1<<62 {
		limit = -1
	}
	var allocatable int64
	if node != nil {
		allocatable = node.Status.Allocatable.Memory().Value()
	}
	v, ok := MemoryValuesOf(spec, c.RequestMemoryBytes, limit, allocatable)
	if !ok {
		return nil
	}
	if c.RequestMemoryBytes <= 0 {
		// The NM has not reported the request yet (or reported none):
		// min, low and high derive from it, so they wait for it rather
		// than being written from zero; the update that brings the
		// request applies them.
		v.Min, v.Low, v.High = nil, nil, nil
	}
	var ups []resourceexecutor.ResourceUpdater
	for _, f := range []struct {
		name      system.ResourceType
		value     *int64
		mergeable bool
	}{
		{system.MemoryMinName, v.Min, true}, {system.MemoryLowName, v.Low, true}, {system.MemoryHighName, v.High, true},
		{system.MemoryWmarkRatioName, v.WmarkRatio, false}, {system.MemoryWmarkScaleFactorName, v.WmarkScaleFactor, false},
		{system.MemoryWmarkMinAdjName, v.WmarkMinAdj, false}, {system.MemoryPriorityName, v.Priority, false},
		{system.MemoryUsePriorityOomName, v.UsePriorityOom, false}, {system.MemoryOomGroupName, v.OomGroup, false},
	} {
		if f.value == nil {
			continue
		}
		if r, ok := resourceOf(f.name); !ok || !a.supported(r, ref.Dir, "Memory QoS") {
			continue
		}
		name := f.name
		value := strconv.FormatInt(*f.value, 10)
		var u resourceexecutor.ResourceUpdater
		if f.mergeable {
			u, err = resourceexecutor.NewMergeableCgroupUpdaterIfValueLarger(name, ref.Dir, value, nil)
		} else {
			u, err = resourceexecutor.NewCommonCgroupUpdater(name, ref.Dir, value, nil)
		}
		if err == nil {
			ups = append(ups, u)
		}
	}
	return ups
}

// resourceOf returns koordlet's resource of type t for this host's cgroup
// version (the v1 and v2 files of one type live at different paths; the
// executor writes the current version's), false when the version has none.
func resourceOf(t system.ResourceType) (system.Resource, bool) {
	r, err := system.GetCgroupResource(t)
	return r, err == nil
}

// joinResctrl moves the container's tasks not yet in koordlet's BE resctrl
// group into it, and returns how many it moved.
func (a *Applier) joinResctrl(c *store.Container) int {
	if v, ok := a.unsupported["resctrl"]; ok && v {
		return 0
	}
	groupDir := system.GetResctrlGroupRootDirPath(BEResctrlGroup)
	if _, err := os.Stat(groupDir); err != nil {
		if _, seen := a.unsupported["resctrl"]; !seen {
			a.unsupported["resctrl"] = true
			klog.Infof("yarn: L3 CAT / MBA skipped for YARN containers: no resctrl %s group at %s (resctrl unsupported, or koordlet's resctrl QoS is off)", BEResctrlGroup, groupDir)
		}
		return 0
	}
	a.unsupported["resctrl"] = false
	ref := c.Cgroups[cgroups.CPU]
	if !ref.Owned {
		return 0
	}
	tasks, err := a.cgroupReader().ReadCPUTasks(ref.Dir)
	if err != nil {
		return 0
	}
	current, err := system.ReadResctrlTasksMap(BEResctrlGroup)
	if err != nil {
		klog.V(4).Infof("yarn: read resctrl %s tasks: %v", BEResctrlGroup, err)
		return 0
	}
	var fresh []int32
	for _, id := range tasks {
		if _, ok := current[id]; !ok {
			fresh = append(fresh, id)
		}
	}
	if len(fresh) == 0 {
		return 0
	}
	// The resctrl tasks file takes numbers: each task is moved by
	// cgroups.MoveIn (pinned, checked to be the container's, written,
	// verified), after the container is marked (a koordlet that dies
	// midway leaves the marker, and the tasks can be moved back).
	if !a.markResctrl(ref.Dir) {
		return 0
	}
	h := a.hierarchy()
	place := resctrlPlace{procRoot: h.ProcRoot, write: a.resctrlWrite}
	moved := 0
	for _, id := range fresh {
		from, ok := place.Of(int(id))
		if !ok {
			continue // gone
		}
		if a.moveResctrl(h, c.Name, ref.Dir, id, from, BEResctrlGroup) == cgroups.MoveMoved {
			moved++
		}
	}
	return moved
}

// writeResctrlTasks writes task ids to the tasks file of the resctrl
// group ("": the default group) through koordlet's executor (one write per
// id, as the kernel takes them).
func (a *Applier) writeResctrlTasks(group string, ids []int32) error {
	u, err := resourceexecutor.CalculateResctrlL3TasksResource(group, ids)
	if err != nil {
		return err
	}
	_, err = a.executor.Update(false, u)
	return err
}

// cgroupReader returns koordlet's cgroup reader. The caller holds a.mu.
func (a *Applier) cgroupReader() resourceexecutor.CgroupReader {
	if a.reader == nil {
		a.reader = resourceexecutor.NewCgroupReader()
	}
	return a.reader
}

// hierarchy returns the located YARN hierarchy, whose cgroup namespace
// reads /proc/<pid>/cgroup, or the host's.
func (a *Applier) hierarchy() cgroups.Hierarchy {
	if a.opts.Locate != nil {
		if located, ok := a.opts.Locate(); ok {
			return located
		}
	}
	return cgroups.Hierarchy{ProcRoot: system.Conf.ProcRootDir, V2: system.GetCurrentCgroupVersion() == system.CgroupVersionV2}
}

// SetInterval sets the periodic reconcile; call it before Run (koordlet's
// flags are parsed after the applier is built).
func (a *Applier) SetInterval(d time.Duration) {
	if d > 0 {
		a.opts.Interval = d
	}
}

// Interval returns the periodic reconcile.
func (a *Applier) Interval() time.Duration { return a.opts.Interval }
