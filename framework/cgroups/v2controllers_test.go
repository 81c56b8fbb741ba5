package cgroups

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/test/cgtree"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// TestReadV2Controllers: on a fake cgroup2 root, the controllers the YARN
// root enables in cgroup.subtree_control are the containers' own; each
// other one is charged to the nearest ancestor whose parent enables it.
func TestReadV2Controllers(t *testing.T) {
	const yarnDir = "kubepods/besteffort/hadoop-yarn"
	own := yarnDir + "/container_e17_1700000000000_0042_01_000002"
	tests := []struct {
		name    string
		subtree map[string]string // dir → cgroup.subtree_control
		want    Cgroups
		ok      bool
	}{{
		name: "Hadoop's v2 handler with memory",
		subtree: map[string]string{"": "cpuset cpu io memory pids", "kubepods": "cpuset cpu io memory", "kubepods/besteffort": "cpuset cpu io memory",
			yarnDir: "cpu memory"},
		want: Cgroups{CPU: {own, true}, CPUAcct: {own, true}, Memory: {own, true}, CPUSet: {"kubepods/besteffort/hadoop-yarn", false}, Blkio: {"kubepods/besteffort/hadoop-yarn", false}},
		ok:   true,
	}, {
		name: "CPU-only YARN (memory.enabled=false): memory charged to the YARN root",
		subtree: map[string]string{"": "cpuset cpu io memory", "kubepods": "cpuset cpu io memory", "kubepods/besteffort": "cpu io memory",
			yarnDir: "cpu"},
		want: Cgroups{CPU: {own, true}, CPUAcct: {own, true}, Memory: {yarnDir, false}, CPUSet: {"kubepods/besteffort", false}, Blkio: {yarnDir, false}},
		ok:   true,
	}, {
		name:    "no controller enabled anywhere (this hybrid host): charged to the root",
		subtree: map[string]string{"": "", "kubepods": "", "kubepods/besteffort": "", yarnDir: ""},
		want:    Cgroups{CPU: {own, true}, CPUAcct: {own, true}, Memory: {"", false}, CPUSet: {"", false}, Blkio: {"", false}},
		ok:      true,
	}, {
		name:    "no cgroup.subtree_control (not a cgroup2 file system): every controller the container's",
		subtree: map[string]string{},
		want:    Cgroups{{own, true}, {own, true}, {own, true}, {own, true}, {own, true}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(root, yarnDir), 0o755))
			for dir, enabled := range tt.subtree {
				require.NoError(t, os.WriteFile(filepath.Join(root, dir, "cgroup.subtree_control"), []byte(enabled+"\n"), 0o644))
			}
			v2, ok := Hierarchy{CgroupRoot: root, V2: true, Dir: yarnDir}.ReadV2Controllers()
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, v2.Refs(own))
		})
	}
}

// TestRealKernelScanUnifiedCPUOnly: on the host's real cgroup2 hierarchy,
// whose YARN root enables no memory controller for its children (this
// hybrid host binds memory to v1; on a v2 node it is Hadoop's default,
// yarn.nodemanager.resource.memory.enabled=false), a container's memory is
// not its own: it is measured by its processes, as for CPU-only YARN on v1.
func TestRealKernelScanUnifiedCPUOnly(t *testing.T) {
	const unified = "/sys/fs/cgroup/unified"
	if os.Geteuid() != 0 {
		kerneltest.Skip(t, "real-kernel test: needs root")
	}
	if _, err := os.Stat(filepath.Join(unified, "cgroup.procs")); err != nil {
		kerneltest.Skip(t, "real-kernel test: needs a cgroup2 hierarchy at "+unified)
	}
	yarnDir := kerneltest.UniqueRoot(t) + "/hadoop-yarn"
	name := "container_e17_1700000000000_0042_01_000002"
	var created cgtree.Tracker
	t.Cleanup(func() { assert.NoError(t, created.RemoveAll()) })
	require.NoError(t, created.MkdirAll(filepath.Join(unified, yarnDir, name)))
	enabled, err := os.ReadFile(filepath.Join(unified, yarnDir, "cgroup.subtree_control"))
	require.NoError(t, err)
	if len(enabled) > 1 {
		t.Fatalf("this test expects a cgroup2 hierarchy without controllers (hybrid mode); %s enables %q", yarnDir, enabled)
	}
	p := kerneltest.Start(t, "exec sleep 3600", filepath.Join(unified, yarnDir, name))
	require.NoError(t, p.Release())

	res, err := NewScanner(Hierarchy{CgroupRoot: unified, ProcRoot: "/proc", V2: true, Dir: yarnDir}).Scan()
	require.NoError(t, err)
	require.Len(t, res.Containers, 1)
	c := res.Containers[0]
	assert.Equal(t, []int{p.Pid()}, c.Pids)
	assert.Equal(t, Ref{Dir: yarnDir + "/" + name, Owned: true}, c.Cgroups[CPU])
	assert.False(t, c.Cgroups[Memory].Owned)
	assert.Equal(t, MemoryByProcesses, c.Cgroups.MemoryAccounting())
	_, err = os.Stat(filepath.Join(unified, yarnDir, name, "memory.current"))
	assert.True(t, os.IsNotExist(err), "the kernel agrees: the container directory has no memory files")
}
