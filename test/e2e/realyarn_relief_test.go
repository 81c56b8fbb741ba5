package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"

	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
	"github.com/koordlet-yarn/koordlet-yarn/test/yarnpeer"
)

// realYARNReliefRM: memory relief's ResourceManager rung against Hadoop's
// own RM and NM. An executor grows slowly through the band below the BE
// memory evict threshold — slowly enough that the threshold is further
// away than the RM needs to release — so koordlet asks the RM, through the
// RM sync's over-commit push, for YARN's allocation on the node less what
// the growth needs; the RM preempts the most recent container (the
// grower), its AM sees PREEMPTED (-102, not a failure), koordlet kills
// nothing, the other application's executor lives on; the cap holds while
// node memory stays near the band and is withdrawn when the pressure is
// over (the RM holds YARN's capacity again), and the episode is counted
// as relieved by the ResourceManager.
func realYARNReliefRM(t *testing.T) {
	gates := "BEMemoryEvict=true,YARNBEMemoryEvict=true,YARNNodeManagerGuard=true,YARNMemoryRelief=true," +
		"YARNBatchLedger=true,YARNRMNodeResourceSync=true,YARNRMPreemption=true"
	y := startRealYARNOn(t, yarnNM{}, nodebox.Options{Layout: nodebox.LayoutCgroupfs}, true, func(p *yarnpeer.Peer) []string {
		return []string{"--feature-gates=" + gates,
			"--yarn-ledger-patch-interval=300ms", "--yarn-ledger-max-age=300ms", "--yarn-rm-sync-interval=500ms",
			"--yarn-rm-endpoints=http://" + p.RMWeb, "--yarn-rm-user=yarn", "--yarn-rm-timeout=2s",
			"--yarn-rm-preemption-timeout=3s", "--yarn-rm-preemption-grace=" + jvmWait(5*time.Second).String(),
			"--yarn-memory-throttle-band-percent=3"}
	})
	// YARN's capacity far above its allocation: no over-commit but the one
	// relief asks for.
	setNodeAnnotations(t, y.box, map[string]string{
		slov1alpha1.NodeOriginExtendedAllocatableAnnotationKey: originValue(t, 16000, "12Gi"),
	})
	ctx := context.Background()
	steady, err := y.peer.Submit(ctx, yarnpeer.App{Name: "steady", Queue: "default", Type: "MAPREDUCE", User: "etl",
		Containers: []yarnpeer.Container{{MB: 512, Vcores: 1, Command: kerneltest.HelperScript("alloc=200")}}})
	require.NoError(t, err)
	older := launchedBy(t, steady, 1)[0]
	require.Eventually(t, func() bool {
		v, ok := value(scrape(t, y.box), "koordlet_yarn_container_memory_usage_bytes", map[string]string{"container_id": older})
		return ok && v > 190<<20
	}, jvmWait(60*time.Second), 500*time.Millisecond)

	// The threshold 4 points above today's usage, the lower percent 2
	// below it, the band 3 points: the executor's 16 MiB/s enter the band
	// in ~15 s, reach the lower percent projected to the RM's release
	// (about 11 s) seconds later, and would reach the threshold half a
	// minute after that; once the RM released, node memory is back below
	// the band.
	total, used, err := nodebox.MemInfo()
	require.NoError(t, err)
	threshold := used*100/total + 4
	require.NoError(t, y.box.UpdateNodeSLO(ctx, func(s *slov1alpha1.NodeSLOSpec) {
		s.ResourceUsedThresholdWithBE = &slov1alpha1.ResourceThresholdStrategy{Enable: ptr.To(true),
			MemoryEvictThresholdPercent: ptr.To(threshold), MemoryEvictLowerPercent: ptr.To(threshold - 2)}
	}))
	time.Sleep(2 * time.Second)
	growing, err := y.peer.Submit(ctx, yarnpeer.App{Name: "growing", Queue: "default", Type: "SPARK", User: "spark",
		Containers: []yarnpeer.Container{{MB: 2048, Vcores: 1, Command: kerneltest.HelperScript("grow=1536@16")}}})
	require.NoError(t, err)
	grower := launchedBy(t, growing, 1)[0]
	var done yarnpeer.Event
	require.Eventually(t, func() bool {
		var ok bool
		done, ok = completion(growing, grower)
		return ok
	}, jvmWait(150*time.Second), 250*time.Millisecond, "the growing executor is released")
	say(t, "the real AM's report of %s: %s", grower, done.Rest)
	f := strings.Fields(done.Rest)
	require.GreaterOrEqual(t, len(f), 2)
	assert.Equal(t, preemptedExit, f[1], "the RM preempted it: PREEMPTED, not a failure")
	n, _ := value(scrape(t, y.box), "koordlet_yarn_container_evictions_total", map[string]string{"reason": "BEMemoryEvict", "result": "succeeded"})
	assert.Zero(t, n, "koordlet killed nothing")
	_, olderDone := completion(steady, older)
	assert.False(t, olderDone, "the other application's executor lives on")
	log, err := os.ReadFile(y.box.KoordletLog())
	require.NoError(t, err)
	assert.Contains(t, string(log), "asking it to release", "koordlet says what it asked of the RM")
	l, err := y.box.Ledger()
	require.NoError(t, err)
	require.NotNil(t, l.RM.Preemption)
	require.NotNil(t, l.RM.Preemption.UsageCapMB, "the cap holds while node memory is near the band")
	say(t, "YARN's capacity capped at %d MB for node memory; the RM holds %+v", *l.RM.Preemption.UsageCapMB, l.RM.RMHas)
	// The pressure over (the threshold raised far above): the cap is
	// withdrawn, YARN's capacity is the batch allocatable's again.
	require.NoError(t, y.box.UpdateNodeSLO(ctx, func(s *slov1alpha1.NodeSLOSpec) {
		s.ResourceUsedThresholdWithBE.MemoryEvictThresholdPercent = ptr.To(int64(95))
		s.ResourceUsedThresholdWithBE.MemoryEvictLowerPercent = ptr.To(int64(93))
	}))
	require.Eventually(t, func() bool {
		l, err := y.box.Ledger()
		return err == nil && l.RM.Preemption != nil && l.RM.Preemption.UsageCapMB == nil && l.RM.RMHas != nil && l.RM.RMHas.MemoryMB > 8000
	}, 60*time.Second, 250*time.Millisecond, "the cap is withdrawn once the pressure is over, the RM holds YARN's capacity again")
	assert.Eventually(t, func() bool {
		v, ok := value(scrape(t, y.box), "koordlet_yarn_memory_relief_episodes_total", map[string]string{"relieved_by": "resourcemanager"})
		return ok && v >= 1
	}, 10*time.Second, 250*time.Millisecond, "the episode relieved by the ResourceManager is counted")
	auditedRelief(t, y.box, "resourcemanager")
	require.NoError(t, steady.Finish())
	require.NoError(t, growing.Finish())
}
