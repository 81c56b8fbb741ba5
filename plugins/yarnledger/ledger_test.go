package yarnledger

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apiext "github.com/koordinator-sh/koordinator/apis/extension"
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"

	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

func ctr(name, state string, src store.Source, vcores, mb int64) *store.Container {
	return &store.Container{Name: name, State: state, Source: src, RequestMilliCPU: vcores * 1000, RequestMemoryBytes: mb << 20}
}

func TestYARNAllocated(t *testing.T) {
	cases := []struct {
		name string
		cs   []*store.Container
		want Batch
	}{
		{"none", nil, Batch{}},
		{"non-terminal states count", []*store.Container{
			ctr("a", yarn.StateNew, store.SourceNM, 1, 1024),
			ctr("b", yarn.StateLocalizing, store.SourceNM, 2, 2048),
			ctr("c", yarn.StateRunning, store.SourceBoth, 1, 512),
			ctr("d", yarn.StateKilling, store.SourceBoth, 1, 512),
			ctr("e", yarn.StateContainerResourcesCleaningUp, store.SourceBoth, 1, 512),
		}, Batch{MilliCPU: 6000, MemoryBytes: (1024 + 2048 + 512*3) << 20}},
		{"terminal states do not", []*store.Container{
			ctr("a", yarn.StateExitedWithSuccess, store.SourceBoth, 1, 1024),
			ctr("b", yarn.StateExitedWithFailure, store.SourceBoth, 1, 1024),
			ctr("c", yarn.StateDone, store.SourceNM, 1, 1024),
			ctr("d", yarn.StateLocalizationFailed, store.SourceNM, 1, 1024),
			ctr("e", yarn.StateContainerCleanedupAfterKill, store.SourceBoth, 1, 1024),
			ctr("f", yarn.StateRunning, store.SourceBoth, 2, 100),
		}, Batch{MilliCPU: 2000, MemoryBytes: 100 << 20}},
		{"cgroup-only containers are unknown", []*store.Container{
			ctr("a", "", store.SourceCgroup, 0, 0),
			{Name: "b", Source: store.SourceCgroup, State: yarn.StateRunning, RequestMilliCPU: 5000},
		}, Batch{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, YARNAllocated(tc.cs))
		})
	}
}

func batchPod(name string, prio int32, milliCPU, memBytes int64, phase corev1.PodPhase) *corev1.Pod {
	res := corev1.ResourceList{
		apiext.BatchCPU:    *resource.NewQuantity(milliCPU, resource.DecimalSI),
		apiext.BatchMemory: *resource.NewQuantity(memBytes, resource.BinarySI),
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Priority: &prio, Containers: []corev1.Container{
			{Name: "a", Resources: corev1.ResourceRequirements{Requests: res, Limits: res}},
			{Name: "b", Resources: corev1.ResourceRequirements{Requests: res, Limits: res}},
		}},
		Status: corev1.PodStatus{Phase: phase}}
}

func TestKubernetesRequested(t *testing.T) {
	pods := []*corev1.Pod{
		batchPod("batch", apiext.PriorityBatchValueMin, 1000, 1<<30, corev1.PodRunning),
		batchPod("batch-pending", apiext.PriorityBatchValueMax, 500, 1<<20, corev1.PodPending),
		batchPod("batch-done", apiext.PriorityBatchValueMin, 7000, 7<<30, corev1.PodSucceeded),
		batchPod("mid", apiext.PriorityMidValueMin, 9000, 9<<30, corev1.PodRunning),
		batchPod("prod", apiext.PriorityProdValueMin, 9000, 9<<30, corev1.PodRunning),
		{ObjectMeta: metav1.ObjectMeta{Name: "no-priority"}},
		nil,
	}
	assert.Equal(t, Batch{MilliCPU: 2 * (1000 + 500), MemoryBytes: 2 * (1<<30 + 1<<20)}, KubernetesRequested(pods))
}

func TestOriginAndCompute(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
	_, ok, err := Origin(node)
	require.NoError(t, err)
	assert.False(t, ok)
	require.NoError(t, slov1alpha1.SetOriginExtendedAllocatableRes(node.Annotations, corev1.ResourceList{
		apiext.BatchCPU: resource.MustParse("20000"), apiext.BatchMemory: resource.MustParse("40Gi")}))
	o, ok, err := Origin(node)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, Batch{MilliCPU: 20000, MemoryBytes: 40 << 30}, o)

	node.Annotations[slov1alpha1.NodeOriginExtendedAllocatableAnnotationKey] = "{bad"
	_, _, err = Origin(node)
	assert.Error(t, err)

	cases := []struct {
		name           string
		k8s, yarn      Batch
		known          bool
		capacity, over Batch
	}{
		{"room left", Batch{4000, 8 << 30}, Batch{6000, 10 << 30}, true, Batch{16000, 32 << 30}, Batch{}},
		{"over-committed", Batch{15000, 30 << 30}, Batch{8000, 16 << 30}, true, Batch{5000, 10 << 30}, Batch{3000, 6 << 30}},
		{"kubernetes beyond origin", Batch{25000, 50 << 30}, Batch{1000, 0}, true, Batch{}, Batch{6000, 10 << 30}},
		{"no origin", Batch{25000, 50 << 30}, Batch{1000, 0}, false, Batch{}, Batch{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := Compute(o, tc.known, tc.k8s, tc.yarn)
			assert.Equal(t, tc.capacity, v.YARNCapacity)
			assert.Equal(t, tc.over, v.OverCommit)
			assert.Equal(t, tc.yarn, v.YARNAllocated)
		})
	}
}
