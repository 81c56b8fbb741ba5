package yarnevict

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	apiext "github.com/koordinator-sh/koordinator/apis/extension"
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/metriccache"
	ma "github.com/koordinator-sh/koordinator/pkg/koordlet/metricsadvisor/framework"
	qmframework "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/framework"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	mockstatesinformer "github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer/mockstatesinformer"

	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/rmrelease"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/kill"
)

// reasonExecutor records pod evictions with their reasons.
type reasonExecutor struct {
	mu      sync.Mutex
	evicted []string
}

func (r *reasonExecutor) Evict(pod *corev1.Pod, _ *corev1.Node, reason, _ string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evicted = append(r.evicted, pod.Name+":"+reason)
	return true
}

func (r *reasonExecutor) IsPodEvicted(*corev1.Pod) bool { return false }

func setGates(t *testing.T, gates map[string]bool) {
	all := map[string]bool{}
	for _, g := range []string{string(koordfeatures.BEMemoryEvict), string(koordfeatures.MemoryEvict), string(koordfeatures.MemoryAllocatableEvict),
		string(koordfeatures.BECPUEvict), string(koordfeatures.CPUEvict), string(koordfeatures.CPUAllocatableEvict),
		string(features.YARNBEMemoryEvict), string(features.YARNBECPUEvict), string(features.YARNAllocatableEvict),
		string(features.YARNRMNodeResourceSync), string(features.YARNRMPreemption)} {
		all[g] = false
	}
	for g, v := range gates {
		all[g] = v
	}
	require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(all))
	t.Cleanup(func() {
		off := map[string]bool{}
		for g := range all {
			off[g] = false
		}
		_ = koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(off)
	})
}

func TestUseSlot(t *testing.T) {
	cases := []struct {
		name  string
		gates map[string]bool
		want  bool
	}{
		{"no YARN gate: upstream", map[string]bool{string(koordfeatures.BEMemoryEvict): true, string(koordfeatures.MemoryAllocatableEvict): true}, false},
		{"YARN BE", map[string]bool{string(features.YARNBEMemoryEvict): true, string(koordfeatures.MemoryEvict): true}, true},
		{"YARN arbitration without upstream BE", map[string]bool{string(features.YARNAllocatableEvict): true, string(koordfeatures.MemoryAllocatableEvict): true}, true},
		{"YARN arbitration with upstream BE but not YARN BE: upstream", map[string]bool{string(features.YARNAllocatableEvict): true,
			string(koordfeatures.BEMemoryEvict): true}, false},
		{"both YARN gates", map[string]bool{string(features.YARNAllocatableEvict): true, string(features.YARNBEMemoryEvict): true,
			string(koordfeatures.BEMemoryEvict): true}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			setGates(t, tc.gates)
			assert.Equal(t, tc.want, useSlot(AllocMemory, features.YARNBEMemoryEvict))
			_, isSlot := NewMemoryEvictFactory(Deps{Store: store.New()})(&qmframework.Options{Config: qmframework.NewDefaultConfig(),
				MetricAdvisorConfig: ma.NewDefaultConfig()}).(*Slot)
			assert.Equal(t, tc.want, isSlot)
		})
	}
}

type slotEnv struct {
	slot *Slot
	exec *reasonExecutor
	node *corev1.Node
}

