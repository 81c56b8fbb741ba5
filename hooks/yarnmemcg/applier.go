// Package yarnmemcg gives each YARN container its own memory cgroup when
// YARN does not make one (its CPU-only cgroups handler,
// yarn.nodemanager.resource.memory.enabled=false): it creates
// memory/<hierarchy>/<container id>, moves the container's processes into it
// and removes it when the container's cpu cgroup is gone. The scan then finds
// the container's own memory cgroup, so per-container memory metrics, Memory
// QoS and memory evict work as if YARN had made it. cgroup v1 only (on v2
// YARN's unified directory already holds memory). Gate YARNMemoryCgroup.
//
// Safety: every directory this package creates carries the trusted xattr
// Marker; a directory without it is YARN's (or someone else's) and is never
// written, moved into or removed. A process is moved by number only after it
// is pinned (pidfd) and proven to be in the container's own cpu cgroup, and
// each move is verified afterwards through the pidfd.
package yarnmemcg

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/resourceexecutor"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/logonce"
	"github.com/koordlet-yarn/koordlet-yarn/framework/promreg"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

// Marker is the trusted xattr set on every directory koordlet creates here.
const Marker = cgroups.MemcgMarker

// markerValue is the marker's value.
const markerValue = cgroups.MarkerValue

// DefaultMaxResidentWithoutChargeMove: on kernels that no longer move
// charges (Linux 6.8+ rejects memory.move_charge_at_immigrate != 0) the
// memory a process allocated before its move stays charged to the
// NodeManager pod's cgroup, so the new cgroup undercounts by what the
// container held when it was adopted. It is then adopted only while its
// processes hold at most this much (RssAnon + RssShmem): normally at its
// first process (YARN's launch script), found by an attach event. The
// undercount is bounded by it; a container that already holds more keeps
// the per-process accounting, which counts it whole. (Age is no bound: a
// JVM fills gigabytes in seconds.)
const DefaultMaxResidentWithoutChargeMove = 64 << 20

// maxPasses bounds the re-reads of the cpu cgroup's processes in one apply
// (processes forked by a parent before it moved stay behind).
const maxPasses = 4

// Options wire the applier.
type Options struct {
	Store *store.Store
	// Hierarchy returns the YARN hierarchy once known.
	Hierarchy func() (cgroups.Hierarchy, bool)
	// Interval is the periodic reconcile (adopt missed processes, remove
	// leaves whose cpu cgroup is gone, retry busy removals).
	Interval time.Duration
	// LimitFromRequest sets memory.limit_in_bytes to the NM's memory
	// request. Off by default: YARN did not ask for a kernel limit (its
	// CPU-only handler enforces memory, if at all, by its own monitor), and
	// a limit turns memory pressure into OOM kills in the container; Memory
	// QoS and memory evict act on the cgroup without one.
	LimitFromRequest bool
	// MaxResidentWithoutChargeMove, see DefaultMaxResidentWithoutChargeMove
	// (zero: the default; negative: no limit).
	MaxResidentWithoutChargeMove int64
	// Registerer receives koordlet_yarn_memcg_moves_total (nil: none).
	Registerer prometheus.Registerer
	// OnMoved, when set, is called after an apply left every process of
	// the container's cpu cgroup (at least one) in its memory cgroup.
	OnMoved func(c *store.Container, at time.Time)
	// Now is time.Now; tests may pin it.
	Now func() time.Time
	// WriteProcs moves a process into a cgroup dir (cgroups.WriteProcs
	// when nil); tests inject failures.
	WriteProcs cgroups.WriteFunc
}

// Move results (label result of koordlet_yarn_memcg_moves_total):
// cgroups.Move's.
const (
	ResultMoved    = string(cgroups.MoveMoved)
	ResultGone     = string(cgroups.MoveGone)
	ResultNotOwn   = string(cgroups.MoveNotOwn) // not in the container's own cpu cgroup, or not where it was checked: not moved
	ResultReverted = string(cgroups.MoveReverted)
	ResultFailed   = string(cgroups.MoveFailed)
)

