package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
)

func TestObserveAndResyncAgree(t *testing.T) {
	s := New()
	var events []string
	done := make(chan struct{}, 32)
	s.Subscribe("t", func(ev Event) { events = append(events, ev.Type.String()); done <- struct{}{} })
	wait := func(n int) {
		for i := 0; i < n; i++ {
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("event not delivered")
			}
		}
	}
	id := cid(2)
	dir := "kubepods/besteffort/hadoop-yarn/" + id.String()
	scanStart := t0
	// The event source sees the cgroup and its first process after a scan began.
	s.Observe(CgroupEvent{Type: CgroupCreated, Name: id.String(), ID: id, Controller: cgroups.CPU, Dir: dir}, t0.Add(time.Millisecond))
	s.Observe(CgroupEvent{Type: CgroupAttached, Name: id.String(), ID: id, Controller: cgroups.CPU, Dir: dir, Pid: 42}, t0.Add(2*time.Millisecond))
	c, ok := s.Get(id.String())
	require.True(t, ok)
	assert.Equal(t, []int{42}, c.Pids)
	assert.Equal(t, cgroups.Ref{Dir: dir, Owned: true}, c.Cgroups[cgroups.CPU])

	// That older scan did not see it: the container stays.
	st := s.Resync(Observation{ScanOK: true, Started: scanStart}, t0.Add(3*time.Millisecond))
	assert.Equal(t, Stats{}, st)
	assert.Equal(t, 1, s.Len())
	// A scan that began later and sees it with another pid: pids of both.
	s.Resync(Observation{ScanOK: true, Started: t0.Add(time.Microsecond), Scan: []cgroups.Container{scanned(2, 43)}}, t0.Add(4*time.Millisecond))
	c, _ = s.Get(id.String())
	assert.Equal(t, []int{42, 43}, c.Pids)

	// The event source sees it go; a scan that began before does not bring it back.
	s.Observe(CgroupEvent{Type: CgroupRemoved, Name: id.String(), ID: id, Controller: cgroups.CPU}, t0.Add(5*time.Millisecond))
	assert.Equal(t, 0, s.Len())
	s.Resync(Observation{ScanOK: true, Started: t0.Add(4 * time.Millisecond), Scan: []cgroups.Container{scanned(2, 43)}}, t0.Add(6*time.Millisecond))
	assert.Equal(t, 0, s.Len(), "a stale scan does not resurrect a removed container")
	wait(4)
	assert.Equal(t, []string{"added", "updated", "updated", "removed"}, events, "no duplicate or lost events")
	// A later container that is really there is kept by a later scan.
	s.Resync(Observation{ScanOK: true, Started: t0.Add(7 * time.Millisecond), Scan: []cgroups.Container{scanned(2, 44)}}, t0.Add(8*time.Millisecond))
	assert.Equal(t, 1, s.Len())
}
