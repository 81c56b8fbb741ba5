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

Derived from Koordinator v1.8.0 pkg/koordlet/qosmanager/plugins/cpuevict/cpu_evict_test.go and memoryevict/memory_evict_test.go (test helpers and cases);
modified for koordlet-yarn.
*/

package yarnevict

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	apiext "github.com/koordinator-sh/koordinator/apis/extension"
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	ma "github.com/koordinator-sh/koordinator/pkg/koordlet/metricsadvisor/framework"
	qmframework "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/framework"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/testutil"

	"github.com/koordlet-yarn/koordlet-yarn/framework/appmeta"
	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/policy"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// Pods as upstream's cpuevict and memoryevict tests build them.
func mockBEPodForCPUEvict(name string, request int64, priority int32, phase corev1.PodPhase) *corev1.Pod {
	res := corev1.ResourceList{apiext.BatchCPU: *resource.NewQuantity(request, resource.DecimalSI)}
	return mockPodWithPriority(name, apiext.QoSBE, priority, res, res, phase)
}

func mockPodWithPriority(name string, qos apiext.QoSClass, priority int32, request, limits corev1.ResourceList, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "test-ns", Name: name, UID: types.UID(name),
			Labels: map[string]string{apiext.LabelPodQoS: string(qos)}},
		Spec: corev1.PodSpec{Priority: ptr.To(priority), Containers: []corev1.Container{{Name: name + "_main",
			Resources: corev1.ResourceRequirements{Limits: limits, Requests: request}}}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

func TestAllocConfigFrom(t *testing.T) {
	cases := []struct {
		name string
		kind AllocKind
		cfg  *slov1alpha1.ResourceThresholdStrategy
		err  string
	}{
		{"nil", AllocMemory, nil, "ResourceThresholdStrategy not config"},
		{"memory threshold nil", AllocMemory, &slov1alpha1.ResourceThresholdStrategy{}, "MemoryAllocatableEvictThresholdPercent not config"},
		{"memory threshold < 0", AllocMemory, &slov1alpha1.ResourceThresholdStrategy{MemoryAllocatableEvictThresholdPercent: ptr.To[int64](-1)}, "equal or greater than 0"},
		{"memory lower nil", AllocMemory, &slov1alpha1.ResourceThresholdStrategy{MemoryAllocatableEvictThresholdPercent: ptr.To[int64](80)}, "MemoryAllocatableEvictLowerPercent not config"},
		{"lower >= threshold", AllocCPU, &slov1alpha1.ResourceThresholdStrategy{CPUAllocatableEvictThresholdPercent: ptr.To[int64](80),
			CPUAllocatableEvictLowerPercent: ptr.To[int64](80)}, "should less than threshold"},
		{"priority nil", AllocCPU, &slov1alpha1.ResourceThresholdStrategy{CPUAllocatableEvictThresholdPercent: ptr.To[int64](80),
			CPUAllocatableEvictLowerPercent: ptr.To[int64](70)}, "AllocatableEvictPriorityThreshold not config"},
		{"prod priority", AllocMemory, &slov1alpha1.ResourceThresholdStrategy{MemoryAllocatableEvictThresholdPercent: ptr.To[int64](80),
			MemoryAllocatableEvictLowerPercent: ptr.To[int64](70), AllocatableEvictPriorityThreshold: ptr.To[int32](apiext.PriorityMidValueMax + 1)}, "koor-prod"},
		{"valid", AllocMemory, &slov1alpha1.ResourceThresholdStrategy{MemoryAllocatableEvictThresholdPercent: ptr.To[int64](85),
			MemoryAllocatableEvictLowerPercent: ptr.To[int64](75), AllocatableEvictPriorityThreshold: ptr.To[int32](apiext.PriorityBatchValueMax)}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := AllocConfigFrom(tc.kind, tc.cfg)
			if tc.err == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tc.err)
			}
		})
	}
}