// Applier is the YARN memory cgroup loop.
type Applier struct {
	opts     Options
	moves    *prometheus.CounterVec
	executor resourceexecutor.ResourceUpdateExecutor
	write    cgroups.WriteFunc

	mu sync.Mutex // serialises applies, sweeps and reconciles
	// ours holds the container names whose leaf this koordlet made or
	// found marked; pending those whose removal was refused (busy).
	ours    map[string]bool
	pending map[string]bool
	// set holds the leaves whose settings were written.
	set map[string]bool
	// chargeMove is the once-per-node decision whether the kernel moves
	// charges: 0 unknown, 1 yes, -1 no.
	chargeMove int
	// said holds the once-per-node conditions already logged.
	said logonce.Set
	// skipped remembers containers left alone (too old without charge
	// moving), so that they are logged once.
	skipped map[string]bool
}

// New returns the applier; it registers its metric on opts.Registerer.
func New(opts Options) *Applier {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Interval <= 0 {
		opts.Interval = 10 * time.Second
	}
	if opts.MaxResidentWithoutChargeMove == 0 {
		opts.MaxResidentWithoutChargeMove = DefaultMaxResidentWithoutChargeMove
	}
	if opts.WriteProcs == nil {
		opts.WriteProcs = cgroups.WriteProcs
	}
	a := &Applier{opts: opts, write: opts.WriteProcs, executor: resourceexecutor.NewResourceUpdateExecutor(),
		ours: map[string]bool{}, pending: map[string]bool{}, set: map[string]bool{}, skipped: map[string]bool{}}
	a.moves = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "koordlet_yarn_memcg_moves_total",
		Help: "Processes of YARN containers koordlet moved (or declined to move) into the memory cgroup it made for the container, by result."},
		[]string{"result"})
	if err := promreg.Register(opts.Registerer, &a.moves); err != nil {
		klog.Warningf("yarn: register koordlet_yarn_memcg_moves_total: %v", err)
	}
	return a
}

// Moves returns the move counter (tests, measurements).
func (a *Applier) Moves() *prometheus.CounterVec { return a.moves }

// Name names the loop.
func (a *Applier) Name() string { return "YARN memory cgroup" }

// Enabled is the gate YARNMemoryCgroup.
func (a *Applier) Enabled() bool { return features.Enabled(features.YARNMemoryCgroup) }

