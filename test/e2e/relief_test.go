package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/kill"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

// reliefGates are pressureGates with memory relief.
var reliefGates = pressureGates + ",YARNMemoryRelief=true"

// v2Relief: on cgroup v2, memory relief's throttle holds a growing
// executor that, without it, crosses the BE memory evict threshold and is
// killed (v2Pressure): as node memory enters the band below the
// threshold, koordlet lowers the YARN root's memory.high; the executor's
// growth is throttled, node memory stays below the threshold and nothing
// is killed. A koordlet that crashes in the middle of the episode leaves
// the throttle and its record, and the next one takes it over; a
// threshold raised gives memory.high back ("max") and the executor
// completes its allocation; the episode is counted as relieved by the
// throttle; a clean stop gives the throttle back; with the gate off
// nothing of relief is left on the root.
func v2Relief(t *testing.T, l nodebox.Layout) {
	const band = 6 // percent of node memory
	b := startBox(t, nodebox.Options{Layout: l, KoordletArgs: []string{reliefGates, "--yarn-memory-throttle-band-percent=6"}})
	ctx := context.Background()
	am, err := b.NM.Launch(nmemu.Spec{AppID: 7, Attempt: 1, Sequence: 1, User: "spark", MemoryMB: 512, VCores: 1,
		Script: "sleep 3600 & " + kerneltest.HelperScript("alloc=32")})
	require.NoError(t, err)
	time.Sleep(3 * time.Second)

	// The threshold 10 points above today's usage, the lower percent one
	// below it: the throttle starts 4 points above today's usage and
	// holds near 7, 3 points (240 MiB in the guest) below the threshold
	// for what else the node's processes take meanwhile (a restarted
	// koordlet among them); the executor wants 14 points more, at a pace
	// the 1-second check follows.
	total, used, err := nodebox.MemInfo()
	require.NoError(t, err)
	threshold := used*100/total + 10
	limit := total * threshold / 100
	require.NoError(t, b.UpdateNodeSLO(ctx, func(s *slov1alpha1.NodeSLOSpec) {
		s.ResourceUsedThresholdWithBE = &slov1alpha1.ResourceThresholdStrategy{Enable: ptr.To(true),
			MemoryEvictThresholdPercent: ptr.To(threshold), MemoryEvictLowerPercent: ptr.To(threshold - 1)}
	}))
	time.Sleep(2 * time.Second) // koordlet sees the NodeSLO
	growMiB := total * 14 / 100 >> 20
	rate := max(total/100>>20, 16) // a point of node memory a second
	grower, err := b.NM.Launch(nmemu.Spec{AppID: 7, Attempt: 1, Sequence: 2, User: "spark", MemoryMB: 4096, VCores: 1,
		Script: kerneltest.HelperScript("grow=" + strconv.FormatInt(growMiB, 10) + "@" + strconv.FormatInt(rate, 10))})
	require.NoError(t, err)
	say(t, "node memory %d MiB of %d MiB; threshold %d%% (%d MiB), throttle from %d%%; the executor grows %d MiB at %d MiB/s",
		used>>20, total>>20, threshold, limit>>20, threshold-band, growMiB, rate)

	high := filepath.Join(b.CgroupRoot(), b.Hierarchy(), "memory.high")
	readHigh := func() string { return readFile(high) }
	// Held: for 15 s after the throttle is on, node memory below the
	// threshold and the executor alive.
	require.Eventually(t, func() bool { return readHigh() != "max" }, 30*time.Second, 100*time.Millisecond,
		"koordlet throttles the YARN root (memory.high)")
	say(t, "the YARN root's memory.high %s", readHigh())
	hold := func(d time.Duration) int64 {
		peak := int64(0)
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			_, u, err := nodebox.MemInfo()
			require.NoError(t, err)
			peak = max(peak, u)
			select {
			case <-b.NM.Exited(grower):
				t.Fatalf("the executor ended while throttled (node memory peak %d MiB, threshold %d MiB)", peak>>20, limit>>20)
			default:
			}
		}
		return peak
	}
	peak := hold(15 * time.Second)
	assert.Less(t, peak, limit, "node memory stays below the threshold")
	grown := memoryCurrent(b, grower)
	say(t, "held 15 s: node memory peak %d MiB (threshold %d MiB), the executor holds %d MiB of its %d, memory.high %s",
		peak>>20, limit>>20, grown>>20, growMiB, readHigh())
	assert.Less(t, grown, growMiB<<20, "the executor's growth is held back")

	// koordlet crashes in the middle of the episode: the throttle and its
	// record stay, the executor stays held while no koordlet runs, and
	// the next koordlet takes the throttle over from the record.
	xattr := func() bool {
		_, err := unix.Getxattr(filepath.Dir(high), cgroups.PriorMemoryHighXattr, make([]byte, 64))
		return err == nil
	}
	b.KillKoordlet()
	assert.NotEqual(t, "max", readHigh(), "a crashed koordlet's throttle stays")
	assert.True(t, xattr(), "with its record")
	peak = hold(5 * time.Second)
	assert.Less(t, peak, limit, "the executor stays held while no koordlet runs")
	require.NoError(t, b.StartKoordlet())
	require.Eventually(t, func() bool {
		v, ok := polled(t, b, "koordlet_yarn_memory_throttle_bytes", nil)
		return ok && v > 0
	}, 30*time.Second, 200*time.Millisecond, "the restarted koordlet takes the throttle over")
	peak = hold(8 * time.Second)
	assert.Less(t, peak, limit, "node memory stays below the threshold across the restart")
	say(t, "after a crash and a restart: node memory peak %d MiB, memory.high %s", peak>>20, readHigh())

	// Headroom back: the threshold raised far above the executor's need.
	require.NoError(t, b.UpdateNodeSLO(ctx, func(s *slov1alpha1.NodeSLOSpec) {
		s.ResourceUsedThresholdWithBE.MemoryEvictThresholdPercent = ptr.To(int64(95))
		s.ResourceUsedThresholdWithBE.MemoryEvictLowerPercent = ptr.To(int64(93))
	}))
	require.Eventually(t, func() bool { return readHigh() == "max" }, 30*time.Second, 200*time.Millisecond,
		"memory.high given back as headroom returns")
	assert.False(t, xattr(), "the record is gone with the throttle")
	require.Eventually(t, func() bool { return memoryCurrent(b, grower) >= (growMiB-8)<<20 }, 60*time.Second, 200*time.Millisecond,
		"the executor completes its allocation")
	for _, id := range []string{am, grower} {
		c, _ := b.NM.Get(id)
		assert.Equal(t, "RUNNING", c.State, "%s survives", id)
	}
	fams := scrape(t, b)
	n, _ := value(fams, "koordlet_yarn_container_evictions_total", map[string]string{"reason": "BEMemoryEvict", "result": "succeeded"})
	assert.Zero(t, n, "nothing killed")
	assert.Eventually(t, func() bool {
		v, ok := polled(t, b, "koordlet_yarn_memory_relief_episodes_total", map[string]string{"relieved_by": "throttle"})
		return ok && v >= 1
	}, 10*time.Second, 200*time.Millisecond, "the episode relieved by the throttle is counted")
	auditedRelief(t, b, "throttle")
	log, err := os.ReadFile(b.KoordletLog())
	require.NoError(t, err)
	assert.Contains(t, string(log), "memory relief: node memory", "the throttle says when it starts")

	// A clean stop gives the throttle back: the node in the band again
	// (the executor, done, holds what it grew), then koordlet stopped.
	_, used, err = nodebox.MemInfo()
	require.NoError(t, err)
	threshold = used*100/total + 2
	require.NoError(t, b.UpdateNodeSLO(ctx, func(s *slov1alpha1.NodeSLOSpec) {
		s.ResourceUsedThresholdWithBE.MemoryEvictThresholdPercent = ptr.To(threshold)
		s.ResourceUsedThresholdWithBE.MemoryEvictLowerPercent = ptr.To(threshold - 1)
	}))
	require.Eventually(t, func() bool { return readHigh() != "max" }, 30*time.Second, 100*time.Millisecond, "throttled again")
	b.StopKoordlet()
	assert.Equal(t, "max", readHigh(), "a stopping koordlet gives the throttle back")
	assert.False(t, xattr(), "and its record")

	// The gate off: nothing of relief left.
	b.SetKoordletArgs([]string{pressureGates})
	require.NoError(t, b.StartKoordlet())
	assert.Equal(t, "max", readHigh())
	assert.Eventually(t, func() bool {
		r, err := b.Restore()
		if err != nil {
			return false
		}
		for _, k := range r.Kinds {
			if k.Kind == "memory-relief" {
				return k.Off && k.Pending == 0
			}
		}
		return false
	}, 20*time.Second, 500*time.Millisecond, "/yarn/restore: nothing of memory relief left")
	for _, id := range []string{am, grower} {
		c, _ := b.NM.Get(id)
		assert.Equal(t, "RUNNING", c.State, "%s survives", id)
	}
}

