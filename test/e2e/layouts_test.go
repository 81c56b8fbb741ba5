package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"

	koordletyarn "github.com/koordlet-yarn/koordlet-yarn"
	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

// TestLayoutDiscoveryAndMetrics runs koordlet on the node layouts users run
// — CPU-only YARN (Hadoop's default, memory.enabled=false), the
// systemd driver's naming with the chart's hierarchy
// kubepods.slice/kubepods-besteffort.slice/hadoop-yarn, cgroup v2 on the
// host's real unified hierarchy, and CPU-only YARN with cpu,cpuacct
// co-mounted (on a fake root) — and checks that the containers are
// discovered from their real cgroups and the NodeManager, with the
// controllers YARN manages owned and the others resolved to the NodeManager
// pod's cgroup, and that their CPU is measured where the layout allows it.
func TestLayoutDiscoveryAndMetrics(t *testing.T) {
	for _, opts := range []nodebox.Options{{Layout: nodebox.LayoutCPUOnly}, {Layout: nodebox.LayoutSystemd}, {Layout: nodebox.LayoutUnified},
		// cpu,cpuacct co-mounted on a fake root: the files koordlet reads
		// are fake, the processes and their memberships real.
		{Layout: nodebox.LayoutCoMountedCPUOnly, FakeRoot: true}} {
		l := opts.Layout
		t.Run(l.Name, func(t *testing.T) {
			b := startBox(t, opts)
			am, err := b.NM.Launch(nmemu.Spec{AppID: 42, Attempt: 1, Sequence: 1, User: "spark", MemoryMB: 1024, VCores: 1,
				Script: "sleep 3600 & exec sleep 3600"})
			require.NoError(t, err)
			burner, err := b.NM.Launch(nmemu.Spec{AppID: 42, Attempt: 1, Sequence: 2, User: "spark", MemoryMB: 2048, VCores: 2,
				Script: kerneltest.HelperScript("burn")})
			require.NoError(t, err)

			var resp koordletyarn.ContainersResponse
			require.Eventually(t, func() bool {
				resp, err = b.Containers()
				if err != nil {
					return false
				}
				a, e := find(resp, am), find(resp, burner)
				// A fake root's cgroup.procs lists the launched process only,
				// not the ones it forks.
				amPids := 2
				if opts.FakeRoot {
					amPids = 1
				}
				return a != nil && e != nil && a.HasCgroup() && e.HasCgroup() && a.User == "spark" && len(a.Pids) == amPids && len(e.Pids) == 1
			}, 30*time.Second, 200*time.Millisecond, "koordlet lists both containers from cgroups and the NM")
			assert.Contains(t, resp.Informer.Hierarchy, b.Hierarchy(), "koordlet resolves the layout's default hierarchy")
			a := find(resp, am)
			assert.True(t, a.IsAM)
			own := cgroups.Ref{Dir: b.Hierarchy() + "/" + am, Owned: true}
			assert.Equal(t, own, a.Cgroups[cgroups.CPU])
			if l.Unified {
				// The memory controller is the container's own only when the
				// YARN root enables it for its children (Hadoop's v2 handler
				// with memory enabled); this hybrid host binds memory to v1,
				// so the containers' memory is measured by their processes,
				// as on a v2 node with Hadoop's default memory.enabled=false.
				enabled, err := os.ReadFile(filepath.Join(b.CgroupRoot(), b.Hierarchy(), "cgroup.subtree_control"))
				require.NoError(t, err)
				assert.Equal(t, strings.Contains(string(enabled), "memory"), a.Cgroups[cgroups.Memory].Owned)
				if !a.Cgroups[cgroups.Memory].Owned {
					assert.Equal(t, cgroups.MemoryByProcesses, a.MemoryAccounting())
				}
			} else {
				assert.False(t, a.Cgroups[cgroups.Memory].Owned, "CPU-only YARN: memory stays in the NodeManager pod's cgroup")
				assert.Contains(t, a.Cgroups[cgroups.Memory].Dir, "pod", "resolved to the NodeManager pod's cgroup from /proc")
			}

			if !l.Unified {
				// The usage collector runs in koordlet's QoS manager, which
				// starts once koordlet's metric advisor has synced; on this
				// hybrid host the unified hierarchy has no controllers, so
				// upstream's collectors never sync there (their memory and
				// cpuset files are missing). Per-container CPU from the
				// unified cpu.stat is tested on the real kernel in
				// framework/cgroups (TestRealKernelCPUUsageUnified).
				require.Eventually(t, func() bool {
					_, ok := polled(t, b, "koordlet_yarn_container_cpu_request_cores", map[string]string{"container_id": burner})
					return ok
				}, 30*time.Second, 500*time.Millisecond, "the burner's series are exported")
				// CPU-only YARN: the AM's memory is its processes' (a shell
				// and a sleep: under 8 MiB, above nothing).
				require.Eventually(t, func() bool {
					v, ok := polled(t, b, "koordlet_yarn_container_memory_usage_bytes", map[string]string{"container_id": am})
					return ok && v > 0 && v < 8<<20
				}, 30*time.Second, 500*time.Millisecond, "the AM's memory is measured by its processes")
			}
			b.NM.Exit(burner)
			<-b.NM.Exited(burner)
			require.Eventually(t, func() bool {
				resp, err = b.Containers()
				return err == nil && find(resp, burner) == nil && find(resp, am) != nil
			}, 20*time.Second, 200*time.Millisecond, "an exited container leaves the store")
		})
	}
}