func newSlotEnv(t *testing.T, kind AllocKind, node *corev1.Node, slo *slov1alpha1.NodeSLO, pods []*corev1.Pod, st *store.Store,
	samples func(add func(metriccache.MetricResource, map[metriccache.MetricProperty]string, float64)), mods ...func(*Deps)) *slotEnv {
	ctrl := gomock.NewController(t)
	si := mockstatesinformer.NewMockStatesInformer(ctrl)
	var pms []*statesinformer.PodMeta
	for _, p := range pods {
		pms = append(pms, &statesinformer.PodMeta{Pod: p})
	}
	si.EXPECT().GetNode().Return(node).AnyTimes()
	si.EXPECT().GetNodeSLO().Return(slo).AnyTimes()
	si.EXPECT().GetAllPods().Return(pms).AnyTimes()
	cfg := metriccache.NewDefaultConfig()
	cfg.TSDBPath = t.TempDir()
	cfg.TSDBEnablePromMetrics = false
	mc, err := metriccache.NewMetricCache(cfg)
	require.NoError(t, err)
	now := time.Now()
	var ss []metriccache.MetricSample
	samples(func(kind metriccache.MetricResource, props map[metriccache.MetricProperty]string, v float64) {
		s, err := kind.GenerateSample(props, now, v)
		require.NoError(t, err)
		ss = append(ss, s)
	})
	app := mc.Appender()
	require.NoError(t, app.Append(ss))
	require.NoError(t, app.Commit())
	opts := &qmframework.Options{Config: qmframework.NewDefaultConfig(), StatesInformer: si, MetricCache: mc,
		EventRecorder: record.NewFakeRecorder(10), MetricAdvisorConfig: &ma.Config{CollectResUsedInterval: time.Second}}
	deps := Deps{Store: st, IsNodeManagerPod: func(p *corev1.Pod) bool { return p.Labels["app.kubernetes.io/component"] == "node-manager" },
		Killer: func() *kill.Killer { return nil }}
	for _, m := range mods {
		m(&deps)
	}
	s := newSlot(kind, deps, opts, nil, time.Second, 0)
	exec := &reasonExecutor{}
	s.executor, s.alloc.Executor = exec, exec
	return &slotEnv{slot: s, exec: exec, node: node}
}

// Upstream's MemoryEvict trigger keeps running in the YARN slot.
func TestSlotRunsUpstreamUsageTrigger(t *testing.T) {
	setGates(t, map[string]bool{string(features.YARNBEMemoryEvict): true, string(koordfeatures.MemoryEvict): true})
	node := &corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("120G")}}}
	slo := &slov1alpha1.NodeSLO{Spec: slov1alpha1.NodeSLOSpec{ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{
		Enable: ptr.To(true), MemoryEvictThresholdPercent: ptr.To[int64](82), MemoryEvictLowerPercent: ptr.To[int64](74),
		EvictEnabledPriorityThreshold: ptr.To[int32](apiext.PriorityBatchValueMax)}}}
	low := memPod("batch-low", apiext.PriorityBatchValueMin, 1)
	high := memPod("prod", apiext.PriorityProdValueMin, 1)
	env := newSlotEnv(t, AllocMemory, node, slo, []*corev1.Pod{low, high}, store.New(), func(add func(metriccache.MetricResource, map[metriccache.MetricProperty]string, float64)) {
		add(metriccache.NodeMemoryUsageMetric, nil, 115e9)
		add(metriccache.PodMemUsageMetric, metriccache.MetricPropertiesFunc.Pod(string(low.UID)), 20e9)
		add(metriccache.PodMemUsageMetric, metriccache.MetricPropertiesFunc.Pod(string(high.UID)), 40e9)
	})
	env.slot.Cycle(time.Now())
	assert.Equal(t, []string{"batch-low:evicted"}, env.exec.evicted, "upstream's trigger evicts the pod within the priority threshold")
}

// allocatableCase is a node's memory allocatable trigger (90% / 80%), a
// batch pod of podGiB with a usage sample, and a 16 GiB YARN container the
// NodeManager lists (not yet running: no victim itself).
func allocatableCase(t *testing.T, podGiB int64) (*slov1alpha1.NodeSLO, *corev1.Pod, *store.Store, func(add func(metriccache.MetricResource, map[metriccache.MetricProperty]string, float64))) {
	slo := &slov1alpha1.NodeSLO{Spec: slov1alpha1.NodeSLOSpec{ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{
		Enable: ptr.To(true), MemoryAllocatableEvictThresholdPercent: ptr.To[int64](90), MemoryAllocatableEvictLowerPercent: ptr.To[int64](80),
		AllocatableEvictPriorityThreshold: ptr.To[int32](apiext.PriorityBatchValueMax)}}}
	pod := memPod("batch-a", apiext.PriorityBatchValueMin, podGiB)
	st := store.New()
	id, err := yarn.ParseContainerID("container_1700000000000_0042_01_000002")
	require.NoError(t, err)
	st.Resync(store.Observation{NMOK: true, ScanOK: true, Started: time.Now(),
		NM: []yarn.NMContainer{{ID: id, State: yarn.StateLocalizing, TotalMemoryNeededMB: 16 << 10, TotalVCoresNeeded: 1}}}, time.Now())
	samples := func(add func(metriccache.MetricResource, map[metriccache.MetricProperty]string, float64)) {
		add(metriccache.PodMemUsageMetric, metriccache.MetricPropertiesFunc.Pod(string(pod.UID)), 1e9)
	}
	return slo, pod, st, samples
}

