package jobs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultStream(t *testing.T) {
	phases, err := DefaultDay().Trace()
	require.NoError(t, err)
	m := DefaultMix()
	jobs, err := m.Stream(phases)
	require.NoError(t, err)
	day := phases[len(phases)-1].Start + phases[0].Duration

	count := map[Kind]int{}
	names := map[string]bool{}
	var last time.Duration
	for _, j := range jobs {
		count[j.Kind]++
		assert.False(t, names[j.Name], "%s named once", j.Name)
		names[j.Name] = true
		assert.GreaterOrEqual(t, j.At, last, "submission order")
		last = j.At
		assert.Less(t, j.At, day-phases[0].Duration, "%s starts before the last phase", j.Name)
		assert.Positive(t, j.Executors)
		assert.Positive(t, j.Tasks)
		assert.Positive(t, j.TaskTime)
	}
	// About PerHour × 24 Poisson arrivals (9.6 expected; a Poisson count
	// of that mean is within ±8 with near certainty), one long job.
	assert.InDelta(t, 9.6, count[Short]+count[Heavy], 8)
	assert.Positive(t, count[Heavy])
	assert.Greater(t, count[Short], count[Heavy])
	require.Equal(t, 1, count[Long])
	for _, j := range jobs {
		if j.Kind != Long {
			continue
		}
		peak := phases[PeakPhase(phases)]
		assert.Less(t, j.At, peak.Start, "the long job starts before the peak")
		assert.Greater(t, j.At+j.TaskTime, peak.Start+peak.Duration, "and runs through it")
	}

	again, err := m.Stream(phases)
	require.NoError(t, err)
	assert.Equal(t, jobs, again, "the same mix gives the same stream")
}

func TestStreamScalesWithTheDay(t *testing.T) {
	d := DefaultDay()
	d.Length = 6 * time.Minute // a short day: a phase is 15 s
	phases, err := d.Trace()
	require.NoError(t, err)
	jobs, err := DefaultMix().Stream(phases)
	require.NoError(t, err)
	for _, j := range jobs {
		if j.Kind == Short {
			assert.Equal(t, 8*time.Second, j.TaskTime, "half a phase, rounded to the second")
		}
	}
}

func TestStreamBacklog(t *testing.T) {
	phases, err := DefaultDay().Trace()
	require.NoError(t, err)
	none, err := DefaultMix().Stream(phases)
	require.NoError(t, err)
	m := DefaultMix()
	m.Backlog.Executors = 2
	with, err := m.Stream(phases)
	require.NoError(t, err)
	require.Len(t, with, len(none)+1, "the backlog adds one job and leaves the stream as it was")
	b := with[0]
	assert.Equal(t, Backlog, b.Kind, "it starts with the day")
	assert.Equal(t, time.Duration(0), b.At)
	assert.Equal(t, "backlog-01", b.Name)
	assert.Equal(t, 2, b.Executors)
	assert.Equal(t, phases[0].Duration.Round(time.Second), b.TaskTime)
	// Two executors, one task at a time each, a phase a task: the day
	// runs 48 of its tasks unthrottled; it has twice that.
	assert.Equal(t, 96, b.Tasks)
	assert.Greater(t, time.Duration(b.Tasks/b.Executors)*b.TaskTime, 2*(phases[len(phases)-1].Start), "more work than the day")
	assert.Equal(t, none, with[1:])
}

func TestStreamRejects(t *testing.T) {
	_, err := DefaultMix().Stream(nil)
	assert.ErrorContains(t, err, "a day of phases")
	phases, err := DefaultDay().Trace()
	require.NoError(t, err)
	m := DefaultMix()
	m.HeavyShare = 2
	_, err = m.Stream(phases)
	assert.ErrorContains(t, err, "heavy share")
	m = DefaultMix()
	m.Backlog = Shape{Executors: 1}
	_, err = m.Stream(phases)
	assert.ErrorContains(t, err, "backlog")
}
