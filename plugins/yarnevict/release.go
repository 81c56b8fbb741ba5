package yarnevict

import (
	"errors"
	"os"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

// ErrNothingReleased: the container's processes were killed, but its memory
// was not released (a kill that released nothing is a failure).
var ErrNothingReleased = errors.New("no memory was released")

// ReleaseWait bounds how long an eviction waits, after the kill, for the
// killed processes' memory to be freed (exiting processes free their
// address space in exit) before it reports what was released.
const ReleaseWait = 3 * time.Second

// Held is what a killed container still holds: memory (koordlet's usage, no
// page cache) and whether any of its processes is still there (exiting).
type Held struct {
	Bytes   int64
	Running bool
}

// MeasureRelease waits, up to wait, until the victim holds nothing or has no
// process left (page cache left in its cgroup is not released by waiting),
// and returns what its eviction released: its usage at the decision,
// before, minus what it still holds (never below 0 nor above before), and
// what its exiting processes still hold (0 once none is left). known is false when what it holds cannot be read:
// then nothing is claimed.
func MeasureRelease(before int64, held func() (Held, bool), wait time.Duration, sleep func(time.Duration)) (released, still int64, known bool) {
	deadline := time.Now().Add(wait)
	for {
		h, ok := held()
		if !ok {
			return 0, 0, false
		}
		if h.Bytes <= 0 || !h.Running || !time.Now().Before(deadline) {
			released = min(max(before-max(h.Bytes, 0), 0), before)
			if !h.Running {
				return released, 0, true // no process holds it: waiting frees nothing more
			}
			return released, max(h.Bytes, 0), true
		}
		sleep(20 * time.Millisecond)
	}
}

// heldMemory reads what container c still holds after its kill. The kernel
// frees a process's address space (exit_mm) before the process leaves its
// cgroup (cgroup_exit), so a container with no process left holds nothing
// of its processes' memory; while processes remain (exiting), it holds
// what its memory cgroup counts (memory.stat, which the kernel may flush
// a little late) or, without one, their RssAnon + RssShmem. A cgroup YARN
// removed holds nothing.
func (m *MemoryEvict) heldMemory(c *store.Container) (Held, bool) {
	k := m.killer()
	if k == nil {
		return Held{}, false
	}
	pids, err := cgroups.ReadPids(k.H.AbsDir(cgroups.CPU, c.Cgroups[cgroups.CPU].Dir))
	switch {
	case err != nil && os.IsNotExist(err), err == nil && len(pids) == 0:
		return Held{}, true
	case err != nil:
		return Held{}, false
	}
	switch c.Cgroups.MemoryAccounting() {
	case cgroups.MemoryByCgroup:
		st, err := m.usageReader().MemoryStat(c.Cgroups[cgroups.Memory].Dir)
		if err != nil {
			return Held{}, false
		}
		return Held{Bytes: st.Usage(), Running: true}, true
	case cgroups.MemoryByProcesses:
		if r := m.processReader(); r != nil {
			pm, err := r.Read(cgroups.CPU, c.Cgroups[cgroups.CPU].Dir)
			if err != nil {
				return Held{}, false
			}
			return Held{Bytes: pm.Usage(), Running: pm.Processes > 0}, true
		}
	}
	return Held{}, false
}
