package jobrun

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/test/jobs"
)

func TestReport(t *testing.T) {
	ms := time.Millisecond
	ls := jobs.Outcome{PhaseP99: []time.Duration{5 * ms, 10 * ms}, Utilisation: 0.30}
	alone := jobs.Outcome{Jobs: 2, Launched: 6, JobTimes: map[string]time.Duration{"a": time.Minute, "b": 2 * time.Minute}, Utilisation: 0.5}
	up := jobs.Outcome{Jobs: 2, FailedJobs: 1, Launched: 8, WithNMPod: 4, JobTimes: map[string]time.Duration{"a": 2 * time.Minute},
		PhaseP99: []time.Duration{6 * ms, 20 * ms}, Utilisation: 0.7}
	kill := jobs.Outcome{Jobs: 2, Launched: 6, Killed: 1, JobTimes: map[string]time.Duration{"a": time.Minute, "b": 3 * time.Minute},
		PhaseP99: []time.Duration{6 * ms, 12 * ms}, Utilisation: 0.75}
	out := map[jobs.Config][]jobs.Outcome{jobs.LSAlone: {ls}, jobs.BatchAlone: {alone}, jobs.UpstreamBest: {up, up}, jobs.PluginKill: {kill, kill}}
	var b strings.Builder
	require.NoError(t, Report(&b, []jobs.Config{jobs.LSAlone, jobs.BatchAlone, jobs.UpstreamBest, jobs.PluginKill}, out, jobs.DefaultTargets()))
	s := b.String()
	t.Log(s)
	assert.Contains(t, s, "upstream's best")
	assert.Contains(t, s, "50.00%", "upstream's eviction rate: 4 of 8")
	assert.Contains(t, s, "16.67%", "the plugin set's: 1 of 6")
	assert.Contains(t, s, "2.00×", "upstream's worst phase: 20 ms ÷ 10 ms")
	assert.Contains(t, s, "+45.0 points", "the plugin set's utilisation gain")
	// The verdicts: the plugin set against upstream, upstream alone.
	assert.Regexp(t, `plugin set, kill\s+zero failed jobs\s+met`, s)
	assert.Regexp(t, `upstream's best\s+zero failed jobs\s+not met`, s)
	assert.Regexp(t, `plugin set, kill\s+strictly better than upstream's best.*\s+met\s`, s)
	assert.NotRegexp(t, `upstream's best\s+strictly better`, s, "upstream is not compared with itself")

	// The SLO: the table's violation column, LS alone's own share, and
	// issue 49's verdicts on the SLO configuration (the recommended one).
	ls.Windows = []time.Duration{5 * ms, 14 * ms}
	up.Windows = []time.Duration{5 * ms, 30 * ms, 14 * ms, 13 * ms}
	slo := kill
	slo.PhaseP99, slo.Utilisation, slo.Windows, slo.SLOTarget = []time.Duration{5 * ms, 11 * ms}, 0.85, []time.Duration{5 * ms, 12 * ms, 9 * ms}, 13*ms
	out = map[jobs.Config][]jobs.Outcome{jobs.LSAlone: {ls}, jobs.BatchAlone: {alone}, jobs.UpstreamBest: {up, up}, jobs.PluginSLO: {slo, slo, slo}}
	tg := jobs.DefaultTargets()
	tg.SLO = 13 * ms
	b.Reset()
	require.NoError(t, Report(&b, []jobs.Config{jobs.LSAlone, jobs.BatchAlone, jobs.UpstreamBest, jobs.PluginSLO}, out, tg))
	s = b.String()
	t.Log(s)
	assert.Contains(t, s, "the declared SLO: p99 ≤ 13.00 ms over 5s windows (LS alone itself over it in 50.0% (1/2) of its windows)\n")
	assert.Contains(t, s, "50.0%", "upstream: 2 of 4 windows over 13 ms")
	assert.Contains(t, s, "SLO control (recommended)")
	assert.Regexp(t, `SLO control\s+zero SLO violations in every repeat\s+met`, s)
	assert.Regexp(t, `SLO control\s+utilisation ≥ upstream's best \+ 10 points\s+met`, s)
	assert.Regexp(t, `SLO control\s+the recommended configuration's worst phase range entirely below upstream's\s+met`, s)

	_, err := func() (string, error) {
		var b strings.Builder
		return b.String(), Report(&b, []jobs.Config{jobs.PluginKill}, map[jobs.Config][]jobs.Outcome{jobs.PluginKill: {kill}}, jobs.DefaultTargets())
	}()
	assert.ErrorContains(t, err, "references need", "no references: a clear error")
}
