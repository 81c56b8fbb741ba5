package colocation

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseBeganAndResults(t *testing.T) {
	began, err := parseBegan("began 1000000000")
	require.NoError(t, err)
	assert.Equal(t, time.Unix(1, 0), began)
	_, err = parseBegan("listening 127.0.0.1:1")
	assert.Error(t, err)

	rs, err := parseResults(strings.NewReader("0 1000000000 2000000 200 0\n1 1010000000 3000000 0 1\n"))
	require.NoError(t, err)
	assert.Equal(t, []attackResult{
		{Seq: 0, Sent: time.Unix(1, 0), Latency: 2 * time.Millisecond},
		{Seq: 1, Sent: time.Unix(1, 10_000_000), Latency: 3 * time.Millisecond, Failed: true},
	}, rs)
	_, err = parseResults(strings.NewReader("0 1 2\n"))
	assert.Error(t, err)
}

// The window is chosen by the open-loop schedule (seq / rate), not by when
// a late client sent the request, and a late send shows as pacer lag.
func TestWindowSamplesBySchedule(t *testing.T) {
	began := time.Unix(100, 0)
	var rs []attackResult
	for seq := 0; seq < 40; seq++ { // 10 req/s for 4 s
		due := began.Add(time.Duration(seq) * 100 * time.Millisecond)
		sent := due
		if seq == 25 {
			sent = due.Add(300 * time.Millisecond) // the client was late
		}
		rs = append(rs, attackResult{Seq: uint64(seq), Sent: sent, Latency: time.Duration(seq+1) * time.Millisecond, Failed: seq == 30})
	}
	samples, lag := windowSamples(rs, began, 10, began.Add(2*time.Second), began.Add(4*time.Second))
	require.Len(t, samples, 20) // seq 20..39
	assert.Equal(t, 21*time.Millisecond, samples[0].Latency)
	assert.False(t, samples[10].OK) // seq 30
	assert.Equal(t, 300*time.Millisecond, lag)

	timed := timedSamples(rs, began, 10, began.Add(2*time.Second), began.Add(4*time.Second))
	require.Len(t, timed, 20)
	assert.Equal(t, TimedSample{Due: 0, Sample: Sample{Latency: 21 * time.Millisecond, OK: true}}, timed[0], "due from the span's start")
	assert.Equal(t, 500*time.Millisecond, timed[5].Due, "seq 25 by its schedule, not its late send")
	assert.False(t, timed[10].OK)
}