// The cases of upstream's Test_calculateMilliReleaseByAllocatableThresholdPercent
// (cpuevict, v1.8.0): the release per resource and what each pod releases.
// With no YARN container, counting YARN changes nothing.
func TestAllocatableReleaseUpstreamCPUCases(t *testing.T) {
	batch := func(v int64) corev1.ResourceList {
		return corev1.ResourceList{apiext.BatchCPU: *resource.NewQuantity(v, resource.DecimalSI)}
	}
	batchMid := corev1.ResourceList{apiext.BatchCPU: *resource.NewQuantity(100000, resource.DecimalSI), apiext.MidCPU: *resource.NewQuantity(100000, resource.DecimalSI)}
	midPod := func() *corev1.Pod {
		r := corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(85000, resource.DecimalSI), apiext.MidCPU: *resource.NewQuantity(85000, resource.DecimalSI)}
		return mockPodWithPriority("mid-pod-1", apiext.QoSLS, 7000, r, r, corev1.PodRunning)
	}
	cfg := func(threshold, lower int64, prio int32) AllocConfig {
		return AllocConfig{Threshold: threshold, Lower: lower, PriorityThreshold: prio}
	}
	cases := []struct {
		name    string
		node    *corev1.Node
		pods    []*corev1.Pod
		cfg     AllocConfig
		release map[corev1.ResourceName]int64
		podRes  map[string]map[corev1.ResourceName]int64
	}{
		{"allocatable threshold not exceeded", testutil.MockTestNodeWithExtendResource("100", "120G", batch(100), batch(100)),
			[]*corev1.Pod{mockBEPodForCPUEvict("batch-pod-1", 2*000, 100, corev1.PodRunning), mockBEPodForCPUEvict("batch-pod-2", 3*000, 100, corev1.PodRunning)},
			cfg(80, 70, apiext.PriorityBatchValueMax), map[corev1.ResourceName]int64{}, nil},
		{"allocatable threshold exceeded - batch cpu", testutil.MockTestNodeWithExtendResource("100", "120G", batch(100000), batch(100000)),
			[]*corev1.Pod{mockBEPodForCPUEvict("batch-pod-1", 45000, 5000, corev1.PodRunning), mockBEPodForCPUEvict("batch-pod-2", 40000, 5000, corev1.PodRunning)},
			cfg(80, 70, apiext.PriorityBatchValueMax), map[corev1.ResourceName]int64{apiext.BatchCPU: 15000},
			map[string]map[corev1.ResourceName]int64{"batch-pod-1": {apiext.BatchCPU: 45000}, "batch-pod-2": {apiext.BatchCPU: 40000}}},
		{"allocatable threshold exceeded - mixed priority", testutil.MockTestNodeWithExtendResource("100", "120G", batchMid, batchMid),
			[]*corev1.Pod{mockBEPodForCPUEvict("batch-pod-1", 85000, 5000, corev1.PodRunning), midPod()},
			cfg(80, 70, apiext.PriorityMidValueMax), map[corev1.ResourceName]int64{apiext.BatchCPU: 15000, apiext.MidCPU: 15000},
			map[string]map[corev1.ResourceName]int64{"batch-pod-1": {apiext.BatchCPU: 85000}, "mid-pod-1": {apiext.MidCPU: 85000}}},
		{"allocatable threshold exceeded - mixed priority, lower AllocatableEvictPriorityThreshold", testutil.MockTestNodeWithExtendResource("100", "120G", batchMid, batchMid),
			[]*corev1.Pod{mockBEPodForCPUEvict("batch-pod-1", 85000, 5000, corev1.PodRunning), midPod()},
			cfg(80, 70, apiext.PriorityBatchValueMax), map[corev1.ResourceName]int64{apiext.BatchCPU: 15000},
			map[string]map[corev1.ResourceName]int64{"batch-pod-1": {apiext.BatchCPU: 85000}}},
		{"allocatable threshold = 0", testutil.MockTestNodeWithExtendResource("100", "120G", batchMid, batchMid),
			[]*corev1.Pod{mockBEPodForCPUEvict("batch-pod-1", 85000, 5000, corev1.PodRunning)},
			cfg(0, 0, apiext.PriorityBatchValueMax), map[corev1.ResourceName]int64{apiext.BatchCPU: 85000},
			map[string]map[corev1.ResourceName]int64{"batch-pod-1": {apiext.BatchCPU: 85000}}},
		{"node without allocatable batch-cpu resource", testutil.MockTestNode("80", "120G"),
			[]*corev1.Pod{mockBEPodForCPUEvict("batch-pod-1", 85000, 5000, corev1.PodRunning)},
			cfg(80, 70, apiext.PriorityBatchValueMax), map[corev1.ResourceName]int64{apiext.BatchCPU: 85000},
			map[string]map[corev1.ResourceName]int64{"batch-pod-1": {apiext.BatchCPU: 85000}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := AllocatableRelease(AllocCPU, tc.cfg, tc.node, tc.pods, nil)
			assert.Equal(t, tc.release, got)
			noYARN := AllocatableRelease(AllocCPU, tc.cfg, tc.node, tc.pods, &YARNAllocation{Priority: apiext.PriorityBatchValueMin})
			assert.Equal(t, got, noYARN, "no YARN container: upstream's result")
			for _, pod := range tc.pods {
				want, ok := tc.podRes[pod.Name]
				if !ok {
					continue
				}
				v := PodAllocVictim(AllocCPU, pod)
				for rt, q := range want {
					assert.Equal(t, rt, v.Resource, pod.Name)
					assert.Equal(t, q, v.Request, pod.Name)
				}
			}
		})
	}
}

