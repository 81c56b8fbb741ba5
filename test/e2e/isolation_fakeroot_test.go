package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

// TestIsolationFakeRoot: the kernel features this machine lacks, through
// the real koordlet: koordlet runs on a fake cgroup root (and sys fs root)
// that has Group Identity and Anolis Memory QoS files and a resctrl BE
// group; every new YARN container gets cpu.bvt_warp_ns=-1, memory.min/low/
// high and the watermark values from the BE class, and its tasks join the
// resctrl BE group.
func TestIsolationFakeRoot(t *testing.T) {
	b := startBox(t, nodebox.Options{FakeRoot: true, KoordletArgs: []string{
		"--feature-gates=YARNCPUQoS=true,YARNMemoryQoS=true,YARNResctrlQoS=true", "--yarn-qos-reconcile-interval=1s"}})
	ctx := context.Background()
	require.NoError(t, b.UpdateNodeSLO(ctx, func(s *slov1alpha1.NodeSLOSpec) {
		policy := slov1alpha1.CPUQOSPolicyGroupIdentity
		s.ResourceQOSStrategy = &slov1alpha1.ResourceQOSStrategy{
			Policies: &slov1alpha1.ResourceQOSPolicies{CPUPolicy: &policy},
			BEClass: &slov1alpha1.ResourceQOS{
				CPUQOS: &slov1alpha1.CPUQOSCfg{Enable: ptr.To(true), CPUQOS: slov1alpha1.CPUQOS{GroupIdentity: ptr.To[int64](-1)}},
				MemoryQOS: &slov1alpha1.MemoryQOSCfg{Enable: ptr.To(true), MemoryQOS: slov1alpha1.MemoryQOS{
					MinLimitPercent: ptr.To[int64](10), LowLimitPercent: ptr.To[int64](20), ThrottlingPercent: ptr.To[int64](80),
					WmarkRatio: ptr.To[int64](95), WmarkScalePermill: ptr.To[int64](20), WmarkMinAdj: ptr.To[int64](50)}},
				ResctrlQOS: &slov1alpha1.ResctrlQOSCfg{Enable: ptr.To(true)},
			}}
	}))
	id, err := b.NM.Launch(nmemu.Spec{AppID: 12, Attempt: 1, Sequence: 2, User: "spark", MemoryMB: 2048, VCores: 1, Script: "exec sleep 3600"})
	require.NoError(t, err)
	read := func(ctrl, file string) string {
		v, err := os.ReadFile(filepath.Join(b.CgroupRoot(), ctrl, nodebox.YARNHierarchy, id, file))
		if err != nil {
			return "gone"
		}
		return strings.TrimSpace(string(v))
	}
	req := int64(2048) << 20
	require.Eventually(t, func() bool {
		return read("cpu", "cpu.bvt_warp_ns") == "-1" && read("memory", "memory.min") == fmt.Sprint(req/10)
	}, 30*time.Second, 200*time.Millisecond, "Group Identity and Memory QoS land on the new container")
	assert.Equal(t, fmt.Sprint(req/5), read("memory", "memory.low"))
	// No container limit on the fake root: high = request + (allocatable − request) × 80%, page aligned.
	assert.NotEqual(t, "9223372036854771712", read("memory", "memory.high"))
	assert.Equal(t, "95", read("memory", "memory.wmark_ratio"))
	assert.Equal(t, "20", read("memory", "memory.wmark_scale_factor"))
	assert.Equal(t, "50", read("memory", "memory.wmark_min_adj"))
	pid := fmt.Sprint(b.NM.Pid(id))
	require.Eventually(t, func() bool {
		v, _ := os.ReadFile(filepath.Join(b.SysFSRoot(), system.ResctrlDir, "BE", "tasks"))
		return strings.Contains(string(v), pid)
	}, 30*time.Second, 200*time.Millisecond, "the container's tasks join the resctrl BE group")
}
