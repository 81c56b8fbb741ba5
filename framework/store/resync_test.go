package store

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// TestResyncNMOnlyKeepsWhatALaterEventAdded: a scan that began before an
// event saw a container's cgroup does not see it; when the NM lists the
// container, the resync keeps the event's cgroups, pids and source instead
// of turning it into an NM-only container without cgroups.
func TestResyncNMOnlyKeepsWhatALaterEventAdded(t *testing.T) {
	id := cid(5)
	dir := "kubepods/besteffort/hadoop-yarn/" + id.String()
	for _, knownFromNM := range []bool{true, false} {
		name := "first seen by the event"
		if knownFromNM {
			name = "known from the NM before"
		}
		t.Run(name, func(t *testing.T) {
			s := New()
			if knownFromNM {
				s.Resync(Observation{ScanOK: true, NMOK: true, NM: []yarn.NMContainer{nm(5, yarn.StateLocalizing)}}, t0)
				c, ok := s.GetByID(id)
				require.True(t, ok)
				require.Equal(t, SourceNM, c.Source)
			}
			scanStart := t0.Add(time.Second)
			s.Observe(CgroupEvent{Type: CgroupCreated, Name: id.String(), ID: id, Controller: cgroups.CPU, Dir: dir}, scanStart.Add(time.Millisecond))
			s.Observe(CgroupEvent{Type: CgroupAttached, Name: id.String(), ID: id, Controller: cgroups.CPU, Dir: dir, Pid: 55}, scanStart.Add(2*time.Millisecond))

			// The scan began before the events and did not see the cgroup.
			s.Resync(Observation{ScanOK: true, NMOK: true, NM: []yarn.NMContainer{nm(5, yarn.StateRunning)}, Started: scanStart}, scanStart.Add(3*time.Millisecond))
			c, ok := s.GetByID(id)
			require.True(t, ok)
			assert.Equal(t, cgroups.Ref{Dir: dir, Owned: true}, c.Cgroups[cgroups.CPU], "the event's cgroup stays")
			assert.Equal(t, []int{55}, c.Pids, "the event's pid stays")
			assert.Equal(t, SourceBoth, c.Source)
			assert.True(t, c.HasCgroup())
			assert.Equal(t, yarn.StateRunning, c.State, "the NM still enriches it")
			assert.Equal(t, int64(2000), c.RequestMilliCPU)

			// A scan that began after the events and sees the cgroup agrees.
			later := scanStart.Add(10 * time.Millisecond)
			s.Resync(Observation{ScanOK: true, Scan: []cgroups.Container{scanned(5, 55)}, NMOK: true, NM: []yarn.NMContainer{nm(5, yarn.StateRunning)}, Started: later}, later.Add(time.Millisecond))
			c, _ = s.GetByID(id)
			assert.Equal(t, SourceBoth, c.Source)
			assert.Equal(t, []int{55}, c.Pids)

			// A scan that began after the last event and does not see the
			// cgroup is the truth: NM-only again.
			latest := later.Add(10 * time.Millisecond)
			s.Resync(Observation{ScanOK: true, NMOK: true, NM: []yarn.NMContainer{nm(5, yarn.StateRunning)}, Started: latest}, latest.Add(time.Millisecond))
			c, _ = s.GetByID(id)
			assert.Equal(t, SourceNM, c.Source)
			assert.False(t, c.HasCgroup())
			assert.Empty(t, c.Pids)
			assert.Equal(t, cgroups.Cgroups{}, c.Cgroups)
		})
	}
}

// TestResyncNonCanonicalNMIDKeepsTheContainer: the NM lists exec 2 and
// then exec 2's id with one more leading zero carrying another user's data;
// the store keeps exec 2's own data.
func TestResyncNonCanonicalNMIDKeepsTheContainer(t *testing.T) {
	const exec2 = "container_e17_1700000000000_0042_01_000002"
	body := `{"containers":{"container":[
		{"id":"` + exec2 + `","state":"RUNNING","user":"alice","totalVCoresNeeded":2,"totalMemoryNeededMB":2048,"executionType":"GUARANTEED"},
		{"id":"container_e17_1700000000000_0042_01_0000002","state":"RUNNING","user":"mallory","totalVCoresNeeded":64,"totalMemoryNeededMB":65536,"executionType":"OPPORTUNISTIC"}]}}`
	list, err := yarn.DecodeContainers(strings.NewReader(body))
	require.NoError(t, err)
	s := New()
	s.Resync(Observation{Scan: []cgroups.Container{scanned(2, 20)}, ScanOK: true, NM: list, NMOK: true}, t0)
	require.Equal(t, 1, s.Len())
	c, ok := s.Get(exec2)
	require.True(t, ok)
	assert.Equal(t, "alice", c.User)
	assert.Equal(t, int64(2000), c.RequestMilliCPU)
	assert.Equal(t, int64(2048)<<20, c.RequestMemoryBytes)
	assert.Equal(t, yarn.ExecutionGuaranteed, c.ExecutionType)
	_, ok = s.Get("container_e17_1700000000000_0042_01_0000002")
	assert.False(t, ok, "a non-canonical name does not find exec 2")
}