func memPod(name string, prio int32, gib int64) *corev1.Pod {
	r := corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(gib<<30, resource.BinarySI),
		apiext.BatchMemory: *resource.NewQuantity(gib<<30, resource.BinarySI)}
	p := mockPodWithPriority(name, apiext.QoSBE, prio, r, r, corev1.PodRunning)
	p.Labels[apiext.LabelPodEvictEnabled] = "true"
	return p
}

// upstream's Test_memoryEvict case "only feature MemoryAllocatableEvict":
// a node without batch-memory allocatable releases every batch request, and
// both batch pods go.
func TestAllocatableUpstreamMemoryCase(t *testing.T) {
	node := testutil.MockTestNode("80", "120G")
	pods := []*corev1.Pod{memPod("batch-pod-1", apiext.PriorityBatchValueMin, 20), memPod("batch-pod-2", apiext.PriorityBatchValueMin, 30)}
	cfg := AllocConfig{Threshold: 80, Lower: 70, PriorityThreshold: apiext.PriorityBatchValueMin}
	need := AllocatableRelease(AllocMemory, cfg, node, pods, nil)
	assert.Equal(t, map[corev1.ResourceName]int64{apiext.BatchMemory: 50 << 30}, need)
	var vs []AllocVictim
	for _, p := range pods {
		vs = append(vs, PodAllocVictim(AllocMemory, p))
	}
	RankAllocatable(vs)
	plan := PlanAllocatable(vs, need)
	require.Len(t, plan, 2)
	assert.Equal(t, "test-ns/batch-pod-2", plan[0].Name(), "larger request first, as upstream")
	assert.Equal(t, "test-ns/batch-pod-1", plan[1].Name())
}

func originNode(t *testing.T, cpu, memGi int64, allocCPU, allocMemGi int64) *corev1.Node {
	node := testutil.MockTestNodeWithExtendResource("32", "128Gi", corev1.ResourceList{
		apiext.BatchCPU: *resource.NewQuantity(allocCPU, resource.DecimalSI), apiext.BatchMemory: *resource.NewQuantity(allocMemGi<<30, resource.BinarySI)}, nil)
	node.Annotations = map[string]string{}
	require.NoError(t, slov1alpha1.SetOriginExtendedAllocatableRes(node.Annotations, corev1.ResourceList{
		apiext.BatchCPU: *resource.NewQuantity(cpu, resource.DecimalSI), apiext.BatchMemory: *resource.NewQuantity(memGi<<30, resource.BinarySI)}))
	return node
}

// memRelease is upstream's memory formula.
func memRelease(rq, sum, lower int64) int64 {
	r, s := float64(rq), float64(sum)
	return int64((r/s - float64(lower)/100) * s)
}

func TestAllocatableReleaseWithYARN(t *testing.T) {
	// Origin 20 cores / 40 GiB; koord-manager published origin − YARN's
	// allocation (8 cores / 16 GiB) as the allocatable; Kubernetes pods
	// request 12 cores / 24 GiB. Together 20 / 40: 100% of the origin.
	node := originNode(t, 20000, 40, 12000, 24)
	pods := []*corev1.Pod{memPod("batch-a", apiext.PriorityBatchValueMin, 24)}
	cfg := AllocConfig{Threshold: 90, Lower: 80, PriorityThreshold: apiext.PriorityBatchValueMax}
	ya := &YARNAllocation{Allocated: 16 << 30, Priority: apiext.PriorityBatchValueMin, Origin: 40 << 30, OriginKnown: true}
	cases := []struct {
		name string
		ya   *YARNAllocation
		want map[corev1.ResourceName]int64
	}{
		{"YARN counted against the origin", ya, map[corev1.ResourceName]int64{apiext.BatchMemory: memRelease(40<<30, 40<<30, 80)}}, // 8 GiB
		// Upstream compares the pods with the allocatable koord-manager
		// left them: 24/24.
		{"pods only (upstream)", nil, map[corev1.ResourceName]int64{apiext.BatchMemory: memRelease(24<<30, 24<<30, 80)}},
		{"YARN above the priority threshold", &YARNAllocation{Allocated: 16 << 30, Priority: apiext.PriorityMidValueMin, Origin: 40 << 30, OriginKnown: true},
			map[corev1.ResourceName]int64{apiext.BatchMemory: memRelease(24<<30, 24<<30, 80)}},
		{"under the threshold", &YARNAllocation{Allocated: 10 << 30, Priority: apiext.PriorityBatchValueMin, Origin: 40 << 30, OriginKnown: true},
			map[corev1.ResourceName]int64{}},
		{"no origin: the allocatable", &YARNAllocation{Allocated: 16 << 30, Priority: apiext.PriorityBatchValueMin},
			map[corev1.ResourceName]int64{apiext.BatchMemory: memRelease(40<<30, 24<<30, 80)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, AllocatableRelease(AllocMemory, cfg, node, pods, tc.ya))
		})
	}
	// CPU: (12 + 8) of 20 cores, threshold 90, lower 80: release 4 cores.
	podsCPU := []*corev1.Pod{mockBEPodForCPUEvict("batch-c", 12000, apiext.PriorityBatchValueMin, corev1.PodRunning)}
	yaCPU := &YARNAllocation{Allocated: 8000, Priority: apiext.PriorityBatchValueMin, Origin: 20000, OriginKnown: true}
	assert.Equal(t, map[corev1.ResourceName]int64{apiext.BatchCPU: 4000}, AllocatableRelease(AllocCPU, cfg, node, podsCPU, yaCPU))
}

