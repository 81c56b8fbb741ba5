package e2e

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	apiext "github.com/koordinator-sh/koordinator/apis/extension"
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"

	koordletyarn "github.com/koordlet-yarn/koordlet-yarn"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnledger"
	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
	"github.com/koordlet-yarn/koordlet-yarn/test/rmemu"
)

// otherAllocation is another scheduler's entry the ledger must keep.
const otherAllocation = `{"name":"flink-session","priority":"koord-batch","resources":{"kubernetes.io/batch-cpu":"1k"},"owner":{"kept":true}}`

// batchPod requests batch resources as koord-manager's webhook writes them.
func batchPod(name string, milliCPU int64, mem string) nodebox.PodSpec {
	return nodebox.PodSpec{Namespace: "default", Name: name,
		Labels: map[string]string{"koordinator.sh/qosClass": "BE", "koordinator.sh/priority-class": "koord-batch"},
		Extended: corev1.ResourceList{apiext.BatchCPU: *resource.NewQuantity(milliCPU, resource.DecimalSI),
			apiext.BatchMemory: resource.MustParse(mem)}}
}

// setNodeAnnotations merges annotations into the box's Node.
func setNodeAnnotations(t *testing.T, b *nodebox.Box, annotations map[string]string) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	require.NoError(t, err)
	_, err = b.Kube.CoreV1().Nodes().Patch(context.Background(), nodebox.NodeName, types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
}

func originValue(t *testing.T, milliCPU int64, mem string) string {
	a := map[string]string{}
	require.NoError(t, slov1alpha1.SetOriginExtendedAllocatableRes(a, corev1.ResourceList{
		apiext.BatchCPU: *resource.NewQuantity(milliCPU, resource.DecimalSI), apiext.BatchMemory: resource.MustParse(mem)}))
	return a[slov1alpha1.NodeOriginExtendedAllocatableAnnotationKey]
}

// nodeEntry reads the hadoop-yarn entry and the Node's annotations.
func nodeEntry(t *testing.T, b *nodebox.Box) (yarnledger.Batch, bool, map[string]string) {
	node, err := b.Kube.CoreV1().Nodes().Get(context.Background(), nodebox.NodeName, metav1.GetOptions{})
	require.NoError(t, err)
	e, ok, err := yarnledger.Entry(node.Annotations[yarnledger.AnnotationKey])
	require.NoError(t, err)
	return e, ok, node.Annotations
}

func waitEntry(t *testing.T, b *nodebox.Box, want yarnledger.Batch, within time.Duration, msg string) {
	t.Helper()
	var last yarnledger.Batch
	require.Eventually(t, func() bool {
		e, ok, _ := nodeEntry(t, b)
		last = e
		return ok && e == want
	}, within, 100*time.Millisecond, "%s: want %+v, last %+v", msg, want, last)
}

func startRM(t *testing.T) *rmemu.Server {
	rm, err := rmemu.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = rm.Close() })
	return rm
}