// memoryCurrent is a v2 container's memory.current (0 when gone).
func memoryCurrent(b *nodebox.Box, id string) int64 {
	v, err := cgroups.ParseMemoryValue(readFile(filepath.Join(b.NM.CgroupDir("", id), "memory.current")))
	if err != nil {
		return 0
	}
	return v
}

// auditedRelief checks koordlet's audit (/yarn/evictions): a pressure
// episode's record relieved by the rung by, and no eviction.
func auditedRelief(t *testing.T, b *nodebox.Box, by string) {
	t.Helper()
	ev, err := b.Evictions()
	require.NoError(t, err)
	var relief []kill.AuditRecord
	for _, r := range ev.Records {
		if r.IsEviction() {
			t.Errorf("an eviction in the audit: %+v", r)
			continue
		}
		relief = append(relief, r)
	}
	if assert.NotEmpty(t, relief, "the episode's decision is in the audit") {
		r := relief[len(relief)-1]
		say(t, "the audit's record of the episode: relieved by the %s: %s", r.Outcome, r.Why)
		assert.Equal(t, by, r.Outcome)
		if assert.NotNil(t, r.Relief) {
			assert.False(t, r.Relief.Crossed, "the threshold never crossed")
			assert.Positive(t, r.Relief.PeakUsedBytes)
		}
	}
}
