package yarnevict

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/metriccache"
	qmframework "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/framework"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/helpers"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/plugins/memoryevict"
	qmutil "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/plugins/util"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	koordletutil "github.com/koordinator-sh/koordinator/pkg/koordlet/util"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/logonce"
	"github.com/koordlet-yarn/koordlet-yarn/framework/nodemem"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/growth"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/kill"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/memtrigger"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/relief"
)

// releaseBufferPercent is upstream's default gap between the threshold and
// the level eviction releases down to.
const releaseBufferPercent = 2

// MemoryEvict is the YARN-aware BE memory evict strategy. It takes koordlet's
// "memoryEvict" slot when YARNBEMemoryEvict is on: above NodeSLO's
// memoryEvictThresholdPercent it releases node memory down to
// memoryEvictLowerPercent from one ranked list of BE pods and YARN
// containers, protecting the NodeManager pod and the ApplicationMasters.
// Unlike upstream it reads node and container memory at decision time, not
// the collector's last samples (up to one collect interval old).
type MemoryEvict struct {
	deps      Deps
	opts      *qmframework.Options
	interval  time.Duration
	cooling   time.Duration
	executor  qmutil.EvictionExecutor
	reader    *cgroups.UsageReader
	procs     *cgroups.ProcessMemoryReader
	lastEvict time.Time
	// said holds what was logged once: the per-process accounting
	// announced ("processes"), the trigger's arming failure ("arm").
	said logonce.Set
	// trigger wakes the strategy at the crossing (YARNMemoryEvictTrigger);
	// used only by the strategy's own goroutine.
	wantTrigger bool
	trigger     *memtrigger.Trigger
	// triggerKinds is read from other goroutines.
	triggerKinds atomic.Pointer[[]string]
}

// NewMemoryEvictFactory returns the factory for koordlet's "memoryEvict"
// slot: the YARN slot (the YARN-aware BE trigger when YARNBEMemoryEvict is
// on, the allocatable trigger counting YARN with YARNAllocatableEvict, and
// upstream's usage trigger) when a YARN gate takes it (see useSlot; checked
// when koordlet builds its daemon, after the flags are parsed), upstream's
// strategy otherwise.
func NewMemoryEvictFactory(deps Deps) qmframework.QOSStrategyFactory {
	return func(opts *qmframework.Options) qmframework.QOSStrategy {
		if !useSlot(AllocMemory, features.YARNBEMemoryEvict) {
			return memoryevict.New(opts)
		}
		interval := time.Duration(opts.Config.MemoryEvictIntervalSeconds) * time.Second
		cooling := time.Duration(opts.Config.MemoryEvictCoolTimeSeconds) * time.Second
		var be beTrigger
		if features.Enabled(features.YARNBEMemoryEvict) {
			be = &MemoryEvict{deps: deps, opts: opts, interval: interval, cooling: cooling,
				wantTrigger: features.Enabled(features.YARNMemoryEvictTrigger)}
		}
		return newSlot(AllocMemory, deps, opts, be, interval, cooling)
	}
}

// Enabled needs koordlet's BEMemoryEvict gate too: one knob for operators.
func (m *MemoryEvict) Enabled() bool {
	return koordfeatures.DefaultKoordletFeatureGate.Enabled(koordfeatures.BEMemoryEvict) && m.interval > 0
}

// Setup takes koordlet's pod eviction executor (with our NodeManager guard).
func (m *MemoryEvict) Setup(ctx *qmframework.Context) {
	m.executor = qmutil.InitializeEvictionExecutor(ctx.Evictor, ctx.OnlyEvictByAPI)
}

// Run evicts every interval until stopCh closes, and, with
// YARNMemoryEvictTrigger, also as soon as node memory crosses the threshold
// (the Slot runs Cycle itself, with the same wake-ups; Run serves a
// strategy used on its own).
func (m *MemoryEvict) Run(stopCh <-chan struct{}) {
	go func() {
		runLoop(stopCh, m.interval, func(now time.Time) { m.Cycle(now) }, m, func(cause string) {
			if m.deps.Metrics != nil {
				m.deps.Metrics.Wakeups.WithLabelValues(m.deps.NodeName, kill.ReasonBEMemoryEvict, cause).Inc()
			}
		})
		m.Stopped()
	}()
}

