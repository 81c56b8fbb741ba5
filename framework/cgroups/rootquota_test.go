package cgroups

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"
)

// rootQuotaNode is a fake cgroup root with the YARN root's quota file
// (cpu.cfs_quota_us on v1, cpu.max on v2).
type rootQuotaNode struct {
	helper *system.FileTestUtil
	r      system.Resource
	v2     bool
}

const quotaRoot = "hadoop-yarn"

func newRootQuotaNode(t *testing.T, v2 bool, quota string) *rootQuotaNode {
	helper := system.NewFileTestUtil(t)
	t.Cleanup(helper.Cleanup)
	helper.SetCgroupsV2(v2)
	n := &rootQuotaNode{helper: helper, r: system.CPUCFSQuota, v2: v2}
	if v2 {
		n.r = system.CPUCFSQuotaV2
	}
	n.set(quota)
	return n
}

// set writes the file as the kernel shows it.
func (n *rootQuotaNode) set(quota string) {
	if n.v2 {
		if quota == "-1" {
			quota = "max"
		}
		quota += " 100000"
	}
	n.helper.WriteCgroupFileContents(quotaRoot, n.r, quota)
}

// settle makes cpu.max read as the kernel shows it after a write of the
// quota alone ("quota period").
func (n *rootQuotaNode) settle() {
	if v := n.helper.ReadCgroupFileContents(quotaRoot, n.r); n.v2 && !strings.Contains(strings.TrimSpace(v), " ") {
		n.helper.WriteCgroupFileContents(quotaRoot, n.r, strings.TrimSpace(v)+" 100000")
	}
}

// get reads the quota field back ("max" as -1).
func (n *rootQuotaNode) get() string {
	v := strings.Fields(n.helper.ReadCgroupFileContents(quotaRoot, n.r))[0]
	if v == "max" {
		return "-1"
	}
	return v
}

func (n *rootQuotaNode) record(t *testing.T) (string, bool) {
	buf := make([]byte, 32)
	m, err := unix.Getxattr(filepath.Dir(system.GetCgroupFilePath(quotaRoot, n.r)), PriorQuotaXattr, buf)
	if err != nil {
		require.ErrorIs(t, err, unix.ENODATA)
		return "", false
	}
	return string(buf[:m]), true
}

func TestRootQuota(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		t.Run(map[bool]string{false: "v1", true: "v2"}[v2], func(t *testing.T) {
			t.Run("records once, writes, restores", func(t *testing.T) {
				n := newRootQuotaNode(t, v2, "300000")
				q := NewRootQuota()
				require.NoError(t, q.Set(quotaRoot, 120000))
				assert.Equal(t, "120000", n.get())
				require.NoError(t, q.Set(quotaRoot, 80000))
				rec, ok := n.record(t)
				require.True(t, ok)
				assert.Equal(t, "300000", rec, "the own quota, not the first write")
				own, err := q.Own(quotaRoot)
				require.NoError(t, err)
				assert.Equal(t, int64(300000), own)
				restored, quota, err := q.Restore(quotaRoot)
				require.NoError(t, err)
				assert.True(t, restored)
				assert.Equal(t, int64(300000), quota)
				assert.Equal(t, "300000", n.get())
				_, ok = n.record(t)
				assert.False(t, ok, "the record is gone")
				restored, _, err = q.Restore(quotaRoot)
				require.NoError(t, err)
				assert.False(t, restored, "nothing koordlet wrote: left alone")
			})
			t.Run("unlimited goes back as unlimited", func(t *testing.T) {
				n := newRootQuotaNode(t, v2, "-1")
				q := NewRootQuota()
				require.NoError(t, q.Set(quotaRoot, 120000))
				_, _, err := q.Restore(quotaRoot)
				require.NoError(t, err)
				assert.Equal(t, "-1", n.get())
				if v2 {
					assert.Equal(t, "max", strings.TrimSpace(n.helper.ReadCgroupFileContents(quotaRoot, n.r)), "max, not -1, on v2")
				}
			})
			t.Run("a record left by an earlier koordlet is kept", func(t *testing.T) {
				n := newRootQuotaNode(t, v2, "300000")
				require.NoError(t, NewRootQuota().Set(quotaRoot, 120000)) // a koordlet that died
				q := NewRootQuota()                                       // the next one
				own, err := q.Own(quotaRoot)
				require.NoError(t, err)
				assert.Equal(t, int64(300000), own, "the record, not the cap on the file")
				require.NoError(t, q.Set(quotaRoot, 60000))
				rec, _ := n.record(t)
				assert.Equal(t, "300000", rec)
				_, _, err = q.Restore(quotaRoot)
				require.NoError(t, err)
				assert.Equal(t, "300000", n.get())
			})
			t.Run("never records a value this koordlet wrote", func(t *testing.T) {
				n := newRootQuotaNode(t, v2, "300000")
				q := NewRootQuota()
				require.NoError(t, q.Set(quotaRoot, 120000))
				dir := filepath.Dir(system.GetCgroupFilePath(quotaRoot, n.r))
				require.NoError(t, unix.Removexattr(dir, PriorQuotaXattr)) // lost from outside
				n.settle()
				own, err := q.Own(quotaRoot)
				require.NoError(t, err)
				assert.Equal(t, int64(-1), own, "koordlet's 120000 is not YARN's: unknown")
				require.NoError(t, q.Set(quotaRoot, 60000))
				rec, _ := n.record(t)
				assert.Equal(t, "-1", rec)
			})
			t.Run("without a record, this koordlet's write goes back to unlimited", func(t *testing.T) {
				n := newRootQuotaNode(t, v2, "300000")
				q := NewRootQuota()
				require.NoError(t, q.Set(quotaRoot, 120000))
				dir := filepath.Dir(system.GetCgroupFilePath(quotaRoot, n.r))
				require.NoError(t, unix.Removexattr(dir, PriorQuotaXattr))
				restored, quota, err := q.Restore(quotaRoot)
				require.NoError(t, err)
				assert.True(t, restored)
				assert.Equal(t, int64(-1), quota)
				assert.Equal(t, "-1", n.get())
			})
		})
	}
}
