package preflight_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/config"
	"github.com/koordlet-yarn/koordlet-yarn/preflight"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// TestRealKernelProbe probes this host: a CPU-only YARN hierarchy (cpu and
// cpuacct, mounted apart here) made for the test in the real cgroup v1
// controllers, one container cgroup with a real process in it, the real
// eBPF loader, BTF, freezer, resctrl and PSI of this kernel.
func TestRealKernelProbe(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "cpu", "cpuacct")
	kerneltest.UseHostRoots(t)
	v2 := system.UseCgroupsV2.Load()
	t.Cleanup(func() { system.UseCgroupsV2.Store(v2) })
	system.UseCgroupsV2.Store(false)

	hierarchy := kerneltest.UniqueRoot(t) + "/hadoop-yarn"
	var dirs []string
	for _, ctrl := range []string{"cpu", "cpuacct"} {
		kerneltest.MakeCgroup(t, ctrl, hierarchy)
		dirs = append(dirs, kerneltest.MakeCgroup(t, ctrl, hierarchy+"/"+c1))
	}
	p := kerneltest.Start(t, "exec sleep 60", dirs...)
	require.NoError(t, p.Release())

	cfg := config.NewDefault()
	cfg.CgroupHierarchy = hierarchy
	f := preflight.Probe(context.Background(), preflight.Options{Config: cfg})

	assert.False(t, f.CgroupV2)
	assert.Equal(t, hierarchy, f.Hierarchy)
	assert.True(t, f.HierarchyFlag)
	assert.Equal(t, 1, f.Containers)
	assert.Equal(t, []string{"cpu", "cpuacct"}, f.Managed, "CPU-only YARN: the container's own cgroups")
	assert.True(t, f.ManagedFromContainers)
	assert.Empty(t, f.NamespaceErr, "the test runs in the host's cgroup namespace")
	for _, c := range f.Controllers {
		assert.Equal(t, c.Name == "cpu" || c.Name == "cpuacct", c.RootExists, c.Name)
		assert.True(t, c.Mounted, c.Name)
	}
	_, btfErr := os.Stat("/sys/kernel/btf/vmlinux")
	assert.Equal(t, btfErr == nil, f.BTF)
	if !f.BTF {
		kerneltest.Skip(t, "this kernel has no BTF: the eBPF discovery cannot load")
	}
	assert.True(t, f.EBPFTried)
	assert.Empty(t, f.EBPFErr, "the discovery's programs load and attach on this kernel")
	_, freezerErr := os.Stat(filepath.Join(kerneltest.CgroupRoot, "freezer", "cgroup.procs"))
	assert.Equal(t, freezerErr == nil, f.Freezer)
	_, psiErr := os.ReadFile("/proc/pressure/cpu")
	assert.Equal(t, psiErr == nil, f.PSI)

	r := preflight.Evaluate(f)
	var out bytes.Buffer
	require.NoError(t, r.Write(&out))
	t.Logf("preflight on this host:\n%s", out.String())
	assert.Contains(t, out.String(), "CPU-only YARN")
	assert.Contains(t, out.String(), "eBPF programs load and attach")
	for _, b := range r.Blocking() {
		t.Errorf("blocking on this host: %+v", b)
	}
}
