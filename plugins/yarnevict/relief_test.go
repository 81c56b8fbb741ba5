package yarnevict

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/rmrelease"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/kill"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/relief"
)

// TestReliefAsksTheRM: on a node whose memory grows slowly through the
// band (cgroup v1 here: no throttle, the band frames the episode), relief
// asks the ResourceManager for a release once the growth is known and the
// threshold is further away than the RM needs; the ask is withdrawn when
// the episode ends, which is counted as relieved by the ResourceManager.
// A fast growth is left to the kill at the threshold.
func TestReliefAsksTheRM(t *testing.T) {
	old := system.UseCgroupsV2.Load()
	system.UseCgroupsV2.Store(false)
	t.Cleanup(func() { system.UseCgroupsV2.Store(old) })
	require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{
		string(features.YARNMemoryRelief): true, string(features.YARNBEMemoryEvict): true, string(koordfeatures.BEMemoryEvict): true}))
	t.Cleanup(func() {
		_ = koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{
			string(features.YARNMemoryRelief): false, string(features.YARNBEMemoryEvict): false, string(koordfeatures.BEMemoryEvict): false})
	})
	const mib = int64(1 << 20)
	lv := relief.Levels{Threshold: 20000 * mib, Lower: 19000 * mib, Capacity: 40000 * mib} // band 5%: from 18000 MiB
	run := func(rate int64) (*relief.Relief, *rmrelease.Window, *Metrics) {
		m, err := NewMetrics(prometheus.NewRegistry())
		require.NoError(t, err)
		w := &rmrelease.Window{}
		clock := time.Unix(1000, 0)
		r := &relief.Relief{BandPercent: func() int64 { return 5 }, Metrics: m.Relief, RM: w, RMReady: func() bool { return true },
			RMDelay: func() time.Duration { return 20 * time.Second }, Allocated: func() int64 { return 8192 },
			Now: func() time.Time { return clock }, Audit: kill.NewAudit(nil, 0, 0)}
		used := 18750 * mib
		for i := 0; i < 12 && used < lv.Threshold; i++ {
			lv.Used = used
			r.Check("hadoop-yarn", lv)
			clock = clock.Add(time.Second)
			used += rate * mib
		}
		return r, w, m
	}

	r, w, m := run(10) // 10 MiB/s: the threshold 190 s away
	capMB, ok := w.UsageAsk()
	require.True(t, ok, "a slow growth is asked of the RM")
	assert.InDelta(t, 8192-(18750+110+200-19000), capMB, 2, "YARN's allocation less what brings usage, projected to the RM's release, down to the lower percent")
	lv.Used = 16000 * mib // the pressure is over
	r.Check("hadoop-yarn", lv)
	_, ok = w.UsageAsk()
	assert.False(t, ok, "the ask is withdrawn")
	assert.Equal(t, 1.0, testutil.ToFloat64(m.Relief.ReliefEpisodes.WithLabelValues("", "resourcemanager")))
	// The episode's decision in the audit, told apart from evictions.
	recs, total := r.Audit.Recent()
	require.Len(t, recs, 1)
	assert.Equal(t, 1, total)
	e := recs[0]
	assert.Equal(t, kill.AuditRelief, e.Kind)
	assert.False(t, e.IsEviction(), "an episode's record is no kill")
	assert.Equal(t, "resourcemanager", e.Outcome)
	require.NotNil(t, e.Relief)
	assert.Equal(t, (18750+110)*mib, e.Relief.PeakUsedBytes, "the highest use at a check")
	assert.Equal(t, lv.Threshold, e.Relief.ThresholdBytes)
	assert.Equal(t, "12s", e.Relief.Duration, "from the first check in the band to the release")
	assert.Positive(t, e.Relief.AskedMB)
	assert.Zero(t, e.Relief.LowestHighBytes, "cgroup v1: no memory.high written")
	assert.False(t, e.Relief.Crossed)
	assert.False(t, e.Relief.Interrupted)
	assert.Contains(t, e.Why, "the ResourceManager asked to release")

	r, w, m = run(300) // 300 MiB/s: the threshold in 6 s, the RM needs 20
	_, ok = w.UsageAsk()
	assert.False(t, ok, "a fast growth is left to the kill")
	// koordlet stops during the episode: recorded as interrupted, not
	// counted as relieved.
	r.Release("koordlet stops", false)
	recs, _ = r.Audit.Recent()
	require.Len(t, recs, 1)
	assert.True(t, recs[0].Relief.Interrupted)
	assert.Equal(t, "none", recs[0].Outcome, "v1, nothing asked")
	assert.Equal(t, 0.0, testutil.ToFloat64(m.Relief.ReliefEpisodes.WithLabelValues("", "none")))
}

// TestAuditRecordKind: records written before relief had no kind: they
// are evictions.
func TestAuditRecordKind(t *testing.T) {
	assert.True(t, kill.AuditRecord{}.IsEviction())
	assert.True(t, kill.AuditRecord{Kind: kill.AuditEviction}.IsEviction())
	assert.False(t, kill.AuditRecord{Kind: kill.AuditRelief}.IsEviction())
}
