package yarnevict

import (
	"time"

	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"

	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
	qmframework "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/framework"
	qmutil "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/plugins/util"

	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/kill"
)

// beTrigger is a slot's YARN-aware BE trigger (MemoryEvict or CPUEvict).
type beTrigger interface {
	Setup(*qmframework.Context)
	Cycle(time.Time) []Victim
}

// Slot is koordlet's memoryEvict or CPUEvict slot once a YARN gate takes
// it. Like upstream's strategy it runs, every interval and with one
// cooling, every trigger whose upstream gate is on, in upstream's order:
// the BE trigger (the YARN-aware one), the allocatable trigger (counting
// YARN with YARNAllocatableEvict), then the usage trigger (upstream's,
// ported). No upstream trigger is silenced by a YARN gate.
type Slot struct {
	kind     AllocKind
	opts     *qmframework.Options
	be       beTrigger
	alloc    *AllocatableEvict
	interval time.Duration
	cooling  time.Duration
	executor qmutil.EvictionExecutor
	// gates are upstream's BE, allocatable and usage gates of the slot.
	gates     [3]featuregate.Feature
	lastEvict time.Time
	metrics   *Metrics
	nodeName  string
}

// slotGates returns upstream's trigger gates of kind.
func slotGates(kind AllocKind) [3]featuregate.Feature {
	if kind == AllocCPU {
		return [3]featuregate.Feature{koordfeatures.BECPUEvict, koordfeatures.CPUAllocatableEvict, koordfeatures.CPUEvict}
	}
	return [3]featuregate.Feature{koordfeatures.BEMemoryEvict, koordfeatures.MemoryAllocatableEvict, koordfeatures.MemoryEvict}
}

// useSlot decides whether the slot's YARN version replaces upstream's
// strategy: when the YARN-aware BE trigger is on, or when YARN arbitration
// (YARNAllocatableEvict) is on and upstream's BE trigger is off. With
// YARNAllocatableEvict on, upstream's BE trigger on and the YARN-aware BE
// trigger off, upstream's strategy stays (its BE trigger would otherwise
// change) and one line says that YARN is not counted.
func useSlot(kind AllocKind, yarnBE featuregate.Feature) bool {
	if features.Enabled(yarnBE) {
		return true
	}
	if !features.Enabled(features.YARNAllocatableEvict) {
		return false
	}
	if koordfeatures.DefaultKoordletFeatureGate.Enabled(slotGates(kind)[0]) {
		klog.Warningf("yarn: %s needs %s while %s is on; koordlet's own %s strategy runs and its allocatable trigger does not count YARN",
			features.YARNAllocatableEvict, yarnBE, slotGates(kind)[0], kind.Reason())
		return false
	}
	return true
}

// newSlot returns the slot; be may be nil (YARN-aware BE trigger off).
func newSlot(kind AllocKind, deps Deps, opts *qmframework.Options, be beTrigger, interval, cooling time.Duration) *Slot {
	return &Slot{kind: kind, opts: opts, be: be, interval: interval, cooling: cooling, gates: slotGates(kind),
		metrics: deps.Metrics, nodeName: deps.NodeName,
		alloc: &AllocatableEvict{Kind: kind, Deps: deps, Opts: opts,
			CountYARN: func() bool { return features.Enabled(features.YARNAllocatableEvict) }}}
}

func gateOn(f featuregate.Feature) bool { return koordfeatures.DefaultKoordletFeatureGate.Enabled(f) }

// Enabled is upstream's: any trigger gate of the slot, and an interval.
func (s *Slot) Enabled() bool {
	return (gateOn(s.gates[0]) || gateOn(s.gates[1]) || gateOn(s.gates[2])) && s.interval > 0
}

// Setup takes koordlet's pod eviction executor (with the NodeManager guard).
func (s *Slot) Setup(ctx *qmframework.Context) {
	s.executor = qmutil.InitializeEvictionExecutor(ctx.Evictor, ctx.OnlyEvictByAPI)
	s.alloc.Executor = s.executor
	if s.be != nil {
		s.be.Setup(ctx)
	}
}