// With YARNAllocatableEvict the slot's allocatable trigger sees YARN's
// allocation against the origin, where koord-manager's (stale) allocatable
// showed room.
func TestSlotAllocatableCountsYARN(t *testing.T) {
	node := originNode(t, 20000, 40, 20000, 30) // published allocatable: 30 GiB
	slo, pod, st, samples := allocatableCase(t, 24)
	for _, tc := range []struct {
		name  string
		gates map[string]bool
		want  []string
	}{
		{"pods only: 24 of 30 GiB", map[string]bool{string(features.YARNBEMemoryEvict): true, string(koordfeatures.MemoryAllocatableEvict): true}, nil},
		{"YARN counted: 40 of 40 GiB", map[string]bool{string(features.YARNAllocatableEvict): true, string(koordfeatures.MemoryAllocatableEvict): true},
			[]string{"batch-a:trigger by koordlet feature MemoryAllocatableEvict"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setGates(t, tc.gates)
			env := newSlotEnv(t, AllocMemory, node, slo, []*corev1.Pod{pod}, st, samples)
			env.slot.Cycle(time.Now())
			assert.Equal(t, tc.want, env.exec.evicted)
		})
	}
}

// With the RM sync running the allocatable trigger kills YARN containers
// for YARN's over-commit only once the ResourceManager holds the smaller
// capacity (else the RM places a replacement on the node at its next
// heartbeat), or once the sync's time has passed; with YARNRMPreemption it
// waits for the RM to preempt, while the RM sync may not have asked yet
// and while an ask is pending; after the ask's deadline (or without the
// gates) it evicts as before.
func TestSlotAllocatableWaitsForTheRM(t *testing.T) {
	node := originNode(t, 20000, 40, 20000, 30)
	slo, pod, st, samples := allocatableCase(t, 28) // YARN's capacity: 40 − 28 = 12 GiB < its 16 GiB
	gates := func(sync, preempt bool) map[string]bool {
		return map[string]bool{string(features.YARNAllocatableEvict): true, string(koordfeatures.MemoryAllocatableEvict): true,
			string(features.YARNRMNodeResourceSync): sync, string(features.YARNRMPreemption): preempt}
	}
	now := time.Now()
	evicted := []string{"batch-a:trigger by koordlet feature MemoryAllocatableEvict"}
	smaller, larger := &rmrelease.Capacity{MemoryMB: 12 << 10, VCores: 20}, &rmrelease.Capacity{MemoryMB: 16 << 10, VCores: 20}
	for _, tc := range []struct {
		name          string
		sync, preempt bool
		delay         time.Duration
		rmHolds       *rmrelease.Capacity
		ask           *rmrelease.Ask
		want          []string
	}{
		{"no RM sync: evicts at once", false, false, time.Hour, nil, nil, evicted},
		{"the RM sync has not pushed yet: waits", true, false, time.Hour, nil, nil, nil},
		{"the RM holds the larger capacity: waits", true, false, time.Hour, larger, nil, nil},
		{"the RM holds the smaller capacity: evicts", true, false, time.Hour, smaller, nil, evicted},
		{"the RM holds the larger capacity, the sync's time passed: evicts", true, false, 0, larger, nil, evicted},
		{"no sync running (delay 0): evicts at once", true, false, 0, nil, nil, evicted},
		{"preemption, the RM sync has not asked yet: waits", true, true, time.Hour, nil, nil, nil},
		{"preemption, the RM was asked, before its deadline: waits", true, true, 0, smaller, &rmrelease.Ask{At: now, Timeout: time.Minute, MemoryMB: 4 << 10}, nil},
		{"preemption, the RM was asked, its deadline passed: evicts", true, true, 0, smaller, &rmrelease.Ask{At: now.Add(-time.Hour), Timeout: time.Minute, MemoryMB: 4 << 10}, evicted},
		{"preemption, never asked, the sync's time passed: evicts", true, true, 0, nil, nil, evicted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setGates(t, gates(tc.sync, tc.preempt))
			w := &rmrelease.Window{}
			if tc.ask != nil {
				w.Start(*tc.ask)
			}
			if tc.rmHolds != nil {
				w.RMHolds(*tc.rmHolds, true)
			}
			env := newSlotEnv(t, AllocMemory, node, slo, []*corev1.Pod{pod}, st, samples, func(d *Deps) {
				d.RMRelease, d.RMSyncDelay = w, func() time.Duration { return tc.delay }
			})
			env.slot.Cycle(time.Now())
			assert.Equal(t, tc.want, env.exec.evicted)
		})
	}
}

