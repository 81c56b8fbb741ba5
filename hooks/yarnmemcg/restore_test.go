package yarnmemcg

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// TestRevertTarget: a process that took a checked process's number and was
// moved into the leaf by mistake goes back to its creator's memory cgroup
// (it was born there), not to the checked process's (the NodeManager pod's,
// where the code before sent it).
func TestRevertTarget(t *testing.T) {
	proc := t.TempDir()
	write := func(pid, name, body string) {
		require.NoError(t, os.MkdirAll(filepath.Join(proc, pid), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(proc, pid, name), []byte(body), 0o644))
	}
	write("200", "stat", kerneltest.ProcStat(200, "x", 150, 1))
	write("150", "cgroup", "7:memory:/kubepods/burstable/podLS/c1\n4:cpu,cpuacct:/kubepods/burstable/podLS/c1\n")
	write("201", "stat", kerneltest.ProcStat(201, "x", 999, 1)) // creator gone
	h := cgroups.Hierarchy{ProcRoot: proc}
	const nm, own = "kubepods/besteffort/podNM/nm", "hadoop-yarn/container_1"
	assert.Equal(t, "kubepods/burstable/podLS/c1", revertTarget(h, 200, nm, own))
	assert.Equal(t, nm, revertTarget(h, 201, nm, own), "creator unknown: where the checked process was")
}
