package store

import (
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// NMWord is what the NodeManager's answers in the store's life say of one
// container: whether it runs, whether it is gone, or nothing. A consumer
// that ends or forgets a container because no NodeManager runs it must
// act on NMGone alone: a container the store has from the cgroup scan only
// (Source without SourceNM) may simply not have been asked about yet (the
// store is new at every koordlet start, filled by the scan until the
// NodeManager answers).
type NMWord int

// NodeManager words.
const (
	// NMNoWord: nothing to go by. No answer since the store knew the
	// container (koordlet restarted and the NodeManager has not answered
	// since, or answered only with a list asked for before the container
	// was known), or the latest resync could not ask the NodeManager
	// (its last word, an omission, is stale). Never evidence that the
	// container is gone, however long it lasts.
	NMNoWord NMWord = iota
	// NMRuns: the latest answer lists the container in a non-terminal
	// state. The word stands while the NodeManager cannot be asked (the
	// store keeps what it listed).
	NMRuns
	// NMGone: the latest resync's answer lists the container finished, or
	// leaves it out though the NodeManager was asked after the store knew
	// the container: the NodeManager's own word, now, that it does not run
	// it.
	NMGone
)

// String returns "no word", "runs" or "gone".
func (w NMWord) String() string {
	switch w {
	case NMRuns:
		return "runs"
	case NMGone:
		return "gone"
	}
	return "no word"
}

// nmAnswers is what the store knows of the NodeManager's answers (guarded
// by Store.mu).
type nmAnswers struct {
	// resynced: a resync has run; last is its time.
	resynced bool
	last     time.Time
	// ok: the latest resync had the NodeManager's answer; askedAfter
	// bounds when that answer was asked for: after the resync before it
	// (zero at the store's first resync: not bounded).
	ok         bool
	askedAfter time.Time
}

// note records one resync at now that had (ok) or had not the
// NodeManager's answer. The bound rests on how the answer is fetched: the
// container informer asks the NodeManager and then resyncs, one resync
// after another from one goroutine, so the NodeManager of a resync was
// asked after the resync before it.
func (n *nmAnswers) note(ok bool, now time.Time) {
	n.ok = ok
	n.askedAfter = time.Time{}
	if ok && n.resynced {
		n.askedAfter = n.last
	}
	n.resynced, n.last = true, now
}

// word decides what the answers say of c (nil: not in the store).
func (n *nmAnswers) word(c *Container) NMWord {
	switch {
	case c == nil:
		return NMNoWord // the store cannot say it knew it before the ask
	case c.Source&SourceNM != 0 && !yarn.IsTerminalState(c.State):
		return NMRuns
	case !n.ok:
		return NMNoWord
	case c.Source&SourceNM != 0:
		return NMGone // listed finished: a container is never finished before it ran
	case !n.askedAfter.IsZero() && !c.FirstSeen.After(n.askedAfter):
		return NMGone
	}
	return NMNoWord // the answer may have been asked for before the container was known
}

// NMSays returns the container with the given id (its canonical string;
// nil when the store does not have it) and, read under the same lock,
// what the NodeManager's answers say of it (see NMWord).
func (s *Store) NMSays(name string) (*Container, NMWord) {
	id, err := yarn.ParseContainerID(name)
	if err != nil {
		return nil, NMNoWord
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var c *Container
	if e, ok := s.items[id]; ok {
		c = e.c
	}
	return c, s.nm.word(c)
}
