package store

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// TestResyncCarriesStarted: the scan's start time reaches the container (an
// update when it is new), survives NM-only and scan-failed resyncs, and the
// earliest known value wins.
func TestResyncCarriesStarted(t *testing.T) {
	s := New()
	now := time.Unix(1700001000, 0)
	started := time.Unix(1700000000, 0).UTC()

	sc := scanned(2, 11)
	s.Resync(Observation{ScanOK: true, Scan: []cgroups.Container{sc}}, now)
	c, _ := s.GetByID(cid(2))
	assert.True(t, c.Started.IsZero(), "no start time read yet")
	assert.Equal(t, now, c.StartedOrFirstSeen(), "falls back to first seen")

	sc.Started = started
	st := s.Resync(Observation{ScanOK: true, Scan: []cgroups.Container{sc}}, now.Add(time.Second))
	assert.Equal(t, 1, st.Updated, "a start time learned is a change")
	c, _ = s.GetByID(cid(2))
	assert.Equal(t, started, c.Started)
	assert.Equal(t, started, c.StartedOrFirstSeen())

	sc.Started = started.Add(time.Minute) // the oldest process exited
	st = s.Resync(Observation{ScanOK: true, Scan: []cgroups.Container{sc}}, now.Add(2*time.Second))
	assert.Equal(t, Stats{}, st)
	c, _ = s.GetByID(cid(2))
	assert.Equal(t, started, c.Started, "the earliest known start wins")

	s.Resync(Observation{ScanOK: false, NMOK: true, NM: []yarn.NMContainer{nm(2, "RUNNING")}}, now.Add(3*time.Second))
	c, _ = s.GetByID(cid(2))
	assert.Equal(t, started, c.Started, "a failed scan keeps it")

	b, err := json.Marshal(c)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"started":"2023-11-14T22:13:20Z"`)
	b, err = json.Marshal(&Container{})
	require.NoError(t, err)
	assert.NotContains(t, string(b), `"started"`, "unknown: omitted")
}
