package cgroups

import (
	"errors"
	"fmt"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// MoveResult is what Move did with one process; the values are the label
// result of the move counters (koordlet_yarn_container_cgroup_moves_total,
// koordlet_yarn_memcg_moves_total).
type MoveResult string

// Move results.
const (
	MoveMoved    MoveResult = "moved"    // verified in the target cgroups afterwards
	MoveGone     MoveResult = "gone"     // exited before or during the move
	MoveNotOwn   MoveResult = "not_own"  // not where the caller checked it (elsewhere, or another process): not moved
	MoveReverted MoveResult = "reverted" // the number named another process after the write: moved back where it was
	MoveFailed   MoveResult = "failed"   // a write or the verification failed (nothing is left half moved when it can be undone)
)

// ErrNotMovedBack is wrapped by Move's error when a task that took a
// reused number stays in the target (its move back failed): worth a
// warning, unlike a failed move of the checked process.
var ErrNotMovedBack = errors.New("a task moved by a reused number could not be moved back")

// Step is one controller's part of a move: from and to are cgroup dirs
// relative to the controller's mount root (as Hierarchy.PathOf reads them).
type Step struct {
	Ctrl     Controller
	From, To string
}

// WriteFunc moves pid into the cgroup directory dir (absolute); WriteProcs
// by default. yarnadopt passes its writer that joined the host's cgroup
// namespace; tests inject failures.
type WriteFunc func(dir string, pid int) error

// Place is a set of groups that a task is in exactly one of and that a
// write of its number moves it between: a cgroup controller's hierarchy
// (Hierarchy.Place), or the resctrl control groups (yarnqos). MoveIn's
// check, verification, undo and revert rule are the same for every place;
// a place supplies only where a task is and the write.
type Place interface {
	// Of returns the group task id is in (false: not known, e.g. gone).
	Of(id int) (group string, ok bool)
	// Put writes the number id into group.
	Put(group string, id int) error
	// Path names group in messages (its directory).
	Path(group string) string
	// String names the place in messages (a controller: "memory").
	String() string
	// Whole reports whether a write of a thread's number moves its whole
	// thread group (cgroup.procs) rather than that thread alone (a
	// resctrl tasks file).
	Whole() bool
}

// Shift is one place's part of a move. A shift whose From is its To moves
// nothing: it is checked before and verified after (the task must stay
// there, e.g. in the container's cgroup while it joins a resctrl group).
type Shift struct {
	Place    Place
	From, To string
}

// Place returns controller c of h as a Place whose groups are cgroup dirs
// relative to c's mount root, written by write (WriteProcs when nil).
func (h Hierarchy) Place(c Controller, write WriteFunc) Place {
	if write == nil {
		write = WriteProcs
	}
	return cgroupPlace{h: h, ctrl: c, write: write}
}

type cgroupPlace struct {
	h     Hierarchy
	ctrl  Controller
	write WriteFunc
}

func (c cgroupPlace) Of(id int) (string, bool)       { return c.h.PathOf(id, c.ctrl) }
func (c cgroupPlace) Put(group string, id int) error { return c.write(c.h.AbsDir(c.ctrl, group), id) }
func (c cgroupPlace) Path(group string) string       { return c.h.AbsDir(c.ctrl, group) }
func (c cgroupPlace) String() string                 { return c.ctrl.String() }
func (c cgroupPlace) Whole() bool                    { return true }

// Move moves the pinned process p from each step's From into its To, in
// the order of steps, by writing its number into cgroup.procs (write,
// WriteProcs when nil), and verifies it through the pin: MoveIn with each
// step a Shift of h.Place(step.Ctrl, write). It is the one cgroup mover of
// the module: every hook that moves a process between cgroups by number
// calls it.
func Move(h Hierarchy, p *Pinned, steps []Step, write WriteFunc) (MoveResult, error) {
	shifts := make([]Shift, len(steps))
	for i, s := range steps {
		shifts[i] = Shift{Place: h.Place(s.Ctrl, write), From: s.From, To: s.To}
	}
	return MoveIn(h.ProcRoot, p, shifts)
}

// MoveIn moves the pinned task p from each shift's From into its To, in
// the order of shifts, by writing its number, and verifies it through the
// pin. It is the one mover by number of the module (Move for cgroups,
// yarnqos for resctrl groups); procRoot is where its creator is read.
//
//   - Check: the task must be in From (or already in To: a move an
//     earlier pass began, by a koordlet that died between two writes, is
//     finished) in every shift; anything else is MoveNotOwn.
//   - Write the shifts still to do, stopping at the first error. A task
//     that stays alive but is not in To everywhere afterwards is put back
//     in From where it was moved (undo), so that it is never left half
//     moved (in the container's memory cgroup and the pod's cpu cgroup,
//     which no later check accepts); MoveFailed. Where the undo fails too,
//     the next pass finishes the move (the check accepts To).
//   - Reuse: when the pinned task died around a write, its number may
//     name another task, which the write moved. That task goes back where
//     it was. It took the number after the check (the pin held the number
//     until then), so it was made between the check and the write, where
//     its creator was (see origin: its parent's group for a process; From,
//     where the number pointed at the check, when that cannot be told).
//     MoveReverted. The same holds when the task exits during an undo: a
//     task that took its number and that an undo's write moved into From
//     goes back where it was, MoveReverted (never MoveGone with the task
//     left in From).
//
// The error, when not nil, says which write failed (a failed undo or
// revert included); the caller logs it with its context.
func MoveIn(procRoot string, p *Pinned, shifts []Shift) (MoveResult, error) {
	var todo []Shift
	for _, s := range shifts {
		cur, ok := s.Place.Of(p.ID)
		if !p.Alive() {
			return MoveGone, nil
		}
		switch {
		case ok && cur == s.To:
			// moved already (a move an earlier pass began), or to stay
		case ok && cur == s.From:
			todo = append(todo, s)
		default:
			return MoveNotOwn, nil
		}
	}
	var (
		werr    error
		written []Shift
	)
	for _, s := range todo {
		if err := s.Place.Put(s.To, p.ID); err != nil {
			werr = fmt.Errorf("move %d into %s: %w", p.ID, s.Place.Path(s.To), err)
			break
		}
		written = append(written, s)
	}
	undone := map[int]bool{} // shifts whose undo was written
	if p.Alive() {
		if werr == nil && in(p.ID, shifts) {
			return MoveMoved, nil
		}
		if werr == nil {
			werr = fmt.Errorf("task %d is not in %s after the move", p.ID, describe(shifts))
		}
		// Undo: the task is whole where it was, or (a failed undo) half
		// moved in a way the next pass finishes.
		for i := len(written) - 1; i >= 0; i-- {
			s := written[i]
			if cur, ok := s.Place.Of(p.ID); !ok || cur != s.To {
				continue
			}
			if err := s.Place.Put(s.From, p.ID); err != nil {
				if p.Alive() {
					werr = fmt.Errorf("%w; undoing the move in %s failed too (the next pass finishes it): %v", werr, s.Place, err)
				}
				continue
			}
			undone[i] = true
		}
		if p.Alive() {
			return MoveFailed, werr
		}
		// It exited during the undo: its number may have been taken by a
		// task that an undo's write then moved (into From). That task
		// goes back too, as below.
	}
	if !p.Reused() {
		return MoveGone, nil
	}
	// The checked task is gone and the number names another task: the
	// writes (the undo's included) may have moved it. Whatever of it sits
	// where a write put it goes back where it was.
	reverted := false
	var rerr error
	for i, s := range written {
		cur, ok := s.Place.Of(p.ID)
		if !ok || (cur != s.To && !(undone[i] && cur == s.From)) {
			continue
		}
		back := origin(procRoot, p.ID, s)
		if back == cur {
			continue // born there (made where its creator is): not moved by a write
		}
		if err := s.Place.Put(back, p.ID); err != nil {
			if errors.Is(err, unix.ESRCH) {
				continue // gone too
			}
			rerr = errors.Join(rerr, fmt.Errorf("move %d back to %s: %w", p.ID, s.Place.Path(back), err))
			continue
		}
		reverted = true
	}
	if rerr != nil {
		return MoveFailed, fmt.Errorf("pid %d was reused during the move into %s (the checked task exited): %w: %w", p.ID, describe(shifts), ErrNotMovedBack, rerr)
	}
	if reverted {
		klog.Warningf("yarn: pid %d was reused during the move into %s (the checked task exited); the new task was moved back where it was", p.ID, describe(shifts))
		return MoveReverted, nil
	}
	return MoveGone, nil
}

// origin is where the task that took the number of the checked task was
// before the writes of shift s. It took the number after the check, so it
// was made between the check and the write, where its creator was:
//   - a new process was born in its parent's group: there (s.To for a
//     child of the moved process: the writes did not move it there, but
//     an undo's write may have moved it out);
//   - a new thread was made in its leader's group, but where the write
//     moved its whole process (cgroup.procs: Place.Whole), the leader
//     included, the leader no longer tells: s.From, where the number
//     pointed at the check, when the leader is in s.To;
//   - creator unknown (an orphan's parent is its reaper, not its creator):
//     s.From.
func origin(procRoot string, id int, s Shift) string {
	c := Creator(procRoot, id)
	if c <= 0 {
		return s.From
	}
	d, ok := s.Place.Of(c)
	switch {
	case !ok:
		return s.From
	case d != s.To:
		return d
	case s.Place.Whole() && isThread(procRoot, id):
		return s.From
	default:
		return s.To
	}
}

// isThread reports whether task id is a thread other than its group's
// leader.
func isThread(procRoot string, id int) bool {
	fs, err := procfs.NewFS(procRoot)
	if err != nil {
		return false
	}
	p, err := fs.Proc(id)
	if err != nil {
		return false
	}
	st, err := p.NewStatus()
	return err == nil && st.TGID > 0 && st.TGID != id
}

// in reports whether task id is in every shift's To.
func in(id int, shifts []Shift) bool {
	for _, s := range shifts {
		if cur, ok := s.Place.Of(id); !ok || cur != s.To {
			return false
		}
	}
	return true
}

func describe(shifts []Shift) string {
	if len(shifts) == 1 {
		return shifts[0].Place.Path(shifts[0].To)
	}
	out := ""
	for i, s := range shifts {
		if i > 0 {
			out += ", "
		}
		out += s.Place.String() + ":" + s.To
	}
	return out
}
