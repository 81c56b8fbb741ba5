package store

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func cid(seq int64) yarn.ContainerID {
	return yarn.ContainerID{Epoch: 17, ClusterTimestamp: 1700000000000, AppID: 42, AttemptID: 1, Sequence: seq}
}

func scanned(seq int64, pids ...int) cgroups.Container {
	id := cid(seq)
	name := id.String()
	return cgroups.Container{Name: name, ID: id, Pids: pids, Cgroups: cgroups.Cgroups{
		cgroups.CPU: {Dir: "kubepods/besteffort/hadoop-yarn/" + name, Owned: true},
	}}
}

func nm(seq int64, state string) yarn.NMContainer {
	return yarn.NMContainer{ID: cid(seq), State: state, User: "alice", TotalMemoryNeededMB: 2048, TotalVCoresNeeded: 2, ExecutionType: yarn.ExecutionGuaranteed}
}

func names(cs []*Container) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func TestResyncMergesSources(t *testing.T) {
	s := New()
	st := s.Resync(Observation{
		Scan: []cgroups.Container{scanned(1, 10), scanned(2, 20)}, ScanOK: true,
		NM: []yarn.NMContainer{nm(1, yarn.StateRunning), nm(3, yarn.StateLocalizing), nm(4, yarn.StateDone)}, NMOK: true,
	}, t0)
	assert.Equal(t, Stats{Added: 3}, st)
	assert.Equal(t, []string{cid(1).String(), cid(2).String(), cid(3).String()}, names(s.Snapshot()))

	am, ok := s.Get(cid(1).String())
	require.True(t, ok)
	assert.Equal(t, Container{
		Name: cid(1).String(), ID: cid(1), ApplicationID: "application_1700000000000_0042", IsAM: true, AMSource: AMFromSequence,
		User: "alice", State: yarn.StateRunning, ExecutionType: yarn.ExecutionGuaranteed,
		RequestMilliCPU: 2000, RequestMemoryBytes: 2 << 30,
		Cgroups: scanned(1).Cgroups, Pids: []int{10}, FirstSeen: t0, Source: SourceBoth,
	}, *am)

	only, _ := s.Get(cid(2).String())
	assert.Equal(t, SourceCgroup, only.Source)
	assert.Empty(t, only.State)
	assert.False(t, only.IsAM)

	pending, _ := s.Get(cid(3).String())
	assert.Equal(t, SourceNM, pending.Source)
	assert.Equal(t, yarn.StateLocalizing, pending.State)
	assert.False(t, pending.HasCgroup())

	// The pending container's cgroup appears; container 2 exits; the NM
	// reports container 2 done.
	t1 := t0.Add(time.Second)
	st = s.Resync(Observation{
		Scan: []cgroups.Container{scanned(1, 10), scanned(3, 30)}, ScanOK: true,
		NM: []yarn.NMContainer{nm(1, yarn.StateRunning), nm(2, yarn.StateExitedWithFailure), nm(3, yarn.StateRunning)}, NMOK: true,
	}, t1)
	assert.Equal(t, Stats{Updated: 1, Removed: 1}, st)
	running, _ := s.Get(cid(3).String())
	assert.Equal(t, SourceBoth, running.Source)
	assert.Equal(t, []int{30}, running.Pids)
	assert.Equal(t, t0, running.FirstSeen, "first-seen survives updates")
	_, ok = s.Get(cid(2).String())
	assert.False(t, ok)

	// Nothing changed: no events, same pointers.
	before, _ := s.Get(cid(1).String())
	st = s.Resync(Observation{
		Scan: []cgroups.Container{scanned(1, 10), scanned(3, 30)}, ScanOK: true,
		NM: []yarn.NMContainer{nm(1, yarn.StateRunning), nm(3, yarn.StateRunning)}, NMOK: true,
	}, t1.Add(time.Second))
	assert.Equal(t, Stats{}, st)
	after, _ := s.Get(cid(1).String())
	assert.Same(t, before, after)
}

