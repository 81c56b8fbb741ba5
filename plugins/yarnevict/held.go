package yarnevict

import (
	"os"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/kill"
)

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
func (m *MemoryEvict) heldMemory(c *store.Container) (kill.Held, bool) {
	k := m.killer()
	if k == nil {
		return kill.Held{}, false
	}
	threads, err := cgroups.ReadThreads(k.H.AbsDir(cgroups.CPU, c.Cgroups[cgroups.CPU].Dir))
	switch {
	case err != nil && os.IsNotExist(err), err == nil && len(threads) == 0:
		return kill.Held{}, true
	case err != nil:
		return kill.Held{}, false
	}
	switch c.Cgroups.MemoryAccounting() {
	case cgroups.MemoryByCgroup:
		st, err := m.usageReader().MemoryStat(c.Cgroups[cgroups.Memory].Dir)
		if err != nil {
			return kill.Held{}, false
		}
		return kill.Held{Bytes: st.Usage(), Running: true}, true
	case cgroups.MemoryByProcesses:
		if r := m.processReader(); r != nil {
			pm, err := r.Read(cgroups.CPU, c.Cgroups[cgroups.CPU].Dir)
			if err != nil {
				return kill.Held{}, false
			}
			return kill.Held{Bytes: pm.Usage(), Running: true, Unmeasured: pm.Usage() == 0}, true
		}
	}
	return kill.Held{}, false
}