// Stopped gives back the memory relief's throttle (koordlet stopping: a
// memory.high left low would stall batch with nobody to raise it; the
// next koordlet also releases it from the record at its first check).
// The soft limit stays: it only orders global reclaim.
func (m *MemoryEvict) Stopped() {
	if m.deps.Relief != nil {
		m.deps.Relief.Release("koordlet stops", false)
	}
}

// ensureTrigger opens the event trigger (YARNMemoryEvictTrigger) once the
// YARN hierarchy is known: thresholds on the kubepods memory cgroup and on
// the YARN hierarchy's when it lies outside kubepods.
func (m *MemoryEvict) ensureTrigger() {
	if !m.wantTrigger || m.trigger != nil {
		return
	}
	kubepods := strings.TrimSuffix(koordletutil.GetPodQoSRelativePath(corev1.PodQOSGuaranteed), "/")
	dirs := []string{kubepods}
	if m.deps.Hierarchy != nil {
		h := strings.Trim(m.deps.Hierarchy(), "/")
		if h == "" {
			return // not known yet
		}
		if !strings.HasPrefix(h+"/", kubepods+"/") {
			dirs = append(dirs, h)
		}
	}
	m.trigger = memtrigger.New(memtrigger.Options{CgroupRoot: system.Conf.CgroupRootDir, ProcRoot: system.Conf.ProcRootDir,
		V2: system.GetCurrentCgroupVersion() == system.CgroupVersionV2, MemoryDirs: dirs})
	kinds := m.trigger.Kinds()
	m.triggerKinds.Store(&kinds)
}

// TriggerKinds lists the event trigger's sources in use: nil before the
// trigger is opened (or without YARNMemoryEvictTrigger), empty when the
// node has none (the periodic check alone).
func (m *MemoryEvict) TriggerKinds() []string {
	if k := m.triggerKinds.Load(); k != nil {
		return *k
	}
	return nil
}

// Wake receives when the event trigger fired (nil without a trigger). Call
// it from the goroutine that runs Cycle.
func (m *MemoryEvict) Wake() <-chan struct{} {
	if m.trigger == nil {
		return nil
	}
	return m.trigger.C()
}

// CloseTrigger stops the event trigger; call it from the goroutine that
// runs Cycle, when it ends.
func (m *MemoryEvict) CloseTrigger() {
	if m.trigger != nil {
		_ = m.trigger.Close()
		m.trigger = nil
	}
}

// memoryCheck is one check's reading: node memory against NodeSLO's
// thresholds, and what the relief rungs ask.
type memoryCheck struct {
	node              *corev1.Node
	need, used, level int64
	escalation        relief.Escalation
}

// check reads node memory against NodeSLO's thresholds and runs the relief
// rungs at those levels; ok is false when there is nothing to evict for
// (no node or NodeSLO yet, BEMemoryEvict off in NodeSLO, no valid
// threshold: the rungs give back what they hold).
func (m *MemoryEvict) check() (c memoryCheck, ok bool) {
	si := m.opts.StatesInformer
	node, slo := si.GetNode(), si.GetNodeSLO()
	if node == nil || slo == nil {
		return c, false
	}
	if disabled, err := koordfeatures.IsFeatureDisabled(slo, koordfeatures.BEMemoryEvict); err != nil || disabled {
		m.disarm()
		m.relieve(0, 0, 0, 0)
		return c, false
	}
	need, used, level, lowerLevel, err := m.need(slo.Spec.ResourceUsedThresholdWithBE, node)
	if err != nil {
		m.disarm()
		m.relieve(0, 0, 0, 0)
		klog.V(4).Infof("yarn: memory evict skipped: %v", err)
		return c, false
	}
	esc := m.relieve(used, level, lowerLevel, node.Status.Capacity.Memory().Value())
	return memoryCheck{node: node, need: need, used: used, level: level, escalation: esc}, true
}

