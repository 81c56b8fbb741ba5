package e2e

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

// TestAdoptedLargeContainer (cgroup v1, YARN without container cgroups):
// an executor that allocated 600 MiB while koordlet was down (or before
// YARNContainerCgroups was turned on) is adopted by the scan; this kernel
// moves no memory charges, so its new memory cgroup is charged almost
// nothing and the 600 MiB stay charged to the NodeManager pod's. koordlet
// must still report it at ~600 MiB (metrics and /yarn/containers, which
// also says what stays charged to the NM pod), and under memory pressure
// BE memory evict must rank it by that figure: it uses more than its
// 256 MiB request, so it goes before the newer small executor, which
// survives (the release asked is below 600 MiB).
func TestAdoptedLargeContainer(t *testing.T) {
	if nodebox.PureV2() {
		kerneltest.Skip(t, "TestAdoptedLargeContainer is the cgroup v1 run")
	}
	const largeMiB = 600
	b := startBox(t, nodebox.Options{Layout: nodebox.LayoutNoYARNCgroups, KoordletArgs: []string{pressureGates + "," + adoptGate}})
	waitAdopter(t, b)
	own := func(id string) string { return b.Hierarchy() + "/" + id }

	// The executor allocates its memory in the NM pod's cgroup while
	// koordlet is down.
	b.StopKoordlet()
	large, err := b.NM.Launch(nmemu.Spec{AppID: 8, Attempt: 1, Sequence: 2, User: "spark", MemoryMB: 256, VCores: 1,
		Script: kerneltest.HelperScript("alloc=600")})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		pid := b.NM.Pid(large)
		rss, err := kerneltest.RssAnon(pid)
		return pid > 0 && err == nil && rss >= largeMiB<<20
	}, 60*time.Second, 100*time.Millisecond, "the large executor touches its %d MiB in the NM pod", largeMiB)
	require.Equal(t, b.PodCgroup("nodemanager"), procCgroup(b.NM.Pid(large), "memory"), "without koordlet it stays in the NM pod")
	require.NoError(t, b.StartKoordlet())
	waitAdopter(t, b)
	require.Eventually(t, func() bool { return procCgroup(b.NM.Pid(large), "memory") == own(large) }, 60*time.Second, 200*time.Millisecond,
		"the scan adopts the large executor after the restart")

	// The scenario: the kernel left the executor's memory charged to the NM
	// pod's memory cgroup, not to its own.
	require.Eventually(t, func() bool {
		c := find(mustContainers(t, b), large)
		return c != nil && c.MemoryAccounting() == cgroups.MemoryByCgroup
	}, 30*time.Second, 200*time.Millisecond, "koordlet finds the large executor's own memory cgroup")
	c := find(mustContainers(t, b), large)
	charged := memoryCharge(t, filepath.Join(b.CgroupRoot(), "memory", own(large)))
	say(t, "large executor: memory accounting %s, its own memory cgroup charged %d MiB (anon)", c.MemoryAccounting(), charged>>20)
	require.Less(t, charged, int64(largeMiB/2)<<20, "its memory stays charged to the NM pod (this kernel moves no charges)")

	// A small executor, adopted at its exec.
	small, err := b.NM.Launch(nmemu.Spec{AppID: 8, Attempt: 1, Sequence: 3, User: "spark", MemoryMB: 256, VCores: 1,
		Script: kerneltest.HelperScript("alloc=8")})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return procCgroup(b.NM.Pid(small), "memory") == own(small) }, 60*time.Second, 200*time.Millisecond,
		"the small executor is adopted")

	// koordlet reports the large executor at its 600 MiB.
	var reported float64
	ok := assert.Eventually(t, func() bool {
		v, ok := polled(t, b, "koordlet_yarn_container_memory_usage_bytes", map[string]string{"container_id": large})
		reported = v
		return ok && v >= 0.95*largeMiB*(1<<20)
	}, 30*time.Second, 500*time.Millisecond, "the adopted executor is reported at its %d MiB", largeMiB)
	say(t, "adopted large executor: koordlet reports %.1f MiB", reported/(1<<20))
	if ok {
		resp := mustContainers(t, b)
		require.NotNil(t, resp.MemoryAccounting)
		split := resp.MemoryAccounting.ChargedToNodeManager[large]
		say(t, "/yarn/containers: usage %d MiB, own cgroup charged %d MiB, %d MiB charged to the NM pod (all containers: %d MiB)",
			split.UsageBytes>>20, split.ChargeBytes>>20, split.ElsewhereBytes>>20, resp.MemoryAccounting.ChargedToNodeManagerBytes>>20)
		assert.GreaterOrEqual(t, split.UsageBytes, int64(0.95*largeMiB*(1<<20)), "/yarn/containers reports the executor at its %d MiB", largeMiB)
		assert.Greater(t, split.ElsewhereBytes, int64(largeMiB/2)<<20, "and that most of it stays charged to the NM pod")
		n, ok := value(scrape(t, b), "koordlet_yarn_memory_charged_to_nodemanager_bytes", nil)
		assert.True(t, ok && n >= float64(split.ElsewhereBytes), "the metric counts what stays charged to the NM pod: %v", n)
	}
	// Past the growth window: the small one is not growing.
	time.Sleep(12 * time.Second)

	// Pressure: the threshold at today's usage, the lower percent one
	// below: the release asked (1–2% of this node's memory, 240–480 MiB
	// here) is below what the large executor holds.
	total, used, err := nodebox.MemInfo()
	require.NoError(t, err)
	threshold := used * 100 / total
	lower := threshold - 1
	t.Logf("node memory %d%% used; BE memory evict threshold %d%%, lower %d%% (release %d MiB)", used*100/total, threshold, lower, (used-total*lower/100)>>20)
	require.NoError(t, b.UpdateNodeSLO(context.Background(), func(s *slov1alpha1.NodeSLOSpec) {
		s.ResourceUsedThresholdWithBE = &slov1alpha1.ResourceThresholdStrategy{Enable: ptr.To(true),
			MemoryEvictThresholdPercent: ptr.To(threshold), MemoryEvictLowerPercent: ptr.To(lower)}
	}))
	select {
	case <-b.NM.Exited(large):
	case <-b.NM.Exited(small):
		t.Errorf("the small executor was evicted first")
	case <-time.After(90 * time.Second):
		t.Fatal("koordlet evicted nothing")
	}
	var rec []string
	require.Eventually(t, func() bool {
		ev, err := b.Evictions()
		if err != nil {
			return false
		}
		rec = rec[:0]
		for _, r := range ev.Records {
			rec = append(rec, r.Container+": "+r.Why)
		}
		return len(ev.Records) > 0
	}, 20*time.Second, 200*time.Millisecond)
	say(t, "evictions: %v", rec)
	assert.Contains(t, rec[0], large, "the large executor is the first victim")
	assert.Contains(t, rec[0], "over its 256Mi request", "ranked by its true memory")
	sc, _ := b.NM.Get(small)
	assert.Equal(t, "RUNNING", sc.State, "the small executor survives (the release asked is below the large one's memory)")
}

// memoryCharge is the anonymous memory charged to a v1 memory cgroup
// (total_rss of memory.stat).
func memoryCharge(t *testing.T, dir string) int64 {
	for _, l := range strings.Split(readFile(filepath.Join(dir, "memory.stat")), "\n") {
		if v, ok := strings.CutPrefix(l, "total_rss "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("no total_rss in %s/memory.stat", dir)
	return 0
}
