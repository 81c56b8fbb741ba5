package cgroups

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// TestRootQuotaRealKernel: on the host's cgroup v1 cpu controller (a YARN
// root this test creates), the one writer records the root's own quota in
// the trusted xattr, writes through koordlet's executor, and a later
// koordlet (a new writer) gives the own quota back from the record.
func TestRootQuotaRealKernel(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "cpu")
	kerneltest.UseHostRoots(t)
	old := system.UseCgroupsV2.Load()
	system.UseCgroupsV2.Store(false)
	t.Cleanup(func() { system.UseCgroupsV2.Store(old) })
	rel := kerneltest.UniqueRoot(t) + "/hadoop-yarn"
	dir := kerneltest.MakeCgroup(t, "cpu", rel)
	file := filepath.Join(dir, "cpu.cfs_quota_us")
	read := func() string {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		return strings.TrimSpace(string(b))
	}
	for _, own := range []string{"300000", "-1"} {
		require.NoError(t, os.WriteFile(file, []byte(own), 0)) // YARN's own
		require.NoError(t, NewRootQuota().Set(rel, 120000))    // a koordlet that died
		assert.Equal(t, "120000", read())
		later := NewRootQuota()
		require.NoError(t, later.Set(rel, 60000))
		buf := make([]byte, 32)
		n, err := unix.Getxattr(dir, PriorQuotaXattr, buf)
		require.NoError(t, err)
		assert.Equal(t, own, string(buf[:n]), "the record is YARN's own, not the dead koordlet's cap")
		restored, _, err := later.Restore(rel)
		require.NoError(t, err)
		assert.True(t, restored)
		assert.Equal(t, own, read())
		_, err = unix.Getxattr(dir, PriorQuotaXattr, buf)
		assert.ErrorIs(t, err, unix.ENODATA)
	}
}
