package lswait

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/koordinator-sh/koordinator/apis/extension"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	koordletutil "github.com/koordinator-sh/koordinator/pkg/koordlet/util"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/logonce"
)

// Sources of the signal.
const (
	SourceEBPF      = "ebpf"
	SourceSchedstat = "schedstat"
)

// Signal is the LS pods' CPU wait over the last interval.
type Signal struct {
	// At is when it was read; Interval the time it covers.
	At       time.Time
	Interval time.Duration
	// Source is SourceEBPF or SourceSchedstat.
	Source string
	// P99 is the 99th percentile of the waits of all LS pods' tasks
	// (eBPF only: 0 from schedstat); Mean the mean wait per wake-up (eBPF)
	// or per time slice (schedstat).
	P99, Mean time.Duration
	// InterferenceP99 is the 99th percentile of the same waits counting
	// only those behind a batch task (YARN's, a BE pod's), the others (behind
	// LS tasks, daemons, kernel threads) as zero: the part of the LS tail
	// that throttling batch can remove (eBPF only).
	InterferenceP99 time.Duration
	// P999 and InterferenceP999 are the 99.9th percentiles (eBPF only).
	P999, InterferenceP999 time.Duration
	// InterferenceMean is the wait behind batch tasks per LS wake-up over
	// all LS pods (the other waits count as zero; eBPF only).
	InterferenceMean time.Duration
	// Worst is the LS pod with the highest interference wait per wake-up
	// among those with at least MinPodWaits waits (eBPF only; Worst.Pod ""
	// when none had): the controller's signal. A node mean weighted by
	// wake-ups would let a busy unharmed pod hide a harmed one.
	Worst PodInterference
	// WorstWait is the LS pod with the highest wait per wake-up behind any
	// task (batch, LS, daemons, kernel threads), among those with at least
	// MinPodWaits waits (eBPF only; WorstWait.Pod "" when none had).
	WorstWait PodInterference
	// Waits is how many waits (eBPF) or time slices (schedstat) there were.
	Waits uint64
	// Pods is how many LS pods were measured.
	Pods int
}

// PodInterference is one LS pod's interference over an interval.
type PodInterference struct {
	// Pod is "namespace/name".
	Pod string
	// Mean is the wait behind batch tasks per wake-up of the pod's tasks.
	Mean time.Duration
	// Waits is how many waits the pod's tasks had.
	Waits uint64
}

// consider makes w pod's wait over h (its waits, all or behind batch) if
// it is the worse one and the pod woke (all waits) at least MinPodWaits
// times.
func (w *PodInterference) consider(pod string, d Waits, h Hist) {
	if n := d.All.Count(); n >= MinPodWaits && (w.Pod == "" || h.Mean() > w.Mean) {
		*w = PodInterference{Pod: pod, Mean: h.Mean(), Waits: n}
	}
}

// MinPodWaits is how many waits in an interval make a pod's mean count for
// the worst pod: a pod that hardly woke has no meaningful mean.
const MinPodWaits = 20

// Value is the figure a target applies to: from eBPF, the worst LS pod's
// interference wait per wake-up (Worst.Mean), or the node's
// (InterferenceMean) when no pod woke MinPodWaits times; from schedstat,
// the mean wait per time slice (it cannot tell whom a task waited behind
// nor, summed over threads, which pod).
//
// Why a mean and not a quantile: what batch does to an LS service's tail is
// mostly queueing, not one long wait. Each LS wake-up that finds a batch
// task on its CPU waits a little; together those waits take CPU time from
// LS, its requests queue behind each other, and the request tail grows
// far more than any single wait (measured: at 60% LS load, request p99
// 5.3 → 32 ms while the interference wait p99 went 0.2–1.3 → 1.3–1.8 ms,
// but the mean wait per wake-up 20–40 → 90–160 µs). The mean is the CPU
// time LS lost behind batch tasks per wake-up: it moves with the harm.
func (s Signal) Value() time.Duration {
	return s.ValueOf(SignalInterference)
}