func TestHoldForRM(t *testing.T) {
	now := time.Unix(1700000000, 0)
	for _, tc := range []struct {
		name                    string
		above, pending, rmKnows bool
		since                   time.Duration
		want                    bool
	}{
		{"YARN fits its capacity", false, true, false, 0, false},
		{"just seen above, the RM not told yet", true, false, false, 2 * time.Second, true},
		{"just seen above, the RM holds the smaller capacity", true, false, true, 2 * time.Second, false},
		{"above longer than the sync takes, the RM not told", true, false, false, 20 * time.Second, false},
		{"asked, pending", true, true, true, time.Hour, true},
	} {
		assert.Equal(t, tc.want, HoldForRM(now, tc.above, tc.pending, tc.rmKnows, now.Add(-tc.since), 10*time.Second), tc.name)
	}
}

func TestRMHoldsAtMost(t *testing.T) {
	c := rmrelease.Capacity{MemoryMB: 2048, VCores: 3}
	assert.True(t, RMHoldsAtMost(AllocMemory, c, 2048<<20))
	assert.True(t, RMHoldsAtMost(AllocMemory, c, 2048<<20+(1<<20)-1), "the push rounds down to whole MiB")
	assert.False(t, RMHoldsAtMost(AllocMemory, c, 2048<<20-1))
	assert.True(t, RMHoldsAtMost(AllocCPU, c, 3500))
	assert.False(t, RMHoldsAtMost(AllocCPU, c, 2999))
}

func TestYARNAboveCapacity(t *testing.T) {
	pods := []*corev1.Pod{memPod("a", apiext.PriorityBatchValueMin, 28)}
	ya := func(gib int64, known bool) *YARNAllocation {
		return &YARNAllocation{Allocated: gib << 30, Origin: 40 << 30, OriginKnown: known}
	}
	assert.True(t, YARNAboveCapacity(AllocMemory, pods, ya(16, true)), "40 − 28 = 12 < 16")
	assert.False(t, YARNAboveCapacity(AllocMemory, pods, ya(12, true)), "at its capacity")
	assert.False(t, YARNAboveCapacity(AllocMemory, pods, ya(16, false)), "no origin: no capacity to compare")
	assert.False(t, YARNAboveCapacity(AllocMemory, pods, nil))
}

