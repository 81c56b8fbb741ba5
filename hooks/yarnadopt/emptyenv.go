package yarnadopt

import "time"

// emptySettle is how long an empty environment must stay empty to be an
// answer. A process in the middle of an exec shows an empty environment
// for the microseconds between the kernel publishing the new image's
// arguments and its environment; a process started with none (the
// LinuxContainerExecutor's native container-executor: the NodeManager
// runs it with an empty environment, and it stays the parent of the
// container's launch) shows one for its whole life.
const emptySettle = 100 * time.Millisecond

// emptyForGood reports whether process key's environment, read back empty
// now, was read empty at least emptySettle before (a later scan or exec
// of the same exec image): then it names no container, and what runs
// below it can be decided. The first empty read is recorded and reported
// not final.
func (a *Adopter) emptyForGood(key procKey) bool {
	now := a.opts.Now()
	first, seen := a.empties[key]
	if !seen {
		a.empties[key] = now
		return false
	}
	if now.Sub(first) < emptySettle {
		return false
	}
	delete(a.empties, key)
	return true
}