// The signals a target can apply to.
const (
	// SignalInterference is Value's: the worst LS pod's wait behind batch
	// per wake-up (eBPF).
	SignalInterference = "interference"
	// SignalWait is the worst LS pod's wait behind any task per wake-up
	// (eBPF; the node's mean when no pod woke MinPodWaits times): it also
	// sees LS queueing behind LS, which is how batch harms LS when batch
	// is SCHED_IDLE (cpu.idle) and is preempted at every LS wake-up, but
	// also counts waits behind daemons and kernel threads.
	SignalWait = "wait"
)

// ValueOf is the figure a target applies to for signal kind (Signal*;
// unknown: SignalInterference). From schedstat both are the mean wait per
// time slice.
func (s Signal) ValueOf(kind string) time.Duration {
	if kind == SignalWait && s.Source == SourceEBPF {
		if s.WorstWait.Pod != "" {
			return s.WorstWait.Mean
		}
		return s.Mean
	}
	if s.Source == SourceEBPF {
		if s.Worst.Pod != "" {
			return s.Worst.Mean
		}
		return s.InterferenceMean
	}
	return s.Mean
}

// Options configure a Collector.
type Options struct {
	// Enabled says whether to run (the feature gates).
	Enabled func() bool
	// Pods lists the node's pods (koordlet's states informer).
	Pods func() []*statesinformer.PodMeta
	// IsNodeManagerPod excludes the NodeManager pod (its cgroup may hold
	// YARN containers, batch work).
	IsNodeManagerPod func(*corev1.Pod) bool
	// YARNHierarchy returns the YARN hierarchy relative to the controller
	// mounts ("" unknown): its tasks are batch.
	YARNHierarchy func() string
	Interval      time.Duration
	Registerer    prometheus.Registerer
	// NoEBPF forces the schedstat source (tests).
	NoEBPF bool
}

// pod is one measured LS pod.
type pod struct {
	ns, name string
	slot     uint32
	keys     map[CgroupKey]bool
	dirs     []string
	last     Waits
	lastPSI  time.Duration
	psiOK    bool
}

// Collector measures the LS pods' CPU waits each interval.
type Collector struct {
	opts    Options
	metrics *metrics

	mu     sync.Mutex
	latest Signal
	ok     bool

	// Loop state (the loop's goroutine only).
	probe     *Probe
	source    string
	pods      map[string]*pod // by UID
	freeSlots []uint32
	sched     *schedstatSource
	said      logonce.Set
	// hid is the hierarchy id cgroups are keyed by (hidOK: read).
	hid   uint32
	hidOK bool
	// batch are the cgroups marked batch in the probe.
	batch map[CgroupKey]bool
}

// New returns a collector; its metrics are registered on opts.Registerer.
func New(opts Options) (*Collector, error) {
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	c := &Collector{opts: opts, metrics: m, pods: map[string]*pod{}, batch: map[CgroupKey]bool{}}
	for s := MaxSlots - 1; s >= 1; s-- { // slot 0 is never used: a zeroed start is no slot
		c.freeSlots = append(c.freeSlots, uint32(s))
	}
	return c, nil
}

// Name names the loop.
func (c *Collector) Name() string { return "YARN interference signal (LS CPU wait)" }

// Enabled follows the gates.
func (c *Collector) Enabled() bool { return c.opts.Enabled != nil && c.opts.Enabled() }

// SetInterval sets the interval (before Run).
func (c *Collector) SetInterval(d time.Duration) { c.opts.Interval = d }

// Latest returns the last signal; ok is false before the first or when it
// is older than three intervals (the loop stalled).
func (c *Collector) Latest() (Signal, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ok || time.Since(c.latest.At) > 3*c.opts.Interval {
		return c.latest, false
	}
	return c.latest, true
}

