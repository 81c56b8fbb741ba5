package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"

	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

// TestIsolation: with YARNCPUQoS on and the BE class asking for sched-idle,
// the real koordlet writes cpu.idle=1 to every new YARN container's real
// cgroup, to the YARN hierarchy root and to the besteffort QoS cgroup above
// it (the LS pods' sibling), and resets them when the BE class turns CPU
// QoS off. (Group Identity, Memory QoS and resctrl are not on
// this kernel; their appliers are tested on fake roots.)
func TestIsolation(t *testing.T) {
	b := startBox(t, nodebox.Options{KoordletArgs: []string{"--feature-gates=YARNCPUQoS=true", "--yarn-qos-reconcile-interval=1s"}})
	if _, err := os.Stat(filepath.Join(nodebox.CgroupRoot, "cpu", "kubepods", "cpu.idle")); err != nil {
		kerneltest.Skip(t, "node-level e2e: this kernel has no cpu.idle")
	}
	ctx := context.Background()
	setIdle := func(on bool) {
		require.NoError(t, b.UpdateNodeSLO(ctx, func(s *slov1alpha1.NodeSLOSpec) {
			policy := slov1alpha1.CPUQOSPolicyCoreSched
			s.ResourceQOSStrategy = &slov1alpha1.ResourceQOSStrategy{
				Policies: &slov1alpha1.ResourceQOSPolicies{CPUPolicy: &policy},
				BEClass: &slov1alpha1.ResourceQOS{CPUQOS: &slov1alpha1.CPUQOSCfg{Enable: ptr.To(on),
					CPUQOS: slov1alpha1.CPUQOS{SchedIdle: ptr.To[int64](1)}}}}
		}))
	}
	setIdle(true)
	idle := func(dir string) string {
		v, err := os.ReadFile(filepath.Join(dir, "cpu.idle"))
		if err != nil {
			return "gone"
		}
		return strings.TrimSpace(string(v))
	}
	var ids []string
	for seq := int64(1); seq <= 3; seq++ {
		id, err := b.NM.Launch(nmemu.Spec{AppID: 11, Attempt: 1, Sequence: seq, User: "spark", MemoryMB: 512, VCores: 1, Script: "exec sleep 3600"})
		require.NoError(t, err)
		ids = append(ids, id)
	}
	root := filepath.Join(nodebox.CgroupRoot, "cpu", nodebox.YARNHierarchy)
	require.Eventually(t, func() bool {
		for _, id := range ids {
			if idle(b.NM.CgroupDir("cpu", id)) != "1" {
				return false
			}
		}
		return idle(root) == "1" && idle(filepath.Dir(root)) == "1"
	}, 30*time.Second, 200*time.Millisecond, "cpu.idle=1 on every container, on the YARN root and on the besteffort QoS cgroup above it")

	setIdle(false)
	require.Eventually(t, func() bool {
		for _, id := range ids {
			if idle(b.NM.CgroupDir("cpu", id)) != "0" {
				return false
			}
		}
		return idle(root) == "0" && idle(filepath.Dir(root)) == "0"
	}, 30*time.Second, 200*time.Millisecond, "reset when the BE class turns CPU QoS off")
}
