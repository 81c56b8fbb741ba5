package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

func TestNMWordDecides(t *testing.T) {
	known := t0
	asked := nmAnswers{resynced: true, last: t0.Add(20 * time.Second), ok: true, askedAfter: t0.Add(10 * time.Second)}
	failing := asked
	failing.ok = false
	first := nmAnswers{resynced: true, last: t0, ok: true}
	c := func(src Source, state string, seen time.Time) *Container {
		return &Container{Source: src, State: state, FirstSeen: seen}
	}
	for _, tc := range []struct {
		name string
		n    nmAnswers
		c    *Container
		want NMWord
	}{
		{"listed running", asked, c(SourceBoth, yarn.StateRunning, known), NMRuns},
		{"listed running, the NM failing now: its word stands", failing, c(SourceBoth, yarn.StateRunning, known), NMRuns},
		{"listed finished", asked, c(SourceBoth, yarn.StateDone, known), NMGone},
		{"listed finished at the store's first answer: never finished before it ran", first, c(SourceBoth, yarn.StateDone, known), NMGone},
		{"listed finished, the NM failing now: stale", failing, c(SourceBoth, yarn.StateDone, known), NMNoWord},
		{"left out by an answer asked after it was known", asked, c(SourceCgroup, "", known), NMGone},
		{"known just as the resync before ended: asked after", asked, c(SourceCgroup, "", asked.askedAfter), NMGone},
		{"left out, the NM failing now: stale", failing, c(SourceCgroup, "", known), NMNoWord},
		{"left out by an answer that may predate it", asked, c(SourceCgroup, "", asked.askedAfter.Add(time.Millisecond)), NMNoWord},
		{"left out by the store's first answer (not bounded)", first, c(SourceCgroup, "", known), NMNoWord},
		{"scan only, the NM never answered", nmAnswers{resynced: true, last: t0}, c(SourceCgroup, "", known), NMNoWord},
		{"no resync yet", nmAnswers{}, c(SourceCgroup, "", known), NMNoWord},
		{"not in the store", asked, nil, NMNoWord},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.n.word(tc.c))
		})
	}
}

// TestNMSaysThroughResyncs: the store's word on a container through the
// resyncs of a koordlet restarted while its NodeManager cannot be asked,
// then answers, then fails again.
func TestNMSaysThroughResyncs(t *testing.T) {
	s := New()
	scan := []cgroups.Container{scanned(1, 10), scanned(2, 20)}
	at := t0
	resync := func(nmOK bool, nmc ...yarn.NMContainer) {
		at = at.Add(10 * time.Second)
		s.Resync(Observation{Scan: scan, ScanOK: true, NM: nmc, NMOK: nmOK}, at)
	}
	says := func() [2]NMWord {
		_, w1 := s.NMSays(cid(1).String())
		_, w2 := s.NMSays(cid(2).String())
		return [2]NMWord{w1, w2}
	}
	c, w := s.NMSays(cid(1).String())
	assert.Nil(t, c)
	assert.Equal(t, NMNoWord, w, "an empty store")

	for range 60 { // 10 minutes of resyncs from the scan alone
		resync(false)
	}
	assert.Equal(t, [2]NMWord{NMNoWord, NMNoWord}, says(), "scan only: no word, however long")

	resync(true, nm(1, yarn.StateRunning))
	assert.Equal(t, [2]NMWord{NMRuns, NMGone}, says(), "the first answer: 1 listed, 2 left out")
	c, w = s.NMSays(cid(2).String())
	assert.Equal(t, SourceCgroup, c.Source)
	assert.Equal(t, NMGone, w)

	resync(false)
	assert.Equal(t, [2]NMWord{NMRuns, NMNoWord}, says(), "the NM failing: 1's listing stands, 2's omission is stale")

	resync(true, nm(1, yarn.StateDone), nm(2, yarn.StateRunning))
	assert.Equal(t, [2]NMWord{NMGone, NMRuns}, says(), "1 finished, 2 listed")

	_, w = s.NMSays("not-a-container")
	assert.Equal(t, NMNoWord, w)
}

// TestNMSaysAnswerBeforeTheContainer: an answer asked for before the store
// knew a container (its cgroup seen by an event, or by the store's first
// scan) does not prove it gone; the next answer that leaves it out does.
func TestNMSaysAnswerBeforeTheContainer(t *testing.T) {
	s := New()
	s.Resync(Observation{Scan: []cgroups.Container{scanned(1, 10)}, ScanOK: true, NMOK: true}, t0)
	_, w := s.NMSays(cid(1).String())
	assert.Equal(t, NMNoWord, w, "the store's first answer may have been asked before its scan")

	s.Resync(Observation{Scan: []cgroups.Container{scanned(1, 10)}, ScanOK: true, NMOK: true}, t0.Add(10*time.Second))
	_, w = s.NMSays(cid(1).String())
	assert.Equal(t, NMGone, w)

	id := cid(2)
	s.Observe(CgroupEvent{Type: CgroupCreated, Name: id.String(), ID: id, Controller: cgroups.CPU, Dir: "hadoop-yarn/" + id.String()}, t0.Add(15*time.Second))
	scan := []cgroups.Container{scanned(1, 10), scanned(2, 20)}
	s.Resync(Observation{Scan: scan, ScanOK: true, NMOK: true}, t0.Add(20*time.Second))
	_, w = s.NMSays(id.String())
	assert.Equal(t, NMNoWord, w, "created after the resync before: the NM may have been asked before it")
	s.Resync(Observation{Scan: scan, ScanOK: true, NMOK: true}, t0.Add(30*time.Second))
	_, w = s.NMSays(id.String())
	assert.Equal(t, NMGone, w)
}