// Run opens the eBPF probe (or falls back to schedstat, said once) and
// measures every interval until stopCh closes.
func (c *Collector) Run(stopCh <-chan struct{}) {
	c.source = SourceSchedstat
	if !c.opts.NoEBPF {
		p, err := OpenProbe(system.GetCurrentCgroupVersion() == system.CgroupVersionV2)
		if err != nil {
			klog.Warningf("yarn: LS CPU wait: the eBPF probe cannot run here (%v); measuring the mean run-queue wait from /proc/<tid>/schedstat instead", err)
			var ve *ebpf.VerifierError
			if errors.As(err, &ve) {
				klog.V(4).Infof("yarn: LS CPU wait: the verifier's log: %+v", ve)
			}
		} else {
			c.probe, c.source = p, SourceEBPF
		}
	}
	if c.source == SourceSchedstat {
		c.sched = &schedstatSource{procRoot: system.Conf.ProcRootDir, last: map[int]Schedstat{}}
	}
	c.metrics.setSource(c.source)
	klog.Infof("yarn: LS CPU wait measured by %s every %v", c.source, c.opts.Interval)
	go func() {
		wait.Until(c.Collect, c.opts.Interval, stopCh)
		if c.probe != nil {
			c.probe.Close()
		}
	}()
}

// Role is what a pod is to the signal.
type Role int

const (
	// Other pods are neither measured nor interference (daemons, the
	// NodeManager, SYSTEM pods).
	Other Role = iota
	// LS pods' waits are measured.
	LS
	// Batch pods' tasks interfere.
	Batch
)

// PodRole says what p is to the signal: LS for koordinator QoS LSE, LSR or
// LS (a Guaranteed or Burstable pod without the label too, but not a
// DaemonSet's: a node agent is not the service to protect unless labelled
// so), Batch for BE (labelled, or BestEffort without the label), Other for
// the rest and for finished pods.
func PodRole(p *corev1.Pod) Role {
	if p == nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return Other
	}
	switch extension.GetPodQoSClassWithDefault(p) {
	case extension.QoSLSE, extension.QoSLSR, extension.QoSLS:
		if extension.GetPodQoSClassRaw(p) == extension.QoSNone && ownedByDaemonSet(p) {
			return Other
		}
		return LS
	case extension.QoSBE:
		return Batch
	}
	return Other
}

func ownedByDaemonSet(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}

// classify returns the running LS pods and the BE pods, without the
// NodeManager's.
func (c *Collector) classify() (ls, be []*corev1.Pod) {
	if c.opts.Pods == nil {
		return nil, nil
	}
	for _, pm := range c.opts.Pods() {
		if pm == nil || pm.Pod == nil {
			continue
		}
		r := PodRole(pm.Pod)
		if r == Other || c.opts.IsNodeManagerPod != nil && c.opts.IsNodeManagerPod(pm.Pod) {
			continue
		}
		if r == LS {
			ls = append(ls, pm.Pod)
		} else {
			be = append(be, pm.Pod)
		}
	}
	return ls, be
}

// cgroupRoot is the root of the hierarchy tasks are looked up in.
func cgroupRoot() string {
	if system.GetCurrentCgroupVersion() != system.CgroupVersionV2 {
		return filepath.Join(system.Conf.CgroupRootDir, "cpu")
	}
	return system.Conf.CgroupRootDir
}

