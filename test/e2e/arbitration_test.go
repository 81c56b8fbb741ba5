package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	apiext "github.com/koordinator-sh/koordinator/apis/extension"
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"

	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnledger"
	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

// TestBatchArbitration: the Kubernetes side already requested 4 GiB of a
// 10 GiB batch memory origin; YARN then allocates 1 GiB containers one
// after another. The fifth takes the batch requests to 90% of the origin,
// above MemoryAllocatableEvict's 85%: koordlet's memoryEvict slot
// (MemoryAllocatableEvict + YARNAllocatableEvict) evicts the newest YARN
// container, the node is back at 80% (under the threshold), the Kubernetes
// pod, the AM and the NodeManager survive, and the ledger follows.
func TestBatchArbitration(t *testing.T) {
	b := startBox(t, nodebox.Options{
		Pods: []nodebox.PodSpec{batchPod("spark-driver", 2000, "4Gi")},
		NodeSLO: slov1alpha1.NodeSLOSpec{ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{
			Enable:                                 ptr.To(true),
			MemoryAllocatableEvictThresholdPercent: ptr.To[int64](85),
			MemoryAllocatableEvictLowerPercent:     ptr.To[int64](80),
			AllocatableEvictPriorityThreshold:      ptr.To[int32](apiext.PriorityBatchValueMax),
		}},
		KoordletArgs: []string{"--feature-gates=YARNBatchLedger=true,YARNAllocatableEvict=true,MemoryAllocatableEvict=true",
			"--yarn-ledger-patch-interval=300ms", "--yarn-ledger-max-age=300ms"},
	})
	setNodeAnnotations(t, b, map[string]string{
		slov1alpha1.NodeOriginExtendedAllocatableAnnotationKey: originValue(t, 16000, "10Gi"),
	})
	var ids []string
	for seq := int64(1); seq <= 4; seq++ {
		id, err := b.NM.Launch(nmemu.Spec{AppID: 9, Attempt: 1, Sequence: seq, User: "etl", MemoryMB: 1024, VCores: 1, Script: "exec sleep 3600"})
		require.NoError(t, err)
		ids = append(ids, id)
		time.Sleep(300 * time.Millisecond) // distinct start times
	}
	waitEntry(t, b, yarnledger.Batch{MilliCPU: 4000, MemoryBytes: 4 << 30}, 15*time.Second, "four containers: 8 of 10 GiB, 80%")
	time.Sleep(3 * time.Second) // several evict intervals at 80%: nothing happens
	for _, id := range ids {
		require.NotZero(t, b.NM.Pid(id))
		assert.True(t, alive(b.NM.Pid(id)), "%s survives at 80%%", id)
	}

	start := time.Now()
	newest, err := b.NM.Launch(nmemu.Spec{AppID: 9, Attempt: 1, Sequence: 5, User: "etl", MemoryMB: 1024, VCores: 1, Script: "exec sleep 3600"})
	require.NoError(t, err)
	select {
	case <-b.NM.Exited(newest):
	case <-time.After(30 * time.Second):
		t.Fatalf("the newest container was not evicted")
	}
	resolved := time.Since(start)
	t.Logf("over-commit → newest container evicted in %v", resolved.Round(time.Millisecond))
	waitEntry(t, b, yarnledger.Batch{MilliCPU: 4000, MemoryBytes: 4 << 30}, 15*time.Second, "back to 80%")
	l, err := b.Ledger()
	require.NoError(t, err)
	assert.Equal(t, yarnledger.Batch{}, l.OverCommit)
	used := l.KubernetesRequested.MemoryBytes + l.YARNAllocated.MemoryBytes
	assert.Less(t, used*100, l.Origin.MemoryBytes*85, "under the threshold")

	time.Sleep(3 * time.Second)
	for _, id := range ids {
		assert.True(t, alive(b.NM.Pid(id)), "%s survives", id)
	}
	assert.True(t, alive(b.NMPID()), "the NodeManager survives")
	pod, err := b.Kube.CoreV1().Pods("default").Get(t.Context(), "spark-driver", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Nil(t, pod.DeletionTimestamp, "the Kubernetes pod that requested first is not evicted")
	m, err := b.Metrics()
	require.NoError(t, err)
	assert.Contains(t, m, fmt.Sprintf(`koordlet_yarn_container_evictions_total{node="%s",reason="MemoryAllocatableEvict",result="succeeded"} 1`, nodebox.NodeName))
}