// TestLayoutCoMountedFakeRoot: on a root laid out as most distributions
// mount cgroup v1 — one "cpu,cpuacct" directory with "cpu" and "cpuacct"
// symlinks — a container found by an event (the resync is a minute away)
// is credited in both controllers at once, so CPU QoS lands on it within
// seconds; its exit clears both.
func TestLayoutCoMountedFakeRoot(t *testing.T) {
	b := startBox(t, nodebox.Options{FakeRoot: true, Layout: nodebox.LayoutCoMounted, KoordletArgs: []string{
		"--feature-gates=YARNCPUQoS=true", "--yarn-resync-interval=60s", "--yarn-qos-reconcile-interval=60s"}})
	require.NoError(t, b.UpdateNodeSLO(context.Background(), func(s *slov1alpha1.NodeSLOSpec) {
		policy := slov1alpha1.CPUQOSPolicyGroupIdentity
		s.ResourceQOSStrategy = &slov1alpha1.ResourceQOSStrategy{
			Policies: &slov1alpha1.ResourceQOSPolicies{CPUPolicy: &policy},
			BEClass: &slov1alpha1.ResourceQOS{
				CPUQOS: &slov1alpha1.CPUQOSCfg{Enable: ptr.To(true), CPUQOS: slov1alpha1.CPUQOS{GroupIdentity: ptr.To[int64](-1)}}}}
	}))
	time.Sleep(2 * time.Second) // koordlet sees the NodeSLO
	id, err := b.NM.Launch(nmemu.Spec{AppID: 7, Attempt: 1, Sequence: 2, User: "spark", MemoryMB: 1024, VCores: 1, Script: "exec sleep 3600"})
	require.NoError(t, err)
	own := cgroups.Ref{Dir: b.Hierarchy() + "/" + id, Owned: true}
	if !assert.Eventually(t, func() bool {
		resp, err := b.Containers()
		if err != nil {
			return false
		}
		c := find(resp, id)
		return c != nil && c.Cgroups[cgroups.CPU] == own && c.Cgroups[cgroups.CPUAcct] == own
	}, 15*time.Second, 100*time.Millisecond, "an event credits cpu and cpuacct, co-mounted, at once") {
		resp, _ := b.Containers()
		t.Fatalf("discovery %q, store: %+v", resp.Discovery, find(resp, id))
	}
	require.Eventually(t, func() bool {
		v, err := os.ReadFile(filepath.Join(b.CgroupRoot(), "cpu,cpuacct", b.Hierarchy(), id, "cpu.bvt_warp_ns"))
		return err == nil && strings.TrimSpace(string(v)) == "-1"
	}, 15*time.Second, 100*time.Millisecond, "CPU QoS lands without waiting for the resync")
	b.NM.Exit(id)
	<-b.NM.Exited(id)
	// Until the next NM listing the store keeps what the NM said (RUNNING);
	// the rmdir events alone clear its cgroups in both controllers.
	assert.Eventually(t, func() bool {
		resp, err := b.Containers()
		if err != nil {
			return false
		}
		c := find(resp, id)
		return c == nil || (!c.HasCgroup() && !c.Cgroups[cgroups.CPU].Owned && !c.Cgroups[cgroups.CPUAcct].Owned)
	}, 15*time.Second, 100*time.Millisecond, "the rmdir clears the container's cgroups in both controllers")
	if t.Failed() {
		resp, _ := b.Containers()
		t.Logf("store: %+v; fake dir left: %v", find(resp, id), func() error {
			_, err := os.Stat(filepath.Join(b.CgroupRoot(), "cpu,cpuacct", b.Hierarchy(), id))
			return err
		}())
	}
}
