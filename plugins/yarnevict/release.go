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
// page cache), whether any of its threads is still there (exiting), and
// whether those threads' memory cannot be read (Unmeasured: no memory
// cgroup, and only threads of processes whose /proc shows no address space
// left, one of them possibly still freeing it).
type Held struct {
	Bytes      int64
	Running    bool
	Unmeasured bool
}

// MeasureRelease waits, up to wait, until the victim holds nothing or has no
// thread left (page cache left in its cgroup is not released by waiting),
// and returns what its eviction released: its usage at the decision,
// before, minus what it still holds (never below 0 nor above before), and
// what its exiting threads still hold (0 once none is left). A victim still
// Unmeasured at the deadline is taken to hold all it held (nothing claimed
// released). known is false when what it holds cannot be read: then
// nothing is claimed.
func MeasureRelease(before int64, held func() (Held, bool), wait time.Duration, sleep func(time.Duration)) (released, still int64, known bool) {
	deadline := time.Now().Add(wait)
	for {
		h, ok := held()
		if !ok {
			return 0, 0, false
		}
		if !h.Running {
			// No thread holds it: waiting frees nothing more.
			return min(max(before-max(h.Bytes, 0), 0), before), 0, true
		}
		late := !time.Now().Before(deadline)
		if h.Unmeasured && late {
			return 0, before, true
		}
		if (h.Bytes <= 0 && !h.Unmeasured) || late {
			return min(max(before-max(h.Bytes, 0), 0), before), max(h.Bytes, 0), true
		}
		sleep(20 * time.Millisecond)
	}
}

// heldMemory reads what container c still holds after its kill. The kernel
// frees a thread's address space (exit_mm) before the thread leaves its
// cgroup (cgroup_exit), so a container with no thread left holds nothing of
// its processes' memory. Its processes are not enough: cgroup.procs stops
// listing a killed process once its leader has exited and no thread of it
// is alive, while another of its threads may still be freeing the address
// space (seen on the v2 guest: a killed 300 MiB Go process left
// cgroup.procs before MemAvailable grew in 7 of 10 kills). While threads
// remain, it holds what its memory cgroup counts (memory.stat, which the
// kernel may flush a little late) or, without one, its processes' RssAnon
// + RssShmem (Unmeasured when no process shows an address space). A cgroup
// YARN removed holds nothing.
func (m *MemoryEvict) heldMemory(c *store.Container) (Held, bool) {
	k := m.killer()
	if k == nil {
		return Held{}, false
	}
	threads, err := cgroups.ReadThreads(k.H.AbsDir(cgroups.CPU, c.Cgroups[cgroups.CPU].Dir))
	switch {
	case err != nil && os.IsNotExist(err), err == nil && len(threads) == 0:
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
			return Held{Bytes: pm.Usage(), Running: true, Unmeasured: pm.Usage() == 0}, true
		}
	}
	return Held{}, false
}
