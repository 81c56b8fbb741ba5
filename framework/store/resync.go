package store

import (
	"slices"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// Observation is what one resync saw.
type Observation struct {
	// Scan is the cgroup scan; ScanOK is false when the scan failed, in
	// which case the store keeps what it knew from cgroups.
	Scan   []cgroups.Container
	ScanOK bool
	// NM is the NodeManager's container list; NMOK is false when the NM
	// could not be asked (down, slow, garbage, not found), in which case
	// the store keeps what it knew from the NM. The NM must have been asked
	// after the previous Resync (NMSays takes an omission as the NM's word
	// only for containers the store knew by then).
	NM   []yarn.NMContainer
	NMOK bool
	// Started is when the observation began (before the scan); events
	// observed after it win over it. Zero means the resync's own time.
	Started time.Time
}

// Stats counts the changes of one resync.
type Stats struct {
	Added, Updated, Removed int
}

// Resync makes the store match obs and publishes the changes:
//   - the cgroup scan is the truth for existence: a scanned container is
//     present, a container whose cgroup is gone is removed (unless the NM
//     still lists it in a non-terminal state);
//   - the NM enriches present containers with user, state, execution type
//     and requests; a container the NM lists in a non-terminal state whose
//     cgroup does not exist yet is kept with its state (Source "nm");
//   - what an event (Observe) changed after the scan began wins over the
//     scan, in every branch: its cgroups and pids are kept, and a removal
//     it saw is not undone by the scan;
//   - a failed source changes nothing it alone knew about.
func (s *Store) Resync(obs Observation, now time.Time) Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nm.note(obs.NMOK, now)

	cands := s.cands[:0]
	idx := s.candIdx
	clear(idx)
	started := obs.Started
	if started.IsZero() {
		started = now
	}
	for id, at := range s.tombstones {
		if now.Sub(at) > tombstoneTTL {
			delete(s.tombstones, id)
		}
	}
	// fresh reports whether an event source changed id after the scan began.
	fresh := func(id yarn.ContainerID) bool {
		e, ok := s.items[id]
		return ok && e.touched.After(started)
	}

	if obs.ScanOK {
		for i := range obs.Scan {
			sc := &obs.Scan[i]
			if at, ok := s.tombstones[sc.ID]; ok && at.After(started) {
				continue // removed by an event after this scan began
			}
			var c Container
			if e, ok := s.items[sc.ID]; ok {
				c = *e.c
				if obs.NMOK {
					c.Source = SourceCgroup
				} else {
					c.Source = SourceCgroup | (e.c.Source & SourceNM)
				}
			} else {
				c = newContainer(sc.Name, sc.ID, now)
				c.Source = SourceCgroup
			}
			if fresh(sc.ID) {
				// Events after the scan began: keep what they added.
				e := s.items[sc.ID]
				for ctrl, r := range e.c.Cgroups {
					if r.Owned && !sc.Cgroups[ctrl].Owned {
						sc.Cgroups[ctrl] = r
					}
				}
				c.Cgroups = sc.Cgroups
				c.Pids = unionPids(sc.Pids, e.c.Pids)
			} else {
				c.Cgroups = sc.Cgroups
				c.Pids = sc.Pids
			}
			c.noteStarted(sc.Started)
			c.noteAM(sc.AM)
			idx[sc.ID] = len(cands)
			cands = append(cands, c)
		}
	} else {
		for id, e := range s.items {
			if !e.c.HasCgroup() {
				continue
			}
			c := *e.c
			if obs.NMOK {
				c.Source = SourceCgroup
			}
			idx[id] = len(cands)
			cands = append(cands, c)
		}
	}

	if obs.NMOK {
		for i := range obs.NM {
			nm := &obs.NM[i]
			if j, ok := idx[nm.ID]; ok {
				cands[j].enrich(nm)
				cands[j].Source |= SourceNM
				continue
			}
			if yarn.IsTerminalState(nm.State) {
				continue
			}
			var c Container
			if e, ok := s.items[nm.ID]; ok {
				c = *e.c
			} else {
				c = newContainer(nm.ID.String(), nm.ID, now)
			}
			c.enrich(nm)
			if fresh(nm.ID) {
				// An event after the scan began saw its cgroup (or
				// processes): the scan could not, and the event wins.
				c.Source = SourceNM | (c.Source & SourceCgroup)
			} else {
				c.Cgroups = cgroups.Cgroups{}
				c.Pids = nil
				c.Source = SourceNM
			}
			idx[nm.ID] = len(cands)
			cands = append(cands, c)
		}
	} else {
		for id, e := range s.items {
			if _, ok := idx[id]; ok || e.c.Source != SourceNM {
				continue
			}
			idx[id] = len(cands)
			cands = append(cands, *e.c)
		}
	}

	var st Stats
	s.gen++
	for i := range cands {
		c := &cands[i]
		e, ok := s.items[c.ID]
		switch {
		case !ok:
			nc := new(Container)
			*nc = *c
			s.items[c.ID] = &entry{c: nc, gen: s.gen}
			s.publish(Event{Type: Added, Container: nc})
			st.Added++
		case !e.c.equal(c):
			nc := new(Container)
			*nc = *c
			prev := e.c
			e.c, e.gen = nc, s.gen
			s.publish(Event{Type: Updated, Container: nc, Previous: prev})
			st.Updated++
		default:
			e.gen = s.gen
		}
	}
	for id, e := range s.items {
		if e.gen != s.gen && e.touched.After(started) {
			e.gen = s.gen // added by an event after the scan began: the next resync decides
			continue
		}
		if e.gen != s.gen {
			delete(s.items, id)
			s.publish(Event{Type: Removed, Container: e.c})
			st.Removed++
		}
	}
	// Drop references to the observation so it can be collected.
	clear(cands)
	s.cands = cands[:0]
	return st
}

// unionPids merges two pid lists, sorted, without duplicates.
func unionPids(a, b []int) []int {
	if len(b) == 0 {
		return a
	}
	out := append(append(make([]int, 0, len(a)+len(b)), a...), b...)
	slices.Sort(out)
	return slices.Compact(out)
}