// Relieve runs the relief rungs alone (YARNMemoryRelief): the slot calls
// it at the checks of a kill's cooling, when no trigger may kill. The
// rungs kill nothing themselves, and throttling as pressure rises, giving
// memory.high back as headroom returns, must not wait for the cooling.
func (m *MemoryEvict) Relieve(time.Time) { m.check() }

// Cycle runs one evaluation; it returns what it evicted. The relief rungs
// act at every check, its own cooling too (see also Relieve).
func (m *MemoryEvict) Cycle(now time.Time) []Victim {
	c, ok := m.check()
	if !ok || now.Before(m.lastEvict.Add(m.cooling)) {
		return nil
	}
	node, need, used, level := c.node, c.need, c.used, c.level
	if need <= 0 && c.escalation.Release > 0 {
		return m.evictForHold(now, node, c.escalation)
	}
	if need <= 0 {
		m.arm(used, level)
		return nil
	}
	decideStart := time.Now()
	victims := m.victims(m.opts.StatesInformer.GetAllPods())
	Rank(victims, MemoryUsage)
	// Planned for the growth of what stays until the release is done and
	// the next check (ProjectNeed): a grower spared now would take the
	// node across again a moment later.
	var grace time.Duration
	if k := m.killer(); k != nil {
		grace = k.Grace
	}
	projected, measure := ProjectNeed(victims, need, growth.ReleaseHorizon(grace, m.interval), MemoryUsage)
	evicted, released, attempted := m.evict(node, victims, projected, measure, func(covered int64) {
		// The times say where a reaction goes: reading the candidates
		// and planning, then the kills.
		klog.Infof("yarn: node memory above the BE evict threshold: need to release %dMi (%dMi with the growth expected before the release is done); %d candidates, the plan covers %dMi (decided in %v)",
			need>>20, projected>>20, len(victims), covered>>20, time.Since(decideStart).Round(time.Microsecond))
	})
	if attempted {
		klog.V(2).Infof("yarn: memory evict done %v after the check began: %d evicted, %dMi released", time.Since(now).Round(time.Millisecond), len(evicted), released>>20)
	}
	if attempted && m.deps.Metrics != nil {
		m.deps.Metrics.AddNeeded(m.deps.NodeName, kill.ReasonBEMemoryEvict, "memory", need)
	}
	if attempted {
		m.deps.Relief.Evicted(false) // the node changed: a throttle's hold is measured anew
	}
	if ReleasesLater(evicted) {
		m.lastEvict = now
	}
	if attempted && released < projected {
		klog.Warningf("yarn: memory evict released %dMi of the %dMi needed (with the growth expected)", released>>20, projected>>20)
	}
	return evicted
}

// relieve runs the memory relief rungs before the kill (YARNMemoryRelief):
// at node usage used, the threshold and lower levels and capacity (0: no
// threshold, the throttle given back). It returns the kill they ask for.
func (m *MemoryEvict) relieve(used, level, lower, capacity int64) relief.Escalation {
	if m.deps.Relief == nil || m.deps.Hierarchy == nil {
		return relief.Escalation{}
	}
	return m.deps.Relief.Check(m.deps.Hierarchy(), relief.Levels{Used: used, Threshold: level, Lower: lower, Capacity: capacity})
}

// evictForHold kills YARN containers, ranked and planned as at the
// threshold, for the throttle's hold at its floor (Escalation): only YARN
// containers (the throttle holds their root, and only their memory
// relieves it), each victim's Why (its audit record and Event) saying so.
func (m *MemoryEvict) evictForHold(now time.Time, node *corev1.Node, esc relief.Escalation) []Victim {
	var victims []Victim
	for _, v := range m.victims(m.opts.StatesInformer.GetAllPods()) {
		if v.Container != nil {
			v.Trigger = esc.Why
			victims = append(victims, v)
		}
	}
	Rank(victims, MemoryUsage)
	evicted, released, attempted := m.evict(node, victims, esc.Release, MemoryUsage, func(covered int64) {
		klog.Infof("yarn: memory evict below the threshold: %s; need to release %dMi of YARN containers; %d candidates, the plan covers %dMi",
			esc.Why, esc.Release>>20, len(victims), covered>>20)
	})
	// Measured anew even when nothing could be killed: asked again a bound
	// later, not at every check.
	m.deps.Relief.Evicted(attempted)
	if attempted {
		if m.deps.Metrics != nil {
			m.deps.Metrics.AddNeeded(m.deps.NodeName, kill.ReasonBEMemoryEvict, "memory", esc.Release)
		}
		if released < esc.Release {
			klog.Warningf("yarn: memory evict for the throttle's hold released %dMi of the %dMi needed", released>>20, esc.Release>>20)
		}
	}
	if ReleasesLater(evicted) {
		m.lastEvict = now
	}
	return evicted
}