func yarnCtr(t *testing.T, seq int64, started time.Time, mb int64, am bool) *store.Container {
	name := fmt.Sprintf("container_1700000000000_0042_01_%06d", seq)
	id, err := yarn.ParseContainerID(name)
	require.NoError(t, err)
	return &store.Container{Name: name, ID: id, IsAM: am, State: yarn.StateRunning, Source: store.SourceBoth,
		RequestMemoryBytes: mb << 20, RequestMilliCPU: 1000, Started: started, Pids: []int{1}}
}

func TestRankAndPlanAllocatable(t *testing.T) {
	now := time.Now()
	am := ContainerAllocVictim(AllocMemory, yarnCtr(t, 1, now.Add(-time.Hour), 1024, true), apiext.PriorityBatchValueMin, int64(apiext.PriorityBatchValueMin))
	older := ContainerAllocVictim(AllocMemory, yarnCtr(t, 2, now.Add(-time.Minute), 2048, false), apiext.PriorityBatchValueMin, int64(apiext.PriorityBatchValueMin))
	newest := ContainerAllocVictim(AllocMemory, yarnCtr(t, 3, now, 2048, false), apiext.PriorityBatchValueMin, int64(apiext.PriorityBatchValueMin))
	bigPod := PodAllocVictim(AllocMemory, memPod("big", apiext.PriorityBatchValueMin, 4))
	lowPod := PodAllocVictim(AllocMemory, memPod("low", apiext.PriorityBatchValueMin-1, 1))
	labelled := memPod("labelled", apiext.PriorityBatchValueMin, 8)
	labelled.Labels[apiext.LabelPodPriority] = "9999"
	labelledPod := PodAllocVictim(AllocMemory, labelled)
	midPod := mockPodWithPriority("mid", apiext.QoSLS, apiext.PriorityMidValueMin, corev1.ResourceList{apiext.MidMemory: resource.MustParse("8Gi")}, nil, corev1.PodRunning)
	mid := PodAllocVictim(AllocMemory, midPod)

	// Pods only: upstream's order (larger request first).
	pods := []AllocVictim{labelledPod, mid, bigPod, lowPod}
	RankAllocatable(pods)
	assert.Equal(t, []string{"test-ns/low", "test-ns/big", "test-ns/labelled", "test-ns/mid"}, allocNames(pods))

	// With YARN containers: newest first after the priorities; AMs last.
	bigPod.Started, lowPod.Started, labelledPod.Started, mid.Started = now.Add(-2*time.Hour), now.Add(-2*time.Hour), now.Add(-2*time.Hour), now.Add(-2*time.Hour)
	vs := []AllocVictim{am, older, labelledPod, mid, newest, bigPod, lowPod}
	RankAllocatable(vs)
	assert.Equal(t, []string{"test-ns/low", newest.Name(), older.Name(), "test-ns/big", "test-ns/labelled", "test-ns/mid", am.Name()}, allocNames(vs),
		"lower priority, lower label priority, newest; AMs last")

	cases := []struct {
		name string
		need map[corev1.ResourceName]int64
		want []string
	}{
		{"the newest YARN allocation first", map[corev1.ResourceName]int64{apiext.BatchMemory: 3 << 30}, []string{"test-ns/low", newest.Name()}},
		{"then the older one", map[corev1.ResourceName]int64{apiext.BatchMemory: 4 << 30}, []string{"test-ns/low", newest.Name(), older.Name()}},
		{"victims releasing nothing needed are skipped", map[corev1.ResourceName]int64{apiext.MidMemory: 1}, []string{"test-ns/mid"}},
		{"AM only when nothing else releases", map[corev1.ResourceName]int64{apiext.BatchMemory: 100 << 30},
			[]string{"test-ns/low", newest.Name(), older.Name(), "test-ns/big", "test-ns/labelled"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, v := range PlanAllocatable(vs, tc.need) {
				got = append(got, v.Name())
			}
			assert.Equal(t, tc.want, got)
		})
	}
	got := PlanAllocatable([]AllocVictim{am}, map[corev1.ResourceName]int64{apiext.BatchMemory: 1})
	require.Len(t, got, 1)
	assert.True(t, got[0].IsAM)
}

