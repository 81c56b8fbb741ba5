package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"

	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
	"github.com/koordlet-yarn/koordlet-yarn/test/rmemu"
)

// policyFile gives the transcode queue a low priority and Spark a high
// one; swapped gives them the other way round.
func policyFile(transcode, spark int) string {
	return fmt.Sprintf(`tiers:
  transcode: {evictBeforePods: true}
rules:
- {name: transcode-first, match: {queue: root.transcode}, priority: %d, tier: transcode}
- {name: spark, match: {applicationTypes: [SPARK]}, priority: %d}
`, transcode, spark)
}

const clusterTS = 1700000000000

func appID(app int64) string {
	return yarn.ContainerID{ClusterTimestamp: clusterTS, AppID: app, AttemptID: 1, Sequence: 1}.ApplicationID()
}

// TestPolicyEvictionOrder: the real koordlet with an RM emulator serving two
// applications in two queues and a policy file. Under memory pressure caused
// by a growing Spark executor, the idle transcode executor goes first (its
// queue's rule gives it the lowest priority and it covers the need); a
// policy edit turns the order around without a restart, and the next
// pressure takes a Spark container while the transcode ones survive; with
// the RM down, a new application's containers keep the default priority,
// the known ones keep theirs, and koordlet goes on.
func TestPolicyEvictionOrder(t *testing.T) {
	rm, err := rmemu.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = rm.Close() })
	rm.AddApp(rmemu.App{ID: appID(10), User: "video", Queue: "root.transcode", ApplicationType: "MAPREDUCE",
		AMContainer: nmemu.Spec{AppID: 10, Attempt: 1, Sequence: 1}.ID(clusterTS)})
	rm.AddApp(rmemu.App{ID: appID(11), User: "etl", Queue: "root.etl", ApplicationType: "SPARK",
		AMContainer: nmemu.Spec{AppID: 11, Attempt: 1, Sequence: 1}.ID(clusterTS)})
	file := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(file, []byte(policyFile(5100, 5900)), 0o644))

	b := startBox(t, nodebox.Options{KoordletArgs: []string{
		"--feature-gates=BEMemoryEvict=true,YARNBEMemoryEvict=true,YARNNodeManagerGuard=true,YARNQoSPolicy=true,YARNMemoryEvictTrigger=true",
		"--yarn-rm-endpoints=" + rm.URL, "--yarn-rm-timeout=500ms", "--yarn-qos-policy-file=" + file}})
	ctx := context.Background()
	launch := func(app, seq, mb int64, script string) string {
		id, err := b.NM.Launch(nmemu.Spec{AppID: app, Attempt: 1, Sequence: seq, User: "u", MemoryMB: mb, VCores: 1, Script: script})
		require.NoError(t, err)
		return id
	}
	amT := launch(10, 1, 512, "sleep 3600 & "+kerneltest.HelperScript("alloc=16"))
	amS := launch(11, 1, 512, "sleep 3600 & "+kerneltest.HelperScript("alloc=16"))
	transcode := launch(10, 2, 1024, kerneltest.HelperScript("alloc=600"))
	spark := launch(11, 2, 1024, kerneltest.HelperScript("alloc=600"))

	effective := func(id string) (int64, string, bool) {
		resp, err := b.Containers()
		if err != nil {
			return 0, "", false
		}
		q, ok := resp.QoS[id]
		return q.EffectivePriority, q.Queue, ok && q.AppKnown
	}
	require.Eventually(t, func() bool {
		p1, q1, ok1 := effective(transcode)
		p2, q2, ok2 := effective(spark)
		return ok1 && ok2 && p1 == 5100 && p2 == 5900 && q1 == "root.transcode" && q2 == "root.etl"
	}, 60*time.Second, 250*time.Millisecond, "the RM's queues and the policy's priorities in /yarn/containers")
	assert.Eventually(t, func() bool {
		v, ok := polled(t, b, "koordlet_yarn_container_effective_priority", map[string]string{"container_id": transcode, "queue": "root.transcode", "rule": "transcode-first", "tier": "transcode"})
		return ok && v == 5100
	}, 15*time.Second, 500*time.Millisecond, "the series shows queue, rule, tier and the effective priority")

	// Pressure: a growing Spark executor crosses the threshold by ~200 MiB.
	pressure := func(app, seq int64) string {
		time.Sleep(3 * time.Second) // usage settles
		total, used, err := nodebox.MemInfo()
		require.NoError(t, err)
		lower := used*100/total + 2
		threshold := lower + 1
		require.NoError(t, b.UpdateNodeSLO(ctx, func(s *slov1alpha1.NodeSLOSpec) {
			s.ResourceUsedThresholdWithBE = &slov1alpha1.ResourceThresholdStrategy{Enable: ptr.To(true),
				MemoryEvictThresholdPercent: ptr.To(threshold), MemoryEvictLowerPercent: ptr.To(lower)}
		}))
		time.Sleep(2 * time.Second)
		grow := (total*threshold/100 - used + 200<<20) >> 20
		t.Logf("node memory %d%%; threshold %d%%, lower %d%%; the grower adds %d MiB", used*100/total, threshold, lower, grow)
		return launch(app, seq, grow, kerneltest.HelperScript(fmt.Sprintf("grow=%d@256", grow)))
	}
	endPressure := func() {
		require.NoError(t, b.UpdateNodeSLO(ctx, func(s *slov1alpha1.NodeSLOSpec) { s.ResourceUsedThresholdWithBE = nil }))
		time.Sleep(5 * time.Second) // seen, and past the cooling
	}
	running := func(id string) bool { c, _ := b.NM.Get(id); return c.State == "RUNNING" }

	grower := pressure(11, 3)
	select {
	case <-b.NM.Exited(transcode):
	case <-time.After(60 * time.Second):
		t.Fatal("the transcode executor was not evicted")
	}
	time.Sleep(2 * time.Second)
	for _, id := range []string{amT, amS, spark, grower} {
		assert.True(t, running(id), "%s survives", id)
	}
	ns, name := b.NMPod()
	require.Eventually(t, func() bool {
		evs, err := b.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for _, e := range evs.Items {
			if e.Reason == "YARNContainerEvicted" && e.InvolvedObject.Name == name && strings.Contains(e.Message, transcode) &&
				strings.Contains(e.Message, "priority 5100 (GUARANTEED, queue root.transcode, policy rule transcode-first, tier transcode)") {
				return true
			}
		}
		return false
	}, 20*time.Second, 500*time.Millisecond, "the Event says why: the policy rule")
	endPressure()

	// A policy edit turns the order around, without a restart.
	pid := koordletPID(t, b)
	require.NoError(t, os.WriteFile(file, []byte(policyFile(5950, 5100)), 0o644))
	require.Eventually(t, func() bool { p, _, _ := effective(spark); return p == 5100 }, 20*time.Second, 200*time.Millisecond,
		"the reload reaches /yarn/containers")
	transcode2 := launch(10, 3, 1024, kerneltest.HelperScript("alloc=600"))
	require.Eventually(t, func() bool { p, _, ok := effective(transcode2); return ok && p == 5950 }, 30*time.Second, 200*time.Millisecond)
	grower2 := pressure(10, 4)
	deadline := time.After(60 * time.Second)
	var victim string
	for victim == "" {
		select {
		case <-b.NM.Exited(spark):
			victim = spark
		case <-b.NM.Exited(grower):
			victim = grower
		case <-b.NM.Exited(transcode2):
			t.Fatal("a transcode container was evicted after the reload")
		case <-b.NM.Exited(grower2):
			t.Fatal("the transcode grower was evicted after the reload")
		case <-deadline:
			t.Fatal("nothing evicted after the reload")
		}
	}
	t.Logf("after the reload the Spark container %s went first", victim)
	time.Sleep(time.Second)
	for _, id := range []string{amT, amS, transcode2, grower2} {
		assert.True(t, running(id), "%s survives", id)
	}
	assert.Equal(t, pid, koordletPID(t, b), "no restart")
	endPressure()

	// The RM goes down: a new application's container keeps the default,
	// the known ones keep theirs, koordlet goes on.
	rm.SetMode(rmemu.ModeError, "")
	rm.AddApp(rmemu.App{ID: appID(12), Queue: "root.transcode", ApplicationType: "MAPREDUCE"})
	fresh := launch(12, 2, 256, kerneltest.HelperScript("alloc=32"))
	require.Eventually(t, func() bool {
		resp, err := b.Containers()
		if err != nil {
			return false
		}
		q, ok := resp.QoS[fresh]
		return ok && !q.AppKnown && q.EffectivePriority == 5500
	}, 30*time.Second, 200*time.Millisecond, "unknown to a down RM: the NodeManager pod's priority")
	p, _, known := effective(transcode2)
	assert.True(t, known)
	assert.Equal(t, int64(5950), p, "cached data stays")
	time.Sleep(3 * time.Second)
	assert.True(t, running(fresh))
	assert.Equal(t, pid, koordletPID(t, b))
	rm.SetMode(rmemu.ModeActive, "")
	require.Eventually(t, func() bool { p, _, ok := effective(fresh); return ok && p == 5950 }, 60*time.Second, 250*time.Millisecond,
		"the RM back: the rule applies")
}

// koordletPID finds koordlet's pid from its process list entry.
func koordletPID(t *testing.T, b *nodebox.Box) int {
	t.Helper()
	require.True(t, b.KoordletAlive())
	return b.KoordletPID()
}
