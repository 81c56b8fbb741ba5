package yarnadopt

import (
	"errors"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
)

// emptySettle is how long an empty environment must stay empty to be an
// answer. A process in the middle of an exec shows an empty environment
// for the microseconds between the kernel publishing the new image's
// arguments and its environment; a process started with none (the
// LinuxContainerExecutor's native container-executor: the NodeManager
// runs it with an empty environment, and it stays the parent of the
// container's launch) shows one for its whole life.
const emptySettle = 100 * time.Millisecond

// emptyRecheck is how long after an empty read whose stat shows a
// finished exec (procStat.emptyLaidOut) the environment is read again.
const emptyRecheck = 2 * time.Millisecond

// emptyEnvironment decides an empty read of process pid's environment
// (key, st: its stat read just before): true when it is the process's
// answer — it was started with none. Either the same exec image read
// empty emptySettle apart, or its stat shows an exec past its setup and a
// read emptyRecheck later is still empty with the stat unchanged (the
// LinuxContainerExecutor's launch, found at its child's exec, is decided
// at once: its container's processes are moved before they allocate).
func (a *Adopter) emptyEnvironment(procRoot string, pid int, key procKey, st procStat) bool {
	if a.emptyForGood(key) {
		return true
	}
	if !st.emptyLaidOut() {
		return false
	}
	time.Sleep(emptyRecheck)
	again, err := readStat(procRoot, pid)
	if err != nil || again != st {
		return false
	}
	_, err = a.env.ContainerID(procRoot, pid)
	return errors.Is(err, cgroups.ErrEnvironEmpty)
}

// emptyForGood reports whether process key's environment, read back empty
// now, was read empty at least emptySettle before (a later scan or exec
// of the same exec image): then it names no container, and what runs
// below it can be decided. The first empty read is recorded and reported
// not final. The entry stays until the process is gone (forgetExited):
// an empty answer is not cached with the environments, so that a process
// misjudged is read again at every scan.
func (a *Adopter) emptyForGood(key procKey) bool {
	now := a.opts.Now()
	first, seen := a.empties[key]
	if !seen {
		a.empties[key] = now
		return false
	}
	return now.Sub(first) >= emptySettle
}