func TestYARNAllocatedForArbitration(t *testing.T) {
	cs := []*store.Container{
		{Name: "a", Source: store.SourceBoth, State: yarn.StateRunning, RequestMilliCPU: 2000, RequestMemoryBytes: 1 << 30},
		{Name: "b", Source: store.SourceNM, State: yarn.StateLocalizing, RequestMilliCPU: 1000, RequestMemoryBytes: 2 << 30},
		{Name: "c", Source: store.SourceBoth, State: yarn.StateExitedWithSuccess, RequestMilliCPU: 4000, RequestMemoryBytes: 4 << 30},
		{Name: "d", Source: store.SourceCgroup, RequestMilliCPU: 8000},
	}
	assert.Equal(t, int64(3000), yarnAllocated(AllocCPU, cs))
	assert.Equal(t, int64(3<<30), yarnAllocated(AllocMemory, cs))
}

func allocNames(vs []AllocVictim) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Name())
	}
	return out
}

// The allocatable trigger sees the YARN QoS policy as the usage strategies
// do: a transcode container (priority 5100, a tier evicted before pods) goes
// before the BE pod and the other YARN containers, and a container the
// policy raises above the priority threshold is not a victim.
func TestAllocatableVictimsFollowThePolicy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`tiers:
  transcode: {evictBeforePods: true}
rules:
- name: transcode-first
  match: {queue: root.transcode}
  priority: 5100
  tier: transcode
- name: streaming-protected
  match: {queue: root.streaming}
  priority: 7000
`), 0o644))
	h, err := policy.NewHolder(path, nil)
	require.NoError(t, err)
	queues := map[string]string{"application_1700000000000_0001": "root.transcode", "application_1700000000000_0002": "root.streaming",
		"application_1700000000000_0003": "root.default"}
	resolver := policy.NewResolver(h, func(app string, _ int64) (appmeta.App, bool) {
		q, ok := queues[app]
		return appmeta.App{ID: app, Queue: q}, ok
	})
	now := time.Now()
	ctr := func(app, seq int, started time.Time) *store.Container {
		name := fmt.Sprintf("container_1700000000000_%04d_01_%06d", app, seq)
		id, err := yarn.ParseContainerID(name)
		require.NoError(t, err)
		c := &store.Container{Name: name, ID: id, State: yarn.StateRunning, Source: store.SourceBoth, RequestMemoryBytes: 1 << 30,
			Started: started, Pids: []int{1}, ApplicationID: id.ApplicationID()}
		c.Cgroups[cgroups.CPU] = cgroups.Ref{Dir: "hadoop-yarn/" + name, Owned: true}
		return c
	}
	transcode, streaming, spark := ctr(1, 2, now.Add(-time.Hour)), ctr(2, 2, now), ctr(3, 2, now.Add(-time.Minute))
	a := &AllocatableEvict{Kind: AllocMemory, Deps: Deps{Policy: resolver}, Opts: &qmframework.Options{MetricAdvisorConfig: &ma.Config{CollectResUsedInterval: time.Second}}}
	cfg := AllocConfig{Threshold: 90, Lower: 80, PriorityThreshold: apiext.PriorityBatchValueMax}
	nmPod := memPod("nodemanager", apiext.PriorityBatchValueMin+400, 1) // koord-batch 5400
	vs := a.victims(cfg, nil, nmPod, true, []*store.Container{transcode, streaming, spark})
	bePod := PodAllocVictim(AllocMemory, memPod("batch-a", apiext.PriorityBatchValueMin+100, 1)) // 5100, like the transcode rule
	vs = append(vs, bePod)
	RankAllocatable(vs)
	assert.Equal(t, []string{transcode.Name, "test-ns/batch-a", spark.Name}, allocNames(vs),
		"the transcode tier before the pod of its priority; the streaming container (7000) above the threshold is no victim")
}
