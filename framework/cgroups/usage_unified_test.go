package cgroups

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/test/cgtree"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// TestRealKernelCPUUsageUnified: on the host's real cgroup2 hierarchy
// (Hadoop 3.5's v2 handler: one unified directory per container) the
// container's CPU is its cpu.stat usage_usec, here of a real spinning
// process (the base cpu.stat; this hybrid host binds the cpu controller to
// v1, so the throttling counters are not there).
func TestRealKernelCPUUsageUnified(t *testing.T) {
	const unified = "/sys/fs/cgroup/unified"
	if os.Geteuid() != 0 {
		kerneltest.Skip(t, "real-kernel test: needs root")
	}
	if _, err := os.Stat(filepath.Join(unified, "cgroup.procs")); err != nil {
		kerneltest.Skip(t, "real-kernel test: needs a cgroup2 hierarchy at "+unified)
	}
	rel := kerneltest.UniqueRoot(t) + "/hadoop-yarn/container_e17_1700000000000_0042_01_000002"
	var created cgtree.Tracker
	t.Cleanup(func() { assert.NoError(t, created.RemoveAll()) })
	require.NoError(t, created.MkdirAll(filepath.Join(unified, rel)))
	p := kerneltest.Start(t, "while :; do :; done", filepath.Join(unified, rel))
	require.NoError(t, p.Release())

	r := NewUsageReader(unified, true)
	defer r.Close()
	first, err := r.CPUUsage(rel)
	require.NoError(t, err)
	time.Sleep(500 * time.Millisecond)
	second, err := r.CPUUsage(rel)
	require.NoError(t, err)
	cores := float64(second-first) / float64(500*time.Millisecond)
	t.Logf("unified cpu.stat: %.2f cores over 0.5 s", cores)
	assert.Greater(t, cores, 0.3, "a spinning process shows in usage_usec")
	assert.LessOrEqual(t, cores, 1.2)
}
