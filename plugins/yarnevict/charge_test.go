package yarnevict

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

// TestContainerMemoryLeftBehind (fake root): memory evict measures a
// container whose process koordlet moved into its memory cgroup holding
// 598 MiB (recorded in Deps.Charges) at its processes' 600 MiB, not at its
// cgroup's 2 MiB, so that ranking (using more than requested first) and the
// plan see its true memory; a container not recorded is read from its
// cgroup alone.
func TestContainerMemoryLeftBehind(t *testing.T) {
	helper := system.NewFileTestUtil(t)
	t.Cleanup(helper.Cleanup)
	helper.SetCgroupsV2(false)
	const dir = "hadoop-yarn/container_e17_1700000000000_0042_01_000005"
	self := os.Getpid()
	helper.WriteCgroupFileContents(dir, system.MemoryStat, fmt.Sprintf("cache 0\nrss %d\ntotal_cache 0\ntotal_rss %d\ntotal_active_anon %d\ntotal_inactive_anon 0\ntotal_active_file 0\ntotal_inactive_file 0\ntotal_unevictable 0\n", 2<<20, 2<<20, 2<<20))
	helper.WriteCgroupFileContents(dir, system.CPUProcs, strconv.Itoa(self)+"\n")
	helper.WriteProcSubFileContents(strconv.Itoa(self)+"/cgroup", "5:memory:/"+dir+"\n4:cpu,cpuacct:/"+dir+"\n")
	helper.WriteProcSubFileContents(strconv.Itoa(self)+"/status", "Name:\tjava\nRssAnon:\t614400 kB\nRssFile:\t0 kB\nRssShmem:\t0 kB\n")
	h := cgroups.Hierarchy{CgroupRoot: system.Conf.CgroupRootDir, ProcRoot: system.Conf.ProcRootDir,
		NS: cgroups.NewNamespace(system.Conf.ProcRootDir, system.Conf.CgroupRootDir, false)}
	charges := cgroups.NewLeftCharges()
	m := &MemoryEvict{deps: Deps{Charges: charges, CgroupHierarchy: func() (cgroups.Hierarchy, bool) { return h, true }}}
	own := cgroups.Ref{Dir: dir, Owned: true}
	c := &store.Container{Name: "container_e17_1700000000000_0042_01_000005",
		Cgroups: cgroups.Cgroups{cgroups.CPU: own, cgroups.CPUAcct: own, cgroups.Memory: own}}

	got, ok := m.containerMemory(c, time.Second)
	assert.True(t, ok)
	assert.Equal(t, int64(2<<20), got, "not recorded: its cgroup's charge")
	charges.Add(c.Name, 598<<20)
	got, ok = m.containerMemory(c, time.Second)
	assert.True(t, ok)
	assert.Equal(t, int64(600<<20), got, "recorded: its processes' memory while most of it is charged to the NM pod")
	v := ContainerVictim(c, 0, got, 0)
	v.MemoryRequest = 256 << 20
	MarkMemoryCause(&v)
	assert.True(t, v.Cause, "using more than its request: ranked as a cause")
}