// ReleasesLater reports whether some of the evicted release their memory
// after the check that evicted them: a pod, evicted through the API and
// ended by the kubelet. The cooling (memoryEvictCoolTimeSeconds) exists for
// those: it keeps the next checks from taking more victims before the
// first ones' memory is free. A YARN container's eviction is reported only
// once its threads are gone (each frees its address space before it leaves
// the cgroup; MeasureRelease waits up to ReleaseWait), so what it released
// is free when the next check reads the node's memory (which counts the
// per-CPU free lists as free, see nodeMemoryUsed): after a cycle
// that evicted only YARN containers, the next check (event or interval)
// comes without the cooling and evicts again only if memory is still above
// the threshold. With the event trigger a first plan that fell short (the
// node's memory moved while the victims were killed) is thus completed at
// the next interval, not one cooling later.
func ReleasesLater(evicted []Victim) bool {
	for _, v := range evicted {
		if v.Pod != nil || v.Holding > 0 {
			return true // a pod, or a container whose exiting processes still hold memory
		}
	}
	return false
}

// killer returns the YARN container killer (nil before the hierarchy is
// known).
func (m *MemoryEvict) killer() *kill.Killer {
	if m.deps.Killer == nil {
		return nil
	}
	return m.deps.Killer()
}

// arm sets the event trigger (if any) to wake at the threshold level.
func (m *MemoryEvict) arm(used, level int64) {
	m.ensureTrigger()
	if m.trigger == nil {
		return
	}
	if err := m.trigger.Arm(used, level); err != nil && m.said.First("arm") {
		klog.Warningf("yarn: memory evict trigger: %v; the periodic check goes on", err)
	}
	if kinds := m.trigger.Kinds(); !slices.Equal(kinds, m.TriggerKinds()) {
		m.triggerKinds.Store(&kinds) // a cgroup made after koordlet started
	}
}

func (m *MemoryEvict) disarm() {
	if m.trigger != nil {
		m.trigger.Disarm()
	}
}

// need returns the bytes to release to bring node memory down to the lower
// percent (0 below the threshold), with the node memory used now and the
// threshold and lower levels in bytes.
func (m *MemoryEvict) need(cfg *slov1alpha1.ResourceThresholdStrategy, node *corev1.Node) (need, used, level, lowerLevel int64, err error) {
	if cfg == nil || cfg.MemoryEvictThresholdPercent == nil || *cfg.MemoryEvictThresholdPercent < 0 {
		return 0, 0, 0, 0, fmt.Errorf("memoryEvictThresholdPercent not set")
	}
	threshold := *cfg.MemoryEvictThresholdPercent
	lower := threshold - releaseBufferPercent
	if cfg.MemoryEvictLowerPercent != nil {
		lower = *cfg.MemoryEvictLowerPercent
	}
	if lower >= threshold {
		return 0, 0, 0, 0, fmt.Errorf("memoryEvictLowerPercent %d must be below the threshold %d", lower, threshold)
	}
	capacity := node.Status.Capacity.Memory().Value()
	if capacity <= 0 {
		return 0, 0, 0, 0, fmt.Errorf("node memory capacity unknown")
	}
	used, err = m.nodeMemoryUsed()
	if err != nil {
		return 0, 0, 0, 0, err
	}
	return NeedToRelease(used, capacity, threshold, lower), used, ThresholdLevel(capacity, threshold), capacity * max(lower, 0) / 100, nil
}