// Run evaluates every interval until stopCh closes.
func (s *Slot) Run(stopCh <-chan struct{}) {
	var on []string
	for _, g := range s.gates {
		if gateOn(g) {
			on = append(on, string(g))
		}
	}
	klog.Infof("yarn: the %s slot runs the triggers %v (YARN-aware BE: %v, YARN counted in allocatable: %v)",
		s.kind.Reason(), on, s.be != nil, s.alloc.CountYARN())
	w, _ := s.be.(waker)
	st, _ := s.be.(stopper)
	go func() {
		runLoop(stopCh, s.interval, s.Cycle, w, func(cause string) {
			if s.metrics != nil {
				s.metrics.Wakeups.WithLabelValues(s.nodeName, s.beReason(), cause).Inc()
			}
		})
		if st != nil {
			st.Stopped()
		}
	}()
}

// stopper is a BE trigger that gives back what it holds when its loop
// ends (koordlet stopping).
type stopper interface{ Stopped() }

// beReason names the slot's BE trigger in the wake-up counts.
func (s *Slot) beReason() string {
	if s.kind == AllocCPU {
		return kill.ReasonBECPUEvict
	}
	return kill.ReasonBEMemoryEvict
}

// reliever is a BE trigger with rungs before the kill (MemoryEvict's
// memory relief), run at every check, a cooling's too.
type reliever interface{ Relieve(time.Time) }

// Cycle runs the enabled triggers once. During the cooling no trigger
// kills, but the BE trigger's relief rungs still act: they kill nothing,
// and throttling as pressure rises (or giving memory.high back as headroom
// returns) must not wait for a kill's cooling.
func (s *Slot) Cycle(now time.Time) {
	if now.Before(s.lastEvict.Add(s.cooling)) {
		if r, ok := s.be.(reliever); ok && gateOn(s.gates[0]) {
			r.Relieve(now)
		}
		return
	}
	si := s.opts.StatesInformer
	evicted := false
	var released int64
	if s.be != nil && gateOn(s.gates[0]) {
		victims := s.be.Cycle(now)
		for _, v := range victims {
			released += v.MemoryUsed
		}
		// Memory released by YARN kills is free when they return: no
		// cooling for it (see ReleasesLater); CPU satisfaction is read from
		// the collector's samples, so CPU evictions cool as upstream's.
		evicted = len(victims) > 0 && (s.kind == AllocCPU || ReleasesLater(victims))
	}
	node, slo := si.GetNode(), si.GetNodeSLO()
	if node == nil || slo == nil {
		return
	}
	if disabled, err := koordfeatures.IsFeatureDisabled(slo, s.gates[1]); err != nil || disabled {
		s.finish(now, evicted)
		return
	}
	if gateOn(s.gates[1]) {
		done, _ := s.alloc.Cycle(node, slo)
		evicted = evicted || len(done) > 0
	}
	if gateOn(s.gates[2]) {
		if s.kind == AllocCPU {
			released = 0 // upstream's CPU BE trigger releases requests, the usage trigger usage
		}
		task, err := usageTask(s.kind, s.opts, slo.Spec.ResourceUsedThresholdWithBE, node, si.GetAllPods(), released)
		switch {
		case err != nil:
			klog.V(4).Infof("yarn: upstream's %s trigger skipped, invalid config: %v", s.gates[2], err)
		case task != nil:
			if _, ok := qmutil.KillAndEvictPods(s.executor, node, []*qmutil.EvictTaskInfo{task}); ok {
				evicted = true
			}
		}
	}
	s.finish(now, evicted)
}

func (s *Slot) finish(now time.Time, evicted bool) {
	if evicted {
		s.lastEvict = now
	}
}

// BE returns the slot's YARN-aware BE trigger (nil when off).
func (s *Slot) BE() any { return s.be }