// TestBatchLedger: the hadoop-yarn entry of thirdPartyAllocations appears,
// follows container churn (a localizing container counts, an exited one
// does not), keeps its value while the NodeManager is down and catches up
// when it is back, and never touches another entry or annotation; YARN's
// capacity (origin − Kubernetes batch requests) goes to the active
// ResourceManager, also across a standby-then-active fail-over.
func TestBatchLedger(t *testing.T) {
	rm1, rm2 := startRM(t), startRM(t)
	rm1.RequireUser(true)
	rm2.RequireUser(true)
	// The NodeManager registered with its yarn-site capacity (an RM takes
	// no push for a node it does not list, and koordlet reads that capacity
	// before its first push).
	for _, rm := range []*rmemu.Server{rm1, rm2} {
		rm.RegisterNode(nodebox.NMNodeID, yarn.NodeResource{MemoryMB: 48 << 10, VCores: 24})
	}
	b := startBox(t, nodebox.Options{
		Pods: []nodebox.PodSpec{batchPod("spark-driver", 4000, "8Gi")},
		KoordletArgs: []string{"--feature-gates=YARNBatchLedger=true,YARNRMNodeResourceSync=true",
			"--yarn-ledger-patch-interval=300ms", "--yarn-ledger-max-age=300ms", "--yarn-rm-sync-interval=300ms",
			"--yarn-rm-endpoints=" + rm1.URL + "," + rm2.URL, "--yarn-rm-user=yarn", "--yarn-rm-timeout=1s"},
	})
	setNodeAnnotations(t, b, map[string]string{
		slov1alpha1.NodeOriginExtendedAllocatableAnnotationKey: originValue(t, 16000, "32Gi"),
		yarnledger.AnnotationKey:                               `{"allocations":[` + otherAllocation + `]}`,
		"example.com/keep":                                     "me",
	})

	t.Run("capacity pushed to the RM", func(t *testing.T) {
		want := yarn.NodeResource{MemoryMB: 24 << 10, VCores: 12} // 16 cores/32 GiB − the driver's 4/8
		require.Eventually(t, func() bool {
			r, ok := rm1.Node("127.0.0.1:8041")
			return ok && r == want
		}, 20*time.Second, 100*time.Millisecond)
		calls := rm1.Calls()
		require.NotEmpty(t, calls)
		assert.Equal(t, "yarn", calls[len(calls)-1].User)
		assert.EqualValues(t, -1, calls[len(calls)-1].OverCommitTimeout)
		l, err := b.Ledger()
		require.NoError(t, err)
		assert.Equal(t, yarnledger.Batch{MilliCPU: 4000, MemoryBytes: 8 << 30}, l.KubernetesRequested)
		assert.Equal(t, yarnledger.Batch{MilliCPU: 12000, MemoryBytes: 24 << 30}, l.YARNCapacity)
		assert.Equal(t, "127.0.0.1:8041", l.RM.NodeID, "the node id from the NM's node info")
	})

	var am, ex1 string
	t.Run("containers appear in the annotation", func(t *testing.T) {
		var err error
		am, err = b.NM.Launch(nmemu.Spec{AppID: 5, Attempt: 1, Sequence: 1, User: "spark", MemoryMB: 1024, VCores: 1, Script: "exec sleep 3600"})
		require.NoError(t, err)
		ex1, err = b.NM.Launch(nmemu.Spec{AppID: 5, Attempt: 1, Sequence: 2, User: "spark", MemoryMB: 4096, VCores: 2, Script: "exec sleep 3600"})
		require.NoError(t, err)
		waitEntry(t, b, yarnledger.Batch{MilliCPU: 3000, MemoryBytes: 5 << 30}, 15*time.Second, "AM + executor")
		_, _, ann := nodeEntry(t, b)
		assert.Equal(t, "me", ann["example.com/keep"])
		assert.Contains(t, ann[yarnledger.AnnotationKey], otherAllocation, "another scheduler's entry is kept byte for byte")
		res, err := slov1alpha1.GetThirdPartyAllocatedResByPriority(ann, apiext.PriorityBatch)
		require.NoError(t, err)
		cpu := res[apiext.BatchCPU]
		assert.Equal(t, int64(4000), cpu.Value(), "koord-manager subtracts both entries")
	})

	t.Run("a localizing container counts, an exited one does not", func(t *testing.T) {
		done := make(chan error, 1)
		go func() {
			_, err := b.NM.Launch(nmemu.Spec{AppID: 5, Attempt: 1, Sequence: 3, User: "spark", MemoryMB: 2048, VCores: 1,
				Localize: 4 * time.Second, Script: "exec sleep 3600"})
			done <- err
		}()
		waitEntry(t, b, yarnledger.Batch{MilliCPU: 4000, MemoryBytes: 7 << 30}, 3*time.Second, "while LOCALIZING")
		require.NoError(t, <-done)
		b.NM.Exit(ex1)
		<-b.NM.Exited(ex1)
		waitEntry(t, b, yarnledger.Batch{MilliCPU: 2000, MemoryBytes: 3 << 30}, 10*time.Second, "after the executor exited")
	})

	t.Run("NM down: the value is kept with its age", func(t *testing.T) {
		before, _, _ := nodeEntry(t, b)
		b.NM.SetMode(nmemu.ModeError)
		t.Cleanup(func() { b.NM.SetMode(nmemu.ModeOK) })
		b.NM.Exit(am) // its cgroup goes while the NM cannot say so
		<-b.NM.Exited(am)
		var l koordletyarn.LedgerResponse
		require.Eventually(t, func() bool {
			var err error
			l, err = b.Ledger()
			return err == nil && !l.NodeManagerOK && l.YARNAllocatedAgeSeconds > 2
		}, 20*time.Second, 200*time.Millisecond)
		after, _, _ := nodeEntry(t, b)
		assert.Equal(t, before, after, "the last value stays while the NM is down")
		assert.Equal(t, before, l.YARNAllocated)
		m, err := b.Metrics()
		require.NoError(t, err)
		assert.Contains(t, m, "koordlet_yarn_batch_yarn_allocated_age_seconds")

		b.NM.SetMode(nmemu.ModeOK)
		waitEntry(t, b, yarnledger.Batch{MilliCPU: 1000, MemoryBytes: 2 << 30}, 10*time.Second, "the NM is back")
	})

	t.Run("standby then active", func(t *testing.T) {
		rm1.SetMode(rmemu.ModeStandby, rm2.URL)
		n1 := len(rm1.Calls())
		// koord-manager changes the origin: a new capacity to push.
		setNodeAnnotations(t, b, map[string]string{slov1alpha1.NodeOriginExtendedAllocatableAnnotationKey: originValue(t, 20000, "40Gi")})
		want := yarn.NodeResource{MemoryMB: 32 << 10, VCores: 16}
		require.Eventually(t, func() bool {
			r, ok := rm2.Node("127.0.0.1:8041")
			return ok && r == want
		}, 20*time.Second, 100*time.Millisecond)
		// The fail-over happens at the first request to the standby: the
		// push itself, or (since koordlet reads the RM's node report to
		// record YARN's own capacity, issue 31 item 10) the read before it,
		// after which the push goes to the active RM alone. Either way no
		// push was taken by the standby.
		calls := rm1.Calls()[n1:]
		for _, c := range calls {
			assert.Equal(t, rmemu.ModeStandby, c.Mode, "the standby refused every push")
		}
		c2 := rm2.Calls()
		require.Len(t, c2, 1, "one call to the active RM, only when the value changed")
		if len(calls) > 0 {
			assert.True(t, c2[0].Time.After(calls[0].Time), "standby, then active")
		}
		l, err := b.Ledger()
		require.NoError(t, err)
		assert.Equal(t, rm2.URL, l.RM.Active)
		time.Sleep(time.Second)
		assert.Len(t, rm2.Calls(), 1, "unchanged: not pushed again")
	})

	_, _, ann := nodeEntry(t, b)
	assert.Equal(t, "me", ann["example.com/keep"])
	assert.True(t, strings.Contains(ann[yarnledger.AnnotationKey], otherAllocation))

	restartWithoutLedger := func(t *testing.T) {
		b.StopKoordlet()
		b.SetKoordletArgs([]string{"--yarn-rm-endpoints=" + rm1.URL + "," + rm2.URL})
		require.NoError(t, b.StartKoordlet())
	}
	koordletSaid := func(t *testing.T, line string) {
		require.Eventually(t, func() bool {
			log, err := os.ReadFile(b.KoordletLog())
			return err == nil && strings.Contains(string(log), line)
		}, 20*time.Second, 100*time.Millisecond, "koordlet logs %q", line)
	}

	t.Run("gate off: the entry koordlet-yarn wrote last is removed, the rest kept", func(t *testing.T) {
		_, ok, _ := nodeEntry(t, b)
		require.True(t, ok)
		restartWithoutLedger(t)
		require.Eventually(t, func() bool {
			_, ok, _ := nodeEntry(t, b)
			return !ok
		}, 20*time.Second, 100*time.Millisecond, "the stale entry goes")
		_, _, ann := nodeEntry(t, b)
		assert.Equal(t, "me", ann["example.com/keep"])
		assert.Equal(t, `{"allocations":[`+otherAllocation+`]}`, ann[yarnledger.AnnotationKey], "another scheduler's entry is kept byte for byte")
	})

	t.Run("gate off: an entry another writer set is left alone", func(t *testing.T) {
		mine := `{"name":"hadoop-yarn","priority":"koord-batch","resources":{"kubernetes.io/batch-cpu":"2k","kubernetes.io/batch-memory":"4Gi"}}`
		value := `{"allocations":[` + otherAllocation + `,` + mine + `]}`
		setNodeAnnotations(t, b, map[string]string{yarnledger.AnnotationKey: value}) // e.g. koord-yarn-operator
		restartWithoutLedger(t)
		koordletSaid(t, "is left as it is: another writer set the entry")
		_, _, ann := nodeEntry(t, b)
		assert.Equal(t, value, ann[yarnledger.AnnotationKey])
	})
}