// ThresholdLevel is the node memory used, in bytes, at which NeedToRelease
// starts to ask for a release: the first byte count at or above threshold
// percent of capacity.
func ThresholdLevel(capacity, threshold int64) int64 {
	return (capacity*threshold + 99) / 100
}

// nodeMemoryUsed is the node's memory usage with koordlet's definition
// (MemTotal - MemAvailable), less the free pages parked on the per-CPU
// lists (framework/nodemem: since Linux 6.7 those hold hundreds of MiB for
// seconds after a large free, which MemAvailable does not count: read
// right after a kill, koordlet's usage still shows the victim's memory and
// a second container would go), read now, so that the need and the
// candidates' usage (also read now) describe the same instant and the
// crossing is seen within one evict interval; the collector's last sample
// is the fallback.
func (m *MemoryEvict) nodeMemoryUsed() (int64, error) {
	if u, err := nodemem.Read(system.Conf.ProcRootDir); err == nil {
		return u.Used(), nil
	}
	meta, err := metriccache.NodeMemoryUsageMetric.BuildQueryMeta(nil)
	if err != nil {
		return 0, err
	}
	used, err := helpers.CollectorNodeMetricLast(m.opts.MetricCache, meta, m.opts.MetricAdvisorConfig.CollectResUsedInterval)
	if err != nil {
		return 0, fmt.Errorf("node memory usage: %w", err)
	}
	return int64(used), nil
}

// NeedToRelease returns the bytes to release when used (of capacity) is at
// or above threshold percent, down to lower percent; 0 otherwise.
func NeedToRelease(used, capacity, threshold, lower int64) int64 {
	if capacity <= 0 || used*100 < capacity*threshold {
		return 0
	}
	need := used - capacity*lower/100
	if need < 0 {
		return 0
	}
	return need
}

// victims lists the candidates with their memory usage, request, recent
// growth (from the collector's samples in koordlet's metric cache), the
// CPU-seconds they have spent, and whether they cause the pressure.
func (m *MemoryEvict) victims(pods []*statesinformer.PodMeta) []Victim {
	interval := m.opts.MetricAdvisorConfig.CollectResUsedInterval
	now := time.Now()
	podMem := helpers.CollectAllPodMetricsLast(m.opts.StatesInformer, m.opts.MetricCache, metriccache.PodMemUsageMetric, interval)
	hist := growth.NewHistory(m.opts.MetricCache, now, growth.Window)
	defer hist.Close()
	return candidates(m.deps, m.executor, pods,
		func(pod *corev1.Pod) Victim {
			v := PodVictim(pod, int64(podMem[string(pod.UID)]), 0)
			noteGrowth(&v, hist.Values(metriccache.PodMemUsageMetric, metriccache.MetricPropertiesFunc.Pod(string(pod.UID))), now)
			v.CPUSeconds = podCPUSeconds(m.opts.CgroupReader, pod)
			MarkMemoryCause(&v)
			return v
		},
		func(c *store.Container, nmPriority int64) (Victim, bool) {
			mem, ok := m.containerMemory(c, interval)
			v := ContainerVictim(c, nmPriority, mem, 0)
			noteGrowth(&v, hist.Values(metriccache.ContainerMemUsageMetric, metriccache.MetricPropertiesFunc.Container(c.Name)), now)
			v.CPUSeconds = containerCPUSeconds(m.usageReader(), c)
			MarkMemoryCause(&v)
			return v, ok
		})
}

// usageReader returns the reader of container cgroup files (nothing kept
// between decisions).
func (m *MemoryEvict) usageReader() *cgroups.UsageReader {
	if m.reader == nil {
		m.reader = newUsageReader()
	}
	return m.reader
}