// Run applies on store events and every interval until stopCh closes. It
// returns at once.
func (a *Applier) Run(stopCh <-chan struct{}) {
	a.executor.Run(stopCh)
	unsubscribe := a.opts.Store.Subscribe("yarn-memcg", a.handle)
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

// handle is the store subscriber.
func (a *Applier) handle(ev store.Event) {
	switch {
	case ev.Type == store.ResyncNeeded:
		a.ReconcileAll()
	case ev.Type == store.Removed:
		if ev.Container != nil {
			a.mu.Lock()
			if h, ok := a.hierarchy(); ok {
				a.removeIfCPUGone(h, ev.Container.Name)
			}
			a.mu.Unlock()
		}
	case ev.Type == store.Added || (ev.Type == store.Updated && changed(ev.Previous, ev.Container)):
		a.Apply(ev.Container)
	}
}

// changed: new processes (attach events, scans) or other cgroups.
func changed(prev, cur *store.Container) bool {
	if prev == nil || cur == nil || prev.Cgroups != cur.Cgroups || len(prev.Pids) != len(cur.Pids) {
		return true
	}
	for i := range prev.Pids {
		if prev.Pids[i] != cur.Pids[i] {
			return true
		}
	}
	return false
}

// hierarchy returns the YARN hierarchy when this applier acts on it (v1).
func (a *Applier) hierarchy() (cgroups.Hierarchy, bool) {
	if a.opts.Hierarchy == nil {
		return cgroups.Hierarchy{}, false
	}
	h, ok := a.opts.Hierarchy()
	if !ok {
		return h, false
	}
	if h.V2 {
		if a.said.First("v2") {
			if v2, _ := h.ReadV2Controllers(); v2.Enabled(cgroups.Memory) {
				klog.Infof("yarn: YARNMemoryCgroup does nothing on cgroup v2: each YARN container's unified directory already holds its memory")
			} else {
				klog.Infof("yarn: YARNMemoryCgroup does nothing on cgroup v2: the YARN hierarchy %s does not enable the memory controller for its containers "+
					"(yarn.nodemanager.resource.memory.enabled=false); enabling it is YARN's configuration, not koordlet's, and a process cannot leave its "+
					"unified directory for a memory one: their memory is measured by their processes", h.Dir)
			}
		}
		return h, false
	}
	return h, true
}

// ReconcileAll applies to every container of the store and removes the
// leaves whose container's cpu cgroup is gone; it returns the processes
// moved.
func (a *Applier) ReconcileAll() (moved int) {
	for _, c := range a.opts.Store.Snapshot() {
		moved += a.Apply(c)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if h, ok := a.hierarchy(); ok {
		a.sweep(h)
	}
	return moved
}

// Apply gives container c its memory cgroup when YARN made none and moves
// its processes into it; it returns the processes moved.
func (a *Applier) Apply(c *store.Container) int {
	if c == nil || !c.Cgroups[cgroups.CPU].Owned {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	h, ok := a.hierarchy()
	if !ok {
		return 0
	}
	own := h.ContainerRelDir(c.Name)
	if c.Cgroups[cgroups.CPU].Dir != own {
		return 0 // not the canonical own directory below the hierarchy
	}
	cpuAbs := h.AbsDir(cgroups.CPU, own)
	memAbs := h.AbsDir(cgroups.Memory, own)
	pids, err := cgroups.ReadPids(cpuAbs)
	if err != nil || len(pids) == 0 {
		// No process yet: YARN writes the first one into its cgroups only
		// after it made all of them, so a memory cgroup made before that
		// could take YARN's own mkdir (memory enabled) from it.
		return 0
	}
	switch m, err := marked(memAbs); {
	case err == nil && !m:
		return 0 // YARN's (or someone else's): never touched
	case err == nil:
		a.ours[c.Name] = true
	case !os.IsNotExist(err):
		klog.V(4).Infof("yarn: memory cgroup of %s: %v", c.Name, err)
		return 0
	default:
		if !a.mayCreate(h, c) {
			return 0
		}
		if !a.create(h, c.Name) {
			return 0
		}
	}
	if !a.ours[c.Name] {
		return 0
	}
	if !a.set[c.Name] {
		a.configure(memAbs)
		a.set[c.Name] = true
		if a.tooOld(c) && len(kernelPids(memAbs)) == 0 {
			// The first leaf told that charges do not move: an old
			// container's leaf, still empty, goes again.
			if err := unix.Rmdir(memAbs); err == nil {
				delete(a.ours, c.Name)
				delete(a.set, c.Name)
			}
			return 0
		}
	}
	a.setLimit(memAbs, c.RequestMemoryBytes)
	moved := 0
	for pass := 0; pass < maxPasses; pass++ {
		if pass > 0 {
			if pids, err = cgroups.ReadPids(cpuAbs); err != nil {
				return moved
			}
		}
		outside := 0
		for _, pid := range pids {
			if h.Contains(pid, cgroups.Memory, own) {
				continue
			}
			outside++
			if a.move(h, c.Name, own, pid) == ResultMoved {
				moved++
			}
		}
		if outside == 0 {
			if len(pids) > 0 && a.opts.OnMoved != nil && (moved > 0 || pass > 0) {
				a.opts.OnMoved(c, a.opts.Now())
			}
			return moved
		}
	}
	return moved
}

// mayCreate decides whether koordlet may create the container's leaf.
func (a *Applier) mayCreate(h cgroups.Hierarchy, c *store.Container) bool {
	root := h.RootDir(cgroups.Memory)
	// A container memory cgroup without our marker below the hierarchy
	// means YARN manages memory on this node: create nothing.
	if names, err := os.ReadDir(root); err == nil {
		for _, e := range names {
			if !e.IsDir() || !strings.HasPrefix(e.Name(), "container_") || a.ours[e.Name()] {
				continue
			}
			if m, err := marked(filepath.Join(root, e.Name())); err == nil && !m {
				if a.said.First("yarn-memory") {
					klog.Infof("yarn: YARNMemoryCgroup creates no memory cgroups: %s holds %s, which koordlet did not make (YARN manages memory on this node)", root, e.Name())
				}
				return false
			}
		}
	}
	return !a.tooOld(c)
}

// tooOld: the kernel does not move charges (known once a leaf was set up)
// and c's processes already hold more than MaxResidentWithoutChargeMove, or
// cannot be measured (logged once per container).
func (a *Applier) tooOld(c *store.Container) bool {
	if a.chargeMove >= 0 || a.opts.MaxResidentWithoutChargeMove < 0 {
		return false
	}
	if a.skipped[c.Name] {
		return true // decided once: it would undercount from now on too
	}
	h, ok := a.opts.Hierarchy()
	if !ok {
		return true
	}
	m, err := cgroups.NewProcessMemoryReader(h).NoKeep().Read(cgroups.CPU, h.ContainerRelDir(c.Name))
	switch {
	case err != nil:
		return true // not measurable now: not adopted now, asked again later
	case m.Usage() <= a.opts.MaxResidentWithoutChargeMove:
		return false
	}
	a.skipped[c.Name] = true
	klog.V(2).Infof("yarn: no memory cgroup for %s: its processes already hold %dMi and this kernel does not move charges, so its memory stays measured by its processes",
		c.Name, m.Usage()>>20)
	return true
}

// create makes the hierarchy's memory directory when missing and the
// container's leaf, each marked; false when the leaf is not ours.
func (a *Applier) create(h cgroups.Hierarchy, name string) bool {
	root := h.RootDir(cgroups.Memory)
	if _, err := os.Stat(root); os.IsNotExist(err) {
		if err := os.Mkdir(root, 0o755); err != nil && !os.IsExist(err) {
			klog.Warningf("yarn: create the YARN memory cgroup %s: %v", root, err)
			return false
		} else if err == nil && !a.mark(root) {
			return false
		}
	}
	leaf := filepath.Join(root, name)
	if err := os.Mkdir(leaf, 0o755); err != nil {
		if os.IsExist(err) { // made meanwhile: ours only if marked
			m, merr := marked(leaf)
			if merr == nil && m {
				a.ours[name] = true
				return true
			}
		} else {
			klog.Warningf("yarn: create memory cgroup %s: %v", leaf, err)
		}
		return false
	}
	if !a.mark(leaf) {
		return false
	}
	a.ours[name] = true
	klog.V(2).Infof("yarn: created memory cgroup %s for YARN container %s", leaf, name)
	return true
}

// mark sets the marker on a directory just made; without it the directory
// is removed again (it is empty) and nothing more is done.
func (a *Applier) mark(dir string) bool {
	if err := unix.Setxattr(dir, Marker, []byte(markerValue), 0); err != nil {
		_ = unix.Rmdir(dir)
		if a.said.First("no-marker") {
			klog.Warningf("yarn: YARNMemoryCgroup cannot mark %s (xattr %s: %v); without a marker koordlet could not tell its memory cgroups from YARN's, so it makes none", dir, Marker, err)
		}
		return false
	}
	return true
}

// marked reports whether dir carries the marker; the error is the stat's
// (os.IsNotExist when dir is missing).
func marked(dir string) (bool, error) { return cgroups.Marked(dir, Marker, markerValue) }

// configure writes the leaf's settings before any process moves in:
// move_charge_at_immigrate=3 (anon and file pages follow the process, where
// the kernel still moves charges), memory.oom.group=1 where the kernel has
// it (once per leaf).
func (a *Applier) configure(memAbs string) {
	if a.chargeMove >= 0 {
		// koordinator's resource table has no move_charge_at_immigrate,
		// so no updater: a direct write.
		err := os.WriteFile(filepath.Join(memAbs, "memory.move_charge_at_immigrate"), []byte("3"), 0)
		if err != nil {
			if a.chargeMove == 0 {
				klog.Infof("yarn: this kernel does not move memory charges (memory.move_charge_at_immigrate=3: %v): memory a YARN container allocated before koordlet moved it stays charged to the NodeManager pod's cgroup, so only containers whose processes hold at most %dMi get a memory cgroup (normally at their first process)", err, a.opts.MaxResidentWithoutChargeMove>>20)
			}
			a.chargeMove = -1
		} else if a.chargeMove == 0 {
			a.chargeMove = 1
		}
	}
	if _, err := os.Stat(filepath.Join(memAbs, "memory.oom.group")); err == nil {
		if u, err := resourceexecutor.NewCommonCgroupUpdater(system.MemoryOomGroupName, dirRel(memAbs), "1", nil); err == nil {
			if _, err := a.executor.Update(true, u); err != nil && a.said.First("oom-group") {
				klog.V(2).Infof("yarn: memory.oom.group on %s: %v", memAbs, err)
			}
		}
	}
}

// dirRel returns the cgroup dir relative to the memory mount, as
// koordinator's updaters take it.
func dirRel(memAbs string) string {
	mount := filepath.Join(system.Conf.CgroupRootDir, "memory")
	rel, err := filepath.Rel(mount, memAbs)
	if err != nil {
		return memAbs
	}
	return rel
}

// SetLimit writes the NM's memory request as the leaf's limit (only with
// Options.LimitFromRequest).
func (a *Applier) setLimit(memAbs string, request int64) {
	if !a.opts.LimitFromRequest || request <= 0 {
		return
	}
	u, err := resourceexecutor.NewCommonCgroupUpdater(system.MemoryLimitName, dirRel(memAbs), strconv.FormatInt(request, 10), nil)
	if err == nil {
		_, err = a.executor.Update(true, u)
	}
	if err != nil {
		klog.V(2).Infof("yarn: memory limit on %s: %v", memAbs, err)
	}
}

// move moves process pid of container name (own cpu dir own) into its
// memory leaf, verified, and counts the result.
func (a *Applier) move(h cgroups.Hierarchy, name, own string, pid int) string {
	r := a.moveOne(h, name, own, pid)
	a.moves.WithLabelValues(r).Inc()
	return r
}

func (a *Applier) moveOne(h cgroups.Hierarchy, name, own string, pid int) string {
	// Pin the process: while the pin holds, the number is its.
	p, err := cgroups.Pin(h.ProcRoot, pid)
	if err != nil {
		return ResultGone
	}
	defer p.Release()
	if !h.Contains(pid, cgroups.CPU, own) {
		if !p.Alive() {
			return ResultGone
		}
		return ResultNotOwn
	}
	from, ok := memoryPath(h, pid)
	if !ok || !p.Alive() {
		return ResultGone
	}
	r, err := cgroups.Move(h, p, []cgroups.Step{{Ctrl: cgroups.Memory, From: from, To: own}}, a.write)
	switch {
	case r == cgroups.MoveMoved:
		recordFrom(h.AbsDir(cgroups.Memory, own), from)
	case errors.Is(err, cgroups.ErrNotMovedBack):
		klog.Warningf("yarn: move %d of %s into its memory cgroup: %v", pid, name, err)
	case err != nil:
		klog.V(4).Infof("yarn: move %d of %s into its memory cgroup: %v", pid, name, err)
	}
	return string(r)
}

// memoryPath reads the process's memory cgroup (relative to the memory
// mount, through koordlet's cgroup namespace) from /proc/<pid>/cgroup.
func memoryPath(h cgroups.Hierarchy, pid int) (string, bool) { return h.PathOf(pid, cgroups.Memory) }

// kernelPids lists a cgroup dir's processes (none when unreadable).
func kernelPids(dir string) []int {
	pids, _ := cgroups.ReadPids(dir)
	return pids
}

// sweep removes the marked leaves whose container's cpu cgroup is gone and
// retries the busy ones.
func (a *Applier) sweep(h cgroups.Hierarchy) {
	root := h.RootDir(cgroups.Memory)
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "container_") {
			a.removeIfCPUGone(h, e.Name())
		}
	}
	for name := range a.skipped {
		if _, err := os.Stat(h.AbsDir(cgroups.CPU, h.ContainerRelDir(name))); os.IsNotExist(err) {
			delete(a.skipped, name)
		}
	}
}

// removeIfCPUGone removes container name's leaf when it is marked and the
// container's cpu cgroup is gone. A leaf with processes is kept and retried
// by the sweep: nothing is killed.
func (a *Applier) removeIfCPUGone(h cgroups.Hierarchy, name string) {
	if strings.ContainsAny(name, "/.") || !strings.HasPrefix(name, "container_") {
		return
	}
	rel := h.ContainerRelDir(name)
	if _, err := os.Stat(h.AbsDir(cgroups.CPU, rel)); !os.IsNotExist(err) {
		return
	}
	leaf := h.AbsDir(cgroups.Memory, rel)
	m, err := marked(leaf)
	if err != nil || !m {
		delete(a.ours, name)
		delete(a.pending, name)
		delete(a.set, name)
		return // gone, or not ours
	}
	if err := unix.Rmdir(leaf); err != nil {
		if !a.pending[name] {
			klog.V(2).Infof("yarn: memory cgroup %s of the finished container %s not removed yet (%v); retried every %s", leaf, name, err, a.opts.Interval)
		}
		a.pending[name] = true
		return
	}
	delete(a.ours, name)
	delete(a.pending, name)
	delete(a.set, name)
	delete(a.skipped, name)
	klog.V(2).Infof("yarn: removed memory cgroup %s of the finished container %s", leaf, name)
}

// Pending returns the container names whose leaf removal is being retried.
func (a *Applier) Pending() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.pending))
	for n := range a.pending {
		out = append(out, n)
	}
	return out
}

// String describes the applier's state (logs, debug).
func (a *Applier) String() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return fmt.Sprintf("memory cgroups made: %d, removals pending: %d, charge moving: %d", len(a.ours), len(a.pending), a.chargeMove)
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
