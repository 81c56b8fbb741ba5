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

// TestIsolation: with YARNCPUQoS on and the BE class asking for sched-idle
// (cpuPolicy coreSched, schedIdle 1), the real koordlet makes the YARN
// hierarchy root cpu.idle=1 and every YARN container's tasks SCHED_IDLE
// but the ApplicationMaster's (kept SCHED_OTHER, so that its heartbeats
// live through a budget at the floor), while the cgroups whose cpu.shares another owner writes stay non-idle: the
// besteffort QoS cgroup above the YARN root (the kubelet) and each
// container's own cgroup (the LinuxContainerExecutor). The box's kubelet
// writes its QoS and pod cgroups' cpu.shares throughout, and the scenario
// fails on any refused write (startBox); earlier versions made besteffort
// idle and the kernel refused them with EINVAL. Turning CPU QoS off in the
// NodeSLO resets the root and gives the tasks SCHED_OTHER back. (Group
// Identity, Memory QoS and resctrl are not on this kernel; their appliers
// are tested on fake roots.)
func TestIsolation(t *testing.T) {
	isolation(t, nodebox.Options{KoordletArgs: []string{"--feature-gates=YARNCPUQoS=true", "--yarn-qos-reconcile-interval=1s"}})
}

// isolation is TestIsolation on the node opts lays out (cgroup v1).
func isolation(t *testing.T, opts nodebox.Options) {
	b := startBox(t, opts)
	if opts.Layout.NoYARNCgroups {
		waitAdopter(t, b)
	}
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
		id, err := b.NM.Launch(nmemu.Spec{AppID: 11, Attempt: 1, Sequence: seq, User: "spark", MemoryMB: 512, VCores: 1, Script: "sleep 3600 & exec sleep 3600"})
		require.NoError(t, err)
		ids = append(ids, id)
	}
	// Each container's processes: the shell and its two sleeps (one
	// exec'd), and the DefaultContainerExecutor's wrapper, which stays the
	// parent, where YARN makes no cgroups.
	tasks := 2
	if opts.Layout.NoYARNCgroups {
		tasks = 3
	}
	root := filepath.Join(nodebox.CgroupRoot, "cpu", nodebox.YARNHierarchy)
	// ids[0] (sequence 1) is the application's AM: never SCHED_IDLE, so
	// that a budget cut to the floor does not starve its heartbeats.
	require.Eventually(t, func() bool {
		for _, id := range ids[1:] {
			if n, other := policyCounts(b.NM.CgroupDir("cpu", id)); n != tasks || other != 0 {
				return false
			}
		}
		return idle(root) == "1"
	}, 30*time.Second, 200*time.Millisecond, "every executor's tasks SCHED_IDLE and the YARN root cpu.idle=1")
	n, other := policyCounts(b.NM.CgroupDir("cpu", ids[0]))
	require.Equal(t, [2]int{0, tasks}, [2]int{n, other}, "the AM's tasks stay SCHED_OTHER")
	for _, id := range ids {
		require.Equal(t, "0", idle(b.NM.CgroupDir("cpu", id)), "a container's own cgroup is never made idle (the LCE writes its cpu.shares)")
	}
	require.Equal(t, "0", idle(filepath.Dir(root)), "the besteffort QoS cgroup is never made idle (the kubelet writes its cpu.shares)")
	// The kubelet's rounds while sched-idle is on all succeed.
	_, before := b.KubeletErrors()
	require.Eventually(t, func() bool { _, r := b.KubeletErrors(); return r >= before+2 }, 20*time.Second, 200*time.Millisecond)
	errs, _ := b.KubeletErrors()
	require.Empty(t, errs, "the kubelet's cpu.shares writes")
	// The LCE's write of a container's cpu.shares.
	require.NoError(t, os.WriteFile(filepath.Join(b.NM.CgroupDir("cpu", ids[0]), "cpu.shares"), []byte("1024"), 0o644))

	setIdle(false)
	require.Eventually(t, func() bool {
		for _, id := range ids {
			if n, other := policyCounts(b.NM.CgroupDir("cpu", id)); n != 0 || other != tasks {
				return false
			}
		}
		return idle(root) == "0"
	}, 30*time.Second, 200*time.Millisecond, "reset when the BE class turns CPU QoS off")
}
