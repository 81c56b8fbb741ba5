package yarnsuppress

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features/featurestest"
)

// TestYARNRootQuotaRestored: the YARN root had its own CFS quota (YARN's
// percentage-physical-cpu-limit); dividing the BE budget overwrites it, and
// when the division ends - upstream's suppress off, or koordlet started
// with YARNBECPUSuppress off - the root gets that quota back. The code
// before set it unlimited (-1) in the first case and left the division's
// share in the second.
func TestYARNRootQuotaRestored(t *testing.T) {
	n := newBindNode(t, bindCase{budget: 200000, beRequest: 1000, yarnVCores: 1, beUsage: 2, yarnUsage: 2})
	n.helper.WriteCgroupFileContents(outside, system.CPUCFSQuota, "300000") // YARN's own: 3 of 4 cores
	n.s.BindYARN()
	be, ya := n.quotas(t)
	require.Equal(t, int64(200000), be+ya)

	// Upstream's suppress off: the budget is unlimited.
	n.helper.WriteCgroupFileContents(n.beDir, system.CPUCFSQuota, "-1")
	n.s.BindYARN()
	_, ya = n.quotas(t)
	assert.Equal(t, int64(300000), ya, "YARN's own quota back")
	n.s.BindYARN()
	_, ya = n.quotas(t)
	assert.Equal(t, int64(300000), ya, "and left alone")

	// Divided again; then a koordlet started with the gate off.
	n.helper.WriteCgroupFileContents(n.beDir, system.CPUCFSQuota, "200000")
	n.s.BindYARN()
	_, ya = n.quotas(t)
	require.NotEqual(t, int64(300000), ya)
	require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{string(features.YARNBECPUSuppress): false}))
	r := mustRestorer(t, func() string { return outside })
	assert.Equal(t, 1, r.RestoreDisabled())
	_, ya = n.quotas(t)
	assert.Equal(t, int64(300000), ya, "restored from the record after a restart")
	assert.Equal(t, 0, r.RestoreDisabled(), "once")
}

// TestYARNRootQuotaRestoredV2: on a cgroup v2 node the gate-off restore
// writes cpu.max (koordlet's executor maps the cfs quota there, -1 to
// "max"). The code before wrote cpu.cfs_quota_us by hand, a file v2 does
// not have: YARN stayed capped at its last share of the BE budget.
func TestYARNRootQuotaRestoredV2(t *testing.T) {
	for _, tc := range []struct {
		prior   string
		wantMax string // cpu.max's quota field
	}{{"300000", "300000"}, {"-1", "max"}} {
		t.Run(tc.prior, func(t *testing.T) {
			helper := system.NewFileTestUtil(t)
			t.Cleanup(helper.Cleanup)
			helper.SetCgroupsV2(true)
			helper.WriteCgroupFileContents(outside, system.CPUCFSQuotaV2, "120000 100000") // the last share of the BE budget
			dir := filepath.Dir(system.GetCgroupFilePath(outside, system.CPUCFSQuotaV2))
			require.NoError(t, unix.Setxattr(dir, "trusted.koordlet-yarn.prior-cfs-quota", []byte(tc.prior), 0))
			require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{string(features.YARNBECPUSuppress): false}))
			r := mustRestorer(t, func() string { return outside })
			assert.Equal(t, 1, r.RestoreDisabled())
			assert.Equal(t, tc.wantMax, strings.Fields(helper.ReadCgroupFileContents(outside, system.CPUCFSQuotaV2))[0], "cpu.max back to YARN's own")
			_, err := os.Stat(filepath.Join(dir, system.CPUCFSQuotaName))
			assert.True(t, os.IsNotExist(err), "no v1 file made on v2")
			_, err = unix.Getxattr(dir, "trusted.koordlet-yarn.prior-cfs-quota", make([]byte, 32))
			assert.ErrorIs(t, err, unix.ENODATA, "the record is gone")
			assert.Equal(t, 0, r.RestoreDisabled(), "once")
		})
	}
}

// TestRestorerFollowsTheStrategy (issue 55, item 4): the root's own quota
// goes back unless the YARN-aware BE suppress runs, which takes both
// YARNBECPUSuppress and koordlet's BECPUSuppress (upstream runs the
// cpuSuppress slot only with it). The code before restored only with
// YARNBECPUSuppress off.
func TestRestorerFollowsTheStrategy(t *testing.T) {
	for _, tc := range []struct {
		yarn, koordlet bool
		restored       int
	}{
		{yarn: false, koordlet: true, restored: 1},
		{yarn: true, koordlet: false, restored: 1},
		{yarn: false, koordlet: false, restored: 1},
		{yarn: true, koordlet: true, restored: 0},
	} {
		t.Run(fmt.Sprintf("YARNBECPUSuppress=%v,BECPUSuppress=%v", tc.yarn, tc.koordlet), func(t *testing.T) {
			helper := system.NewFileTestUtil(t)
			t.Cleanup(helper.Cleanup)
			helper.SetCgroupsV2(false)
			helper.WriteCgroupFileContents(outside, system.CPUCFSQuota, "120000")
			dir := filepath.Dir(system.GetCgroupFilePath(outside, system.CPUCFSQuota))
			require.NoError(t, unix.Setxattr(dir, "trusted.koordlet-yarn.prior-cfs-quota", []byte("300000"), 0))
			featurestest.Set(t, map[string]bool{string(features.YARNBECPUSuppress): tc.yarn, string(koordfeatures.BECPUSuppress): tc.koordlet})
			assert.Equal(t, tc.yarn && tc.koordlet, Runs())
			r := mustRestorer(t, func() string { return outside })
			assert.Equal(t, tc.restored, r.RestoreDisabled())
			want := "120000"
			if tc.restored == 1 {
				want = "300000"
			}
			assert.Equal(t, want, strings.TrimSpace(helper.ReadCgroupFileContents(outside, system.CPUCFSQuota)))
		})
	}
}
