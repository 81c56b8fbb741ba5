package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apiext "github.com/koordinator-sh/koordinator/apis/extension"
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"

	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnledger"
	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

// colocationConfig turns koord-manager's colocation on with quick reports
// and updates (Koordinator's slo-controller-config, colocation-config key).
const colocationConfig = `{"enable":true,"metricAggregateDurationSeconds":30,"metricReportIntervalSeconds":2,
"cpuReclaimThresholdPercent":65,"memoryReclaimThresholdPercent":65,"degradeTimeMinutes":15,
"updateTimeThresholdSeconds":5,"resourceDiffThreshold":0.01}`

// TestKoordManagerSubtractsYARN: Koordinator's own koord-manager v1.8.0 (its
// noderesource and nodemetric controllers), run against the box's API
// server beside the real koordlet with YARNBatchLedger, publishes the
// Node's batch allocatable as its origin minus the hadoop-yarn entry
// koordlet keeps: when YARN containers start, kubernetes.io/batch-cpu and
// batch-memory drop by exactly their requests, and come back when they end.
func TestKoordManagerSubtractsYARN(t *testing.T) {
	b := startBox(t, nodebox.Options{
		ExtraCRDs:    nodebox.KoordManagerCRDs,
		KoordletArgs: []string{"--feature-gates=YARNBatchLedger=true", "--yarn-ledger-patch-interval=300ms", "--yarn-ledger-max-age=300ms"},
	})
	ctx := context.Background()
	km, err := b.StartKoordManager(ctx, colocationConfig)
	require.NoError(t, err)
	t.Cleanup(func() {
		km.Stop()
		if t.Failed() {
			t.Logf("koord-manager log tail:\n%s", km.LogTail(4000))
		}
	})

	// batch reads the Node's published batch allocatable, its origin and
	// the hadoop-yarn entry.
	type batch struct{ allocCPU, allocMem, originCPU, originMem, yarnCPU, yarnMem int64 }
	read := func() (batch, bool) {
		node, err := b.Kube.CoreV1().Nodes().Get(ctx, nodebox.NodeName, metav1.GetOptions{})
		if err != nil {
			return batch{}, false
		}
		cpu, okCPU := node.Status.Allocatable[apiext.BatchCPU]
		mem, okMem := node.Status.Allocatable[apiext.BatchMemory]
		origin, err := slov1alpha1.GetOriginExtendedAllocatable(node.Annotations)
		if !okCPU || !okMem || err != nil || origin == nil {
			return batch{}, false
		}
		oc, om := origin.Resources[apiext.BatchCPU], origin.Resources[apiext.BatchMemory]
		y, _, err := yarnledger.Entry(node.Annotations[yarnledger.AnnotationKey])
		if err != nil {
			return batch{}, false
		}
		return batch{cpu.Value(), mem.Value(), oc.Value(), om.Value(), y.MilliCPU, y.MemoryBytes}, true
	}
	var last batch
	waitFor := func(msg string, ok func(batch) bool) {
		t.Helper()
		if !assert.Eventually(t, func() bool {
			v, got := read()
			last = v
			return got && ok(v)
		}, 90*time.Second, 250*time.Millisecond, msg) {
			node, err := b.Kube.CoreV1().Nodes().Get(ctx, nodebox.NodeName, metav1.GetOptions{})
			if err == nil {
				t.Logf("last read %+v\nNode annotations: %v\nallocatable: %v", last, node.Annotations, node.Status.Allocatable)
			}
			t.FailNow()
		}
	}
	waitFor("koord-manager publishes a batch allocatable with its origin", func(v batch) bool {
		return v.originMem > 4<<30 && v.originCPU > 0 && v.allocMem == v.originMem && v.allocCPU == v.originCPU
	})
	before := last
	t.Logf("before YARN: origin %dm / %d MiB, allocatable %dm / %d MiB", before.originCPU, before.originMem>>20, before.allocCPU, before.allocMem>>20)

	_, err = b.NM.Launch(nmemu.Spec{AppID: 7, Attempt: 1, Sequence: 1, User: "spark", MemoryMB: 1024, VCores: 1, Script: "exec sleep 3600"})
	require.NoError(t, err)
	ex, err := b.NM.Launch(nmemu.Spec{AppID: 7, Attempt: 1, Sequence: 2, User: "spark", MemoryMB: 2048, VCores: 1, Script: "exec sleep 3600"})
	require.NoError(t, err)
	// koord-manager's batch plugin: allocatable = origin − koord-batch
	// third-party allocations, floored at zero.
	minus := func(v batch, cpu, mem int64) bool {
		return v.yarnCPU == cpu && v.yarnMem == mem && v.allocCPU == max(v.originCPU-cpu, 0) && v.allocMem == max(v.originMem-mem, 0)
	}
	waitFor("the Node's batch allocatable is the origin minus YARN's 2 vcores / 3 GiB", func(v batch) bool { return minus(v, 2000, 3<<30) })
	t.Logf("with YARN: origin %dm / %d MiB, allocatable %dm / %d MiB", last.originCPU, last.originMem>>20, last.allocCPU, last.allocMem>>20)

	b.NM.Exit(ex)
	<-b.NM.Exited(ex)
	waitFor("the executor's share comes back", func(v batch) bool { return minus(v, 1000, 1<<30) })
	t.Logf("after the executor: origin %dm / %d MiB, allocatable %dm / %d MiB", last.originCPU, last.originMem>>20, last.allocCPU, last.allocMem>>20)
}
