package kill

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

// TestKillEmptyCgroupIsAFailure: a container whose cgroup holds no process
// releases nothing; the kill says so and writes nothing.
func TestKillEmptyCgroupIsAFailure(t *testing.T) {
	root := t.TempDir()
	h := cgroups.Hierarchy{CgroupRoot: root, ProcRoot: "/proc", V2: true, Dir: "kubepods.slice/kubepods-besteffort.slice/hadoop-yarn"}
	name := "container_e17_1700000000000_0042_01_000002"
	dir := filepath.Join(root, h.Dir, name)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cgroup.procs"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cgroup.kill"), nil, 0o644))
	own := cgroups.Ref{Dir: h.ContainerRelDir(name), Owned: true}
	c := &store.Container{Name: name, Cgroups: cgroups.Cgroups{own, own, own, own, own}}
	_, err := (&Killer{H: h}).Kill(c)
	require.ErrorIs(t, err, ErrNothingKilled)
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.kill"))
	require.NoError(t, err)
	assert.Empty(t, string(b))
}
