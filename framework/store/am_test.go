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

// TestResyncCarriesAMFromEnvironment: a container starts with the sequence
// rule; what a scan read from its process environment replaces it (an
// update, for subscribers and eviction's ranking); an undecided scan, a
// failed scan, an NM-only resync and an event keep it.
func TestResyncCarriesAMFromEnvironment(t *testing.T) {
	now := time.Unix(1700001000, 0)
	for _, tc := range []struct {
		name     string
		seq      int64
		ev       cgroups.AMEvidence
		wantAM   bool
		wantFrom AMSource
	}{
		{"epoch executor 000001: not the AM", 1, cgroups.NotAMByEnvironment, false, AMFromEnvironment},
		{"AM numbered past 1", 7, cgroups.AMByEnvironment, true, AMFromEnvironment},
		{"AM numbered 1", 1, cgroups.AMByEnvironment, true, AMFromEnvironment},
		{"undecided: sequence 1", 1, cgroups.AMUnknown, true, AMFromSequence},
		{"undecided: sequence 2", 2, cgroups.AMUnknown, false, AMFromSequence},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New()
			sc := scanned(tc.seq, 11)
			s.Resync(Observation{ScanOK: true, Scan: []cgroups.Container{sc}}, now)
			c, _ := s.GetByID(cid(tc.seq))
			assert.Equal(t, tc.seq == 1, c.IsAM)
			assert.Equal(t, AMFromSequence, c.AMSource)

			sc.AM = tc.ev
			st := s.Resync(Observation{ScanOK: true, Scan: []cgroups.Container{sc}}, now.Add(time.Second))
			changed := tc.ev != cgroups.AMUnknown
			assert.Equal(t, changed, st.Updated == 1, "a decision is an update")
			check := func(why string) {
				t.Helper()
				c, ok := s.GetByID(cid(tc.seq))
				require.True(t, ok)
				assert.Equal(t, tc.wantAM, c.IsAM, why)
				assert.Equal(t, tc.wantFrom, c.AMSource, why)
			}
			check("after the scan")

			sc.AM = cgroups.AMUnknown
			s.Resync(Observation{ScanOK: true, Scan: []cgroups.Container{sc}}, now.Add(2*time.Second))
			check("an undecided scan keeps it")
			s.Resync(Observation{ScanOK: false, NMOK: true, NM: []yarn.NMContainer{nm(tc.seq, "RUNNING")}}, now.Add(3*time.Second))
			check("a failed scan keeps it")
			s.Observe(CgroupEvent{Type: CgroupAttached, Name: sc.Name, ID: sc.ID, Controller: cgroups.CPU, Dir: sc.Cgroups[cgroups.CPU].Dir, Pid: 12}, now.Add(4*time.Second))
			check("an event keeps it")
		})
	}
}

func TestContainerJSONNamesAMSource(t *testing.T) {
	s := New()
	sc := scanned(1, 11)
	sc.AM = cgroups.NotAMByEnvironment
	s.Resync(Observation{ScanOK: true, Scan: []cgroups.Container{sc}}, time.Unix(1700001000, 0))
	c, _ := s.GetByID(cid(1))
	b, err := json.Marshal(c)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"applicationMaster":false,"amSource":"environment"`)

	s.Resync(Observation{ScanOK: true, Scan: []cgroups.Container{scanned(2, 12)}}, time.Unix(1700001001, 0))
	c, _ = s.GetByID(cid(2))
	b, err = json.Marshal(c)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"applicationMaster":false,"amSource":"sequence"`)
}