// Upstream's CPUEvict trigger keeps running in the YARN CPU slot: node CPU
// at 95% of 10 cores, threshold 80%, lower 70%: 2.5 cores of usage to
// release from the pods within the priority threshold, larger usage first.
func TestSlotRunsUpstreamCPUUsageTrigger(t *testing.T) {
	setGates(t, map[string]bool{string(features.YARNBECPUEvict): true, string(koordfeatures.CPUEvict): true})
	node := &corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")}}}
	slo := &slov1alpha1.NodeSLO{Spec: slov1alpha1.NodeSLOSpec{ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{
		Enable: ptr.To(true), CPUEvictThresholdPercent: ptr.To[int64](80), CPUEvictLowerPercent: ptr.To[int64](70),
		EvictEnabledPriorityThreshold: ptr.To[int32](apiext.PriorityBatchValueMax)}}}
	big := mockBEPodForCPUEvict("batch-big", 1000, apiext.PriorityBatchValueMin, corev1.PodRunning)
	small := mockBEPodForCPUEvict("batch-small", 1000, apiext.PriorityBatchValueMin, corev1.PodRunning)
	idle := mockBEPodForCPUEvict("batch-idle", 1000, apiext.PriorityBatchValueMin, corev1.PodRunning)
	prod := mockPodWithPriority("prod", apiext.QoSLS, apiext.PriorityProdValueMin, nil, nil, corev1.PodRunning)
	unlabelled := mockBEPodForCPUEvict("batch-not-enabled", 1000, apiext.PriorityBatchValueMin, corev1.PodRunning)
	for _, p := range []*corev1.Pod{big, small, idle, prod} {
		p.Labels[apiext.LabelPodEvictEnabled] = "true"
	}
	env := newSlotEnv(t, AllocCPU, node, slo, []*corev1.Pod{small, prod, big, idle, unlabelled}, store.New(), func(add func(metriccache.MetricResource, map[metriccache.MetricProperty]string, float64)) {
		add(metriccache.NodeCPUUsageMetric, nil, 9.5)
		add(metriccache.PodCPUUsageMetric, metriccache.MetricPropertiesFunc.Pod(string(big.UID)), 2)
		add(metriccache.PodCPUUsageMetric, metriccache.MetricPropertiesFunc.Pod(string(small.UID)), 1)
		add(metriccache.PodCPUUsageMetric, metriccache.MetricPropertiesFunc.Pod(string(idle.UID)), 0.1)
		add(metriccache.PodCPUUsageMetric, metriccache.MetricPropertiesFunc.Pod(string(prod.UID)), 5)
		add(metriccache.PodCPUUsageMetric, metriccache.MetricPropertiesFunc.Pod(string(unlabelled.UID)), 4)
	})
	env.slot.Cycle(time.Now())
	assert.Equal(t, []string{"batch-big:evicted", "batch-small:evicted"}, env.exec.evicted)
}

// fakeBE is a BE trigger that evicts what it is told, counting its checks.
type fakeBE struct {
	checks  int
	victims []Victim
}

func (f *fakeBE) Setup(*qmframework.Context) {}

func (f *fakeBE) Cycle(time.Time) []Victim {
	f.checks++
	return f.victims
}

// The memory slot cools after evicting a pod (its memory is freed later, by
// the kubelet) but not after YARN kills, which return once the processes
// are gone; the CPU slot cools after either (CPU is judged from samples).
func TestSlotCoolsOnlyForLaterReleases(t *testing.T) {
	setGates(t, map[string]bool{string(features.YARNBEMemoryEvict): true, string(koordfeatures.BEMemoryEvict): true,
		string(features.YARNBECPUEvict): true, string(koordfeatures.BECPUEvict): true})
	node := &corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("120G")}}}
	slo := &slov1alpha1.NodeSLO{Spec: slov1alpha1.NodeSLOSpec{ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{Enable: ptr.To(true)}}}
	container := Victim{Container: &store.Container{Name: "container_1700000000000_0042_01_000002"}, MemoryUsed: 1 << 30}
	pod := Victim{Pod: memPod("batch-a", apiext.PriorityBatchValueMin, 1), MemoryUsed: 1 << 30}
	for _, tc := range []struct {
		name       string
		kind       AllocKind
		victims    []Victim
		wantChecks int
	}{
		{"memory, YARN containers only: no cooling", AllocMemory, []Victim{container}, 3},
		{"memory, a pod among them: cooling", AllocMemory, []Victim{container, pod}, 1},
		{"memory, nothing evicted", AllocMemory, nil, 3},
		{"CPU, YARN containers: cooling", AllocCPU, []Victim{container}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newSlotEnv(t, tc.kind, node, slo, nil, store.New(), func(func(metriccache.MetricResource, map[metriccache.MetricProperty]string, float64)) {})
			be := &fakeBE{victims: tc.victims}
			env.slot.be, env.slot.cooling = be, 4*time.Second
			start := time.Now()
			for i := 0; i < 3; i++ {
				env.slot.Cycle(start.Add(time.Duration(i) * time.Second))
			}
			assert.Equal(t, tc.wantChecks, be.checks)
		})
	}
}