// podDirs returns the pod's cgroup and its children's (the containers') in
// the cpu controller (v1) or the unified hierarchy (v2).
func podDirs(p *corev1.Pod) []string {
	dir := filepath.Join(cgroupRoot(), koordletutil.GetPodCgroupParentDir(p))
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	out := []string{dir}
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// sayOnce logs a warning once per key.
func (c *Collector) sayOnce(key, format string, args ...any) {
	if c.said.First(key) {
		klog.Warningf(format, args...)
	}
}

// Collect measures one interval.
func (c *Collector) Collect() {
	now := time.Now()
	v2 := system.GetCurrentCgroupVersion() == system.CgroupVersionV2
	if c.probe != nil && !c.hidOK {
		// Read once: the hierarchy id of a mounted controller does not change.
		hid, err := cgroups.HierarchyID(cgroups.Hierarchy{CgroupRoot: system.Conf.CgroupRootDir, ProcRoot: system.Conf.ProcRootDir, V2: v2}, cgroups.CPU)
		if err != nil {
			c.sayOnce("hid", "yarn: LS CPU wait: %v; no wait is measured", err)
			return
		}
		c.hid, c.hidOK = hid, true
	}
	hid := c.hid
	seen := map[string]bool{}
	var total Waits
	var schedWait time.Duration
	var schedSlices uint64
	nextSched := map[int]Schedstat{}
	lsPods, bePods := c.classify()
	if c.probe != nil {
		c.markBatch(bePods, hid)
	}
	var worst, worstWait PodInterference
	for _, p := range lsPods {
		uid := string(p.UID)
		seen[uid] = true
		lp := c.pods[uid]
		if lp == nil {
			if c.probe != nil && len(c.freeSlots) == 0 {
				c.sayOnce("slots", "yarn: LS CPU wait: more than %d LS pods; pod %s/%s and later ones are not measured", MaxSlots-1, p.Namespace, p.Name)
				continue
			}
			lp = &pod{ns: p.Namespace, name: p.Name, keys: map[CgroupKey]bool{}}
			if c.probe != nil {
				lp.slot = c.freeSlots[len(c.freeSlots)-1]
				c.freeSlots = c.freeSlots[:len(c.freeSlots)-1]
				// The slot's counters go on from a previous pod's: the
				// first reading is the baseline.
				lp.last, _ = c.probe.Read(lp.slot)
			}
			c.pods[uid] = lp
		}
		lp.dirs = podDirs(p)
		var d Waits
		if c.probe != nil {
			c.watch(lp, hid)
			cur, err := c.probe.Read(lp.slot)
			if err != nil {
				c.sayOnce("read", "yarn: LS CPU wait: %v", err)
				continue
			}
			d = cur.Sub(lp.last)
			lp.last = cur
			total.Add(d)
			c.metrics.observePod(lp.ns, lp.name, d.All.Sum, d.All.Count(), d.All.Quantile(0.99))
			c.metrics.interference.WithLabelValues(lp.ns, lp.name).Add(d.Others.Sum.Seconds())
			worst.consider(lp.ns+"/"+lp.name, d, d.Others)
			worstWait.consider(lp.ns+"/"+lp.name, d, d.All)
		} else {
			w, n := c.sched.delta(readTids(lp.dirs, v2), nextSched)
			schedWait += w
			schedSlices += n
			var mean time.Duration
			if n > 0 {
				mean = w / time.Duration(n)
			}
			c.metrics.observePod(lp.ns, lp.name, w, n, mean)
		}
		if v2 && len(lp.dirs) > 0 {
			c.psi(lp, now)
		}
	}
	if c.sched != nil {
		c.sched.last = nextSched
	}
	for uid, lp := range c.pods {
		if seen[uid] {
			continue
		}
		if c.probe != nil {
			for k := range lp.keys {
				_ = c.probe.Unwatch(k)
			}
			c.freeSlots = append(c.freeSlots, lp.slot)
		}
		c.metrics.forget(lp.ns, lp.name)
		delete(c.pods, uid)
	}
	sig := Signal{At: now, Interval: c.opts.Interval, Source: c.source, Pods: len(seen)}
	if c.probe != nil {
		sig.P99, sig.Mean, sig.Waits = total.All.Quantile(0.99), total.All.Mean(), total.All.Count()
		sig.InterferenceP99 = total.Others.Quantile(0.99)
		sig.P999, sig.InterferenceP999 = total.All.Quantile(0.999), total.Others.Quantile(0.999)
		sig.InterferenceMean = total.Others.Mean()
		sig.Worst, sig.WorstWait = worst, worstWait
	} else if schedSlices > 0 {
		sig.Mean, sig.Waits = schedWait/time.Duration(schedSlices), schedSlices
	}
	c.metrics.observeNode(sig)
	c.mu.Lock()
	c.latest, c.ok = sig, true
	c.mu.Unlock()
	klog.V(5).Infof("yarn: LS CPU wait: %d pods, %d waits, p99 %v, mean %v; behind batch: p99 %v, mean %v, worst pod %q %v (%s)", sig.Pods, sig.Waits, sig.P99, sig.Mean, sig.InterferenceP99, sig.InterferenceMean, sig.Worst.Pod, sig.Worst.Mean, sig.Source)
}

// watch makes the probe's keys of lp its cgroups now.
func (c *Collector) watch(lp *pod, hid uint32) {
	lp.keys = c.sync("watch", lp.dirs, hid, lp.keys,
		func(k CgroupKey) error { return c.probe.Watch(k, lp.slot) }, c.probe.Unwatch)
}

// markBatch makes the probe's batch cgroups the YARN hierarchy and the BE
// pods' cgroups now (the probe looks up a task's cgroup's ancestors).
func (c *Collector) markBatch(be []*corev1.Pod, hid uint32) {
	var dirs []string
	if c.opts.YARNHierarchy != nil {
		if h := c.opts.YARNHierarchy(); h != "" {
			dirs = append(dirs, filepath.Join(cgroupRoot(), h))
		}
	}
	for _, p := range be {
		dirs = append(dirs, filepath.Join(cgroupRoot(), koordletutil.GetPodCgroupParentDir(p)))
	}
	c.batch = c.sync("batch", dirs, hid, c.batch, c.probe.MarkBatch, c.probe.UnmarkBatch)
}

// sync makes the keys in the probe (had: those added before) the existing
// ones of dirs, with add and del, and returns them.
func (c *Collector) sync(what string, dirs []string, hid uint32, had map[CgroupKey]bool, add, del func(CgroupKey) error) map[CgroupKey]bool {
	keys := map[CgroupKey]bool{}
	for _, d := range dirs {
		var st unix.Stat_t
		if unix.Stat(d, &st) == nil {
			keys[CgroupKey{HierarchyID: hid, ID: st.Ino}] = true
		}
	}
	for k := range keys {
		if !had[k] {
			if err := add(k); err != nil {
				c.sayOnce(what, "yarn: LS CPU wait: %v", err)
				delete(keys, k)
			}
		}
	}
	for k := range had {
		if !keys[k] {
			_ = del(k)
		}
	}
	return keys
}

// psi exports the pod's cpu.pressure "some" stall share (cgroup v2).
func (c *Collector) psi(lp *pod, now time.Time) {
	b, err := os.ReadFile(filepath.Join(lp.dirs[0], "cpu.pressure"))
	if err != nil {
		c.sayOnce("psi", "yarn: LS CPU wait: no per-cgroup PSI here (%v); the cpu.pressure series is not exported", err)
		return
	}
	total, err := PSITotal(b)
	if err != nil {
		c.sayOnce("psi-parse", "yarn: LS CPU wait: %v", err)
		return
	}
	if lp.psiOK && total >= lp.lastPSI {
		c.metrics.observePSI(lp.ns, lp.name, float64(total-lp.lastPSI)/float64(c.opts.Interval))
	}
	lp.lastPSI, lp.psiOK = total, true
}

// Pods returns the measured pods' "namespace/name", sorted (tests, logs).
func (c *Collector) Pods() []string {
	var out []string
	for _, p := range c.pods {
		out = append(out, fmt.Sprintf("%s/%s", p.ns, p.name))
	}
	sort.Strings(out)
	return out
}
