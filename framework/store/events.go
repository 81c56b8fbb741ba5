package store

import (
	"slices"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// CgroupEventType is what an event source saw.
type CgroupEventType int

// Cgroup event types.
const (
	CgroupCreated CgroupEventType = iota
	CgroupAttached
	CgroupRemoved
)

// CgroupEvent is one observation of a container's own cgroup by an event
// source (eBPF, inotify).
type CgroupEvent struct {
	Type       CgroupEventType
	Name       string
	ID         yarn.ContainerID
	Controller cgroups.Controller
	// Dir is the container's own cgroup dir (relative to the mount).
	Dir string
	// Pid is the attached process (CgroupAttached).
	Pid int
	// V2 is, with Controller AllControllers on cgroup v2, which controllers
	// the container's directory has (see cgroups.V2Controllers); nil means
	// every controller.
	V2 *cgroups.V2Controllers
}

// AllControllers in a CgroupEvent means every controller (cgroup v2: one
// unified directory serves them all).
const AllControllers cgroups.Controller = -1

// tombstoneTTL is how long a removal seen by an event source keeps a scan
// that started before it from bringing the container back.
const tombstoneTTL = time.Minute

// Observe applies one event and publishes the change at once. Resync stays
// the safety net; the two agree: a resync whose scan started before an
// event neither removes what the event added nor brings back what it
// removed.
func (s *Store) Observe(ev CgroupEvent, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.items[ev.ID]
	switch ev.Type {
	case CgroupCreated, CgroupAttached:
		delete(s.tombstones, ev.ID)
		var c Container
		if ok {
			c = *e.c
		} else {
			c = newContainer(ev.Name, ev.ID, now)
		}
		if ev.Controller == AllControllers && ev.V2 != nil {
			c.Cgroups = ev.V2.Refs(ev.Dir)
		} else {
			setRef(&c.Cgroups, ev.Controller, cgroups.Ref{Dir: ev.Dir, Owned: true})
		}
		c.Source |= SourceCgroup
		if ev.Type == CgroupAttached && ev.Pid > 0 && !slices.Contains(c.Pids, ev.Pid) {
			c.Pids = append(slices.Clone(c.Pids), ev.Pid)
			slices.Sort(c.Pids)
		}
		switch {
		case !ok:
			nc := new(Container)
			*nc = c
			s.items[ev.ID] = &entry{c: nc, gen: s.gen, touched: now}
			s.publish(Event{Type: Added, Container: nc})
		case !e.c.equal(&c):
			nc := new(Container)
			*nc = c
			prev := e.c
			e.c, e.touched = nc, now
			s.publish(Event{Type: Updated, Container: nc, Previous: prev})
		default:
			e.touched = now
		}
	case CgroupRemoved:
		if !ok {
			return
		}
		c := *e.c
		setRef(&c.Cgroups, ev.Controller, cgroups.Ref{})
		owned := false
		for _, r := range c.Cgroups {
			owned = owned || r.Owned
		}
		if owned {
			nc := new(Container)
			*nc = c
			prev := e.c
			e.c, e.touched = nc, now
			s.publish(Event{Type: Updated, Container: nc, Previous: prev})
			return
		}
		delete(s.items, ev.ID)
		s.tombstones[ev.ID] = now
		s.publish(Event{Type: Removed, Container: e.c})
	}
}

func setRef(cg *cgroups.Cgroups, ctrl cgroups.Controller, r cgroups.Ref) {
	if ctrl == AllControllers {
		for i := range cg {
			cg[i] = r
		}
		return
	}
	cg[ctrl] = r
}