func TestResyncNMDownKeepsWhatItKnew(t *testing.T) {
	s := New()
	s.Resync(Observation{
		Scan: []cgroups.Container{scanned(1, 10)}, ScanOK: true,
		NM: []yarn.NMContainer{nm(1, yarn.StateRunning), nm(2, yarn.StateNew)}, NMOK: true,
	}, t0)
	// NM down: the cgroup view moves on, NM data and NM-only entries stay.
	st := s.Resync(Observation{Scan: []cgroups.Container{scanned(1, 10, 11)}, ScanOK: true}, t0.Add(time.Second))
	assert.Equal(t, Stats{Updated: 1}, st)
	c, _ := s.Get(cid(1).String())
	assert.Equal(t, []int{10, 11}, c.Pids)
	assert.Equal(t, "alice", c.User)
	assert.Equal(t, int64(2000), c.RequestMilliCPU)
	assert.Equal(t, SourceBoth, c.Source)
	_, ok := s.Get(cid(2).String())
	assert.True(t, ok)

	// NM down and the container's cgroup gone: it is removed (cgroup is truth).
	st = s.Resync(Observation{ScanOK: true}, t0.Add(2*time.Second))
	assert.Equal(t, Stats{Removed: 1}, st)
}

func TestResyncScanFailedKeepsCgroupView(t *testing.T) {
	s := New()
	s.Resync(Observation{Scan: []cgroups.Container{scanned(1, 10)}, ScanOK: true}, t0)
	st := s.Resync(Observation{NM: []yarn.NMContainer{nm(1, yarn.StateRunning)}, NMOK: true}, t0.Add(time.Second))
	assert.Equal(t, Stats{Updated: 1}, st)
	c, _ := s.Get(cid(1).String())
	assert.Equal(t, SourceBoth, c.Source)
	assert.Equal(t, []int{10}, c.Pids)

	// Both sources failed: nothing changes.
	st = s.Resync(Observation{}, t0.Add(2*time.Second))
	assert.Equal(t, Stats{}, st)
	assert.Equal(t, 1, s.Len())
}

func TestResyncNMForgetsContainer(t *testing.T) {
	s := New()
	s.Resync(Observation{
		Scan: []cgroups.Container{scanned(1, 10)}, ScanOK: true,
		NM: []yarn.NMContainer{nm(1, yarn.StateRunning)}, NMOK: true,
	}, t0)
	// The NM no longer lists it but the cgroup is there: kept, last NM data retained.
	s.Resync(Observation{Scan: []cgroups.Container{scanned(1, 10)}, ScanOK: true, NMOK: true}, t0.Add(time.Second))
	c, _ := s.Get(cid(1).String())
	assert.Equal(t, SourceCgroup, c.Source)
	assert.Equal(t, yarn.StateRunning, c.State)
}

func TestSubscribe(t *testing.T) {
	s := New()
	s.Resync(Observation{Scan: []cgroups.Container{scanned(1, 10)}, ScanOK: true}, t0)

	var mu sync.Mutex
	var got []string
	done := make(chan struct{}, 16)
	unsubscribe := s.Subscribe("test", func(ev Event) {
		mu.Lock()
		got = append(got, ev.Type.String()+" "+ev.Container.Name)
		mu.Unlock()
		done <- struct{}{}
	})
	s.Resync(Observation{Scan: []cgroups.Container{scanned(1, 10, 11), scanned(2, 20)}, ScanOK: true}, t0)
	s.Resync(Observation{Scan: []cgroups.Container{scanned(2, 20)}, ScanOK: true}, t0)
	for i := 0; i < 4; i++ {
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("events not delivered")
		}
	}
	mu.Lock()
	assert.Equal(t, "added "+cid(1).String(), got[0], "current containers are replayed first")
	assert.ElementsMatch(t, []string{"updated " + cid(1).String(), "added " + cid(2).String()}, got[1:3])
	assert.Equal(t, "removed "+cid(1).String(), got[3])
	mu.Unlock()

	unsubscribe()
	s.Resync(Observation{ScanOK: true}, t0)
	select {
	case <-done:
		t.Fatal("event after unsubscribe")
	case <-time.After(50 * time.Millisecond):
	}
}

func TestSubscriberPanicContained(t *testing.T) {
	s := New()
	delivered := make(chan struct{}, 4)
	s.Subscribe("bad", func(ev Event) {
		delivered <- struct{}{}
		panic("boom")
	})
	s.Resync(Observation{Scan: []cgroups.Container{scanned(1), scanned(2)}, ScanOK: true}, t0)
	for i := 0; i < 2; i++ {
		select {
		case <-delivered:
		case <-time.After(5 * time.Second):
			t.Fatal("subscriber stopped after a panic")
		}
	}
}
