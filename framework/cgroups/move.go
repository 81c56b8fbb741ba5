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

// Move moves the pinned process p from each step's From into its To, in
// the order of steps, by writing its number into cgroup.procs, and
// verifies it through the pin. It is the one mover of the module: every
// hook that moves a process by number calls it.
//
//   - Check: the process must be in From (or already in To: a move an
//     earlier pass began, by a koordlet that died between two writes, is
//     finished) in every step; anything else is MoveNotOwn.
//   - Write the steps still to do, stopping at the first error. A process
//     that stays alive but is not in To everywhere afterwards is put back
//     in From where it was moved (undo), so that it is never left half
//     moved (in the container's memory cgroup and the pod's cpu cgroup,
//     which no later check accepts); MoveFailed. Where the undo fails too,
//     the next pass finishes the move (the check accepts To).
//   - Reuse: when the pinned process died around a write, its number may
//     name another task, which the write moved. That task goes back where
//     it was. It took the number after the check (the pin held the number
//     until then), so it was made between the check and the write, where
//     its creator was (see origin: its parent's cgroup for a process; From,
//     where the number pointed at the check, when that cannot be told).
//     MoveReverted. The same holds when the process exits during an undo:
//     a task that took its number and that an undo's write moved into
//     From goes back where it was, MoveReverted (never MoveGone with the
//     task left in From).
//
// The error, when not nil, says which write failed (a failed undo or
// revert included); the caller logs it with its context.
func Move(h Hierarchy, p *Pinned, steps []Step, write WriteFunc) (MoveResult, error) {
	if write == nil {
		write = WriteProcs
	}
	var todo []Step
	for _, s := range steps {
		cur, ok := h.PathOf(p.ID, s.Ctrl)
		if !p.Alive() {
			return MoveGone, nil
		}
		switch {
		case ok && cur == s.To:
			// moved already (a move an earlier pass began)
		case ok && cur == s.From:
			todo = append(todo, s)
		default:
			return MoveNotOwn, nil
		}
	}
	var (
		werr    error
		written []Step
	)
	for _, s := range todo {
		if err := write(h.AbsDir(s.Ctrl, s.To), p.ID); err != nil {
			werr = fmt.Errorf("move %d into %s: %w", p.ID, h.AbsDir(s.Ctrl, s.To), err)
			break
		}
		written = append(written, s)
	}
	undone := map[int]bool{} // steps whose undo was written
	if p.Alive() {
		if werr == nil && in(h, p.ID, steps) {
			return MoveMoved, nil
		}
		if werr == nil {
			werr = fmt.Errorf("process %d is not in %s after the move", p.ID, describe(steps))
		}
		// Undo: the process is whole where it was, or (a failed undo)
		// half moved in a way the next pass finishes.
		for i := len(written) - 1; i >= 0; i-- {
			s := written[i]
			if cur, ok := h.PathOf(p.ID, s.Ctrl); !ok || cur != s.To {
				continue
			}
			if err := write(h.AbsDir(s.Ctrl, s.From), p.ID); err != nil {
				if p.Alive() {
					werr = fmt.Errorf("%w; undoing the move in %s failed too (the next pass finishes it): %v", werr, s.Ctrl, err)
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
	// The checked process is gone and the number names another task: the
	// writes (the undo's included) may have moved it. Whatever of it sits
	// where a write put it goes back where it was.
	reverted := false
	var rerr error
	for i, s := range written {
		cur, ok := h.PathOf(p.ID, s.Ctrl)
		if !ok || (cur != s.To && !(undone[i] && cur == s.From)) {
			continue
		}
		dir := origin(h, p.ID, s)
		if dir == cur {
			continue // born there (or made where its creator is): not moved by a write
		}
		back := h.AbsDir(s.Ctrl, dir)
		if err := write(back, p.ID); err != nil {
			if errors.Is(err, unix.ESRCH) {
				continue // gone too
			}
			rerr = errors.Join(rerr, fmt.Errorf("move %d back to %s: %w", p.ID, back, err))
			continue
		}
		reverted = true
	}
	if rerr != nil {
		return MoveFailed, fmt.Errorf("pid %d was reused during the move into %s (the checked process exited): %w: %w", p.ID, describe(steps), ErrNotMovedBack, rerr)
	}
	if reverted {
		klog.Warningf("yarn: pid %d was reused during the move into %s (the checked process exited); the new task was moved back where it was", p.ID, describe(steps))
		return MoveReverted, nil
	}
	return MoveGone, nil
}

// origin is where the task that took the number of the checked process
// was before the writes of step s. It took the number after the check, so
// it was made between the check and the write, where its creator was:
//   - a new process was born in its parent's cgroup: there (s.To for a
//     child of the moved process: the writes did not move it there, but
//     an undo's write may have moved it out);
//   - a new thread belongs to a process that cgroup.procs moved whole, its
//     leader included, so the leader no longer tells: s.From, where the
//     number pointed at the check, when the leader is in s.To;
//   - creator unknown (an orphan's parent is its reaper, not its creator):
//     s.From.
func origin(h Hierarchy, id int, s Step) string {
	c := Creator(h.ProcRoot, id)
	if c <= 0 {
		return s.From
	}
	d, ok := h.PathOf(c, s.Ctrl)
	switch {
	case !ok:
		return s.From
	case d != s.To:
		return d
	case isThread(h.ProcRoot, id):
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

// in reports whether task id is in every step's To.
func in(h Hierarchy, id int, steps []Step) bool {
	for _, s := range steps {
		if cur, ok := h.PathOf(id, s.Ctrl); !ok || cur != s.To {
			return false
		}
	}
	return true
}

func describe(steps []Step) string {
	if len(steps) == 1 {
		return steps[0].To
	}
	out := ""
	for i, s := range steps {
		if i > 0 {
			out += ", "
		}
		out += s.Ctrl.String() + ":" + s.To
	}
	return out
}
