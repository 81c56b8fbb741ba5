package cgroups

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeNS lays out a proc root whose /proc/self/cgroup says self and a v2
// mount where koordlet's pid is listed in hostDir.
func fakeNS(t *testing.T, self, hostDir string) *Namespace {
	dir := t.TempDir()
	proc, mount := filepath.Join(dir, "proc"), filepath.Join(dir, "cgroup")
	require.NoError(t, os.MkdirAll(filepath.Join(proc, "self"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(proc, "self", "cgroup"), []byte("0::"+self+"\n"), 0o644))
	for _, d := range []string{"", "kubepods/besteffort/hadoop-yarn/c", hostDir} {
		require.NoError(t, os.MkdirAll(filepath.Join(mount, d), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(mount, hostDir, "cgroup.procs"), []byte("1\n"+strconv.Itoa(os.Getpid())+"\n"), 0o644))
	return NewNamespace(proc, mount, true)
}

func TestNamespaceTranslate(t *testing.T) {
	t.Run("private namespace rooted at koordlet's container", func(t *testing.T) {
		ns := fakeNS(t, "/", "kubepods/burstable/podK/ctr")
		root, err := ns.Root(CPU)
		require.NoError(t, err)
		assert.Equal(t, "kubepods/burstable/podK/ctr", root)
		p, ok := ns.Translate(CPU, "/../../../besteffort/hadoop-yarn/c")
		assert.True(t, ok)
		assert.Equal(t, "kubepods/besteffort/hadoop-yarn/c", p)
		assert.True(t, cgroupFileHas("0::/../../../besteffort/hadoop-yarn/c\n", CPU, "kubepods/besteffort/hadoop-yarn/c", true, ns))
		assert.False(t, cgroupFileHas("0::/../../../besteffort/hadoop-yarn/c\n", CPU, "kubepods/besteffort/hadoop-yarn/c", true, nil),
			"read as host paths they never match")
	})
	t.Run("koordlet moved below its namespace root", func(t *testing.T) {
		ns := fakeNS(t, "/sub", "kubepods/burstable/podK/ctr/sub")
		root, err := ns.Root(CPU)
		require.NoError(t, err)
		assert.Equal(t, "kubepods/burstable/podK/ctr", root)
	})
	t.Run("host namespace", func(t *testing.T) {
		ns := fakeNS(t, "/kubepods/burstable/podK/ctr", "kubepods/burstable/podK/ctr")
		root, err := ns.Root(CPU)
		require.NoError(t, err)
		assert.Empty(t, root)
		p, ok := ns.Translate(CPU, "/kubepods/besteffort/hadoop-yarn/c")
		assert.True(t, ok)
		assert.Equal(t, "kubepods/besteffort/hadoop-yarn/c", p)
	})
	t.Run("a private namespace that cannot be placed never matches", func(t *testing.T) {
		ns := fakeNS(t, "/", "elsewhere-not-listed")
		require.NoError(t, os.Remove(filepath.Join(ns.cgroupRoot, "elsewhere-not-listed", "cgroup.procs")))
		_, ok := ns.Translate(CPU, "/../besteffort/hadoop-yarn/c")
		assert.False(t, ok)
	})
	var nilNS *Namespace
	p, ok := nilNS.Translate(CPU, "/a/b")
	assert.True(t, ok)
	assert.Equal(t, "a/b", p)
}

// TestNamespaceFollowsCoMountedLink: on cgroup v1 with cpu and cpuacct
// co-mounted, the cpu hierarchy is a link (cpu -> cpu,cpuacct); koordlet in
// a private namespace is still placed by searching the real mount. The
// search before did not follow the link and found nothing, so every
// process check failed.
func TestNamespaceFollowsCoMountedLink(t *testing.T) {
	dir := t.TempDir()
	proc, root := filepath.Join(dir, "proc"), filepath.Join(dir, "cgroup")
	require.NoError(t, os.MkdirAll(filepath.Join(proc, "self"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(proc, "self", "cgroup"), []byte("4:cpu,cpuacct:/\n"), 0o644))
	real := filepath.Join(root, "cpu,cpuacct")
	own := filepath.Join(real, "kubepods", "burstable", "podK", "ctr")
	require.NoError(t, os.MkdirAll(own, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(real, "kubepods", "besteffort", "hadoop-yarn", "c"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(own, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644))
	require.NoError(t, os.Symlink("cpu,cpuacct", filepath.Join(root, "cpu")))
	ns := NewNamespace(proc, root, false)
	got, err := ns.Root(CPU)
	require.NoError(t, err)
	assert.Equal(t, "kubepods/burstable/podK/ctr", got)
	p, ok := ns.Translate(CPU, "/../../../besteffort/hadoop-yarn/c")
	assert.True(t, ok)
	assert.Equal(t, "kubepods/besteffort/hadoop-yarn/c", p)
}
