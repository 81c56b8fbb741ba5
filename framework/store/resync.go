package store

import (
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
	// the store keeps what it knew from the NM.
	NM   []yarn.NMContainer
	NMOK bool
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
//   - a failed source changes nothing it alone knew about.
func (s *Store) Resync(obs Observation, now time.Time) Stats {
	s.mu.Lock()
	defer s.mu.Unlock()

	cands := s.cands[:0]
	idx := s.candIdx
	clear(idx)

	if obs.ScanOK {
		for i := range obs.Scan {
			sc := &obs.Scan[i]
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
			c.Cgroups = sc.Cgroups
			c.Pids = sc.Pids
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
			c.Cgroups = cgroups.Cgroups{}
			c.Pids = nil
			c.enrich(nm)
			c.Source = SourceNM
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