// containerMemory is the container's memory usage now, read at decision
// time (a container started a moment ago has no sample yet, and it may be
// the one that caused the pressure): from its own memory cgroup, or, for a
// container without one (CPU-only YARN: its memory is charged to the
// NodeManager pod's cgroup), the sum of its processes' RssAnon + RssShmem;
// else the collector's last sample.
func (m *MemoryEvict) containerMemory(c *store.Container, interval time.Duration) (int64, bool) {
	switch c.Cgroups.MemoryAccounting() {
	case cgroups.MemoryByCgroup:
		if st, err := m.usageReader().MemoryStat(c.Cgroups[cgroups.Memory].Dir); err == nil {
			return m.chargedElsewhere(c, st.Usage()), true
		}
	case cgroups.MemoryByProcesses:
		if r := m.processReader(); r != nil {
			pm, err := r.Read(cgroups.CPU, c.Cgroups[cgroups.CPU].Dir)
			// Unless no listed process could be proven the container's.
			if err == nil && (pm.Processes > 0 || pm.Gone+pm.Elsewhere == 0) {
				if m.said.First("processes") {
					klog.Infof("yarn: memory evict measures YARN containers without a memory cgroup (e.g. %s, charged to the NodeManager pod's memory cgroup %s) as the sum of their processes' RssAnon + RssShmem, read at decision time",
						c.Name, c.Cgroups[cgroups.Memory].Dir)
				}
				return pm.Usage(), true
			}
		}
	}
	meta, err := metriccache.ContainerMemUsageMetric.BuildQueryMeta(metriccache.MetricPropertiesFunc.Container(c.Name))
	if err != nil {
		return 0, false
	}
	mem, err := helpers.CollectContainerResMetricLast(m.opts.MetricCache, meta, interval)
	if err != nil {
		return 0, false
	}
	return int64(mem), true
}

// chargedElsewhere is the memory of a container whose memory cgroup is
// charged charge: that, unless its processes were moved in holding memory
// that stays charged to the cgroup they left (Deps.Charges), then its
// processes' memory until its charge is its own (cgroups.TrueMemory).
func (m *MemoryEvict) chargedElsewhere(c *store.Container, charge int64) int64 {
	left, ok := m.deps.Charges.Get(c.Name)
	if !ok || left <= cgroups.OwnChargeSlack {
		return charge
	}
	r := m.processReader()
	if r == nil {
		return charge
	}
	pm, err := r.Read(cgroups.CPU, c.Cgroups[cgroups.CPU].Dir)
	if err != nil || pm.Processes == 0 {
		return charge
	}
	return cgroups.TrueMemory(charge, pm.Usage(), left).Usage
}

// processReader returns the reader of containers' processes (nothing kept
// between decisions), made once the hierarchy is known.
func (m *MemoryEvict) processReader() *cgroups.ProcessMemoryReader {
	if m.procs != nil {
		return m.procs
	}
	var h cgroups.Hierarchy
	switch {
	case m.deps.CgroupHierarchy != nil:
		var ok bool
		if h, ok = m.deps.CgroupHierarchy(); !ok {
			return nil
		}
	case m.deps.Killer != nil:
		k := m.deps.Killer()
		if k == nil {
			return nil
		}
		h = k.H
	default:
		return nil
	}
	m.procs = cgroups.NewProcessMemoryReader(h).NoKeep()
	return m.procs
}

// evict evicts from the ranked victims until need is released, measuring
// what each killed container released (heldMemory); planned is told what
// the plan covers before the first eviction.
func (m *MemoryEvict) evict(node *corev1.Node, ranked []Victim, need int64, measure func(*Victim) int64, planned func(covered int64)) ([]Victim, int64, bool) {
	return execute(m.deps, m.executor, m.opts.EventRecorder, m.opts.StatesInformer.GetAllPods(), node, ranked, need, measure,
		order{reason: kill.ReasonBEMemoryEvict, held: m.heldMemory, podMessage: func(v *Victim) string {
			return fmt.Sprintf("node memory above the BE evict threshold; pod releases %dMi; chosen because: %s", v.MemoryUsed>>20, v.Why)
		}}, planned)
}

// noteGrowth sets v.MemoryGrowth from its recent samples and its usage now.
func noteGrowth(v *Victim, recent []float64, now time.Time) {
	startedWithin := !v.Started.IsZero() && now.Sub(v.Started) < growth.Window
	if g, ok := growth.FromSamples(recent, v.MemoryUsed, startedWithin); ok {
		v.MemoryGrowth = g
	}
}
