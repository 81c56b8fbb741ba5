package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	koordletyarn "github.com/koordlet-yarn/koordlet-yarn"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/hooks/yarnadopt"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

// adoptGate turns on YARNContainerCgroups.
const adoptGate = "YARNContainerCgroups=true"

// TestNoYARNCgroups runs the node-level scenarios on cgroup v1 with a YARN
// that makes no container cgroups (the DefaultContainerExecutor's way: the
// container processes in the NodeManager pod's cgroup): with
// YARNContainerCgroups koordlet gives each container the cgroups the LCE
// would (cpu, cpuacct, memory) and every feature works as with the LCE's:
// discovery, metrics, CPU QoS (TestIsolation's scenario), memory pressure.
// TestV2 runs the same on cgroup v2 in the guest.
func TestNoYARNCgroups(t *testing.T) {
	if nodebox.PureV2() {
		kerneltest.Skip(t, "TestNoYARNCgroups is the cgroup v1 run; on a cgroup v2 host TestV2 runs the no-YARN-cgroups layout")
	}
	l := nodebox.LayoutNoYARNCgroups
	t.Run("adoption, metrics, restart, gate off", func(t *testing.T) { noCgroupsNode(t, l) })
	// The LinuxContainerExecutor without a resources handler: its launch
	// chain has no environment above the launch script.
	t.Run("lce launch: adoption, metrics, restart, gate off", func(t *testing.T) { noCgroupsNode(t, nodebox.LayoutNoYARNCgroupsLCE) })
	t.Run("isolation", func(t *testing.T) {
		isolation(t, nodebox.Options{Layout: l, KoordletArgs: []string{"--feature-gates=YARNCPUQoS=true," + adoptGate, "--yarn-qos-reconcile-interval=1s"}})
	})
	t.Run("pressure", func(t *testing.T) {
		pressure(t, nodebox.Options{Layout: l, KoordletArgs: []string{pressureGates + "," + adoptGate}}, true)
	})
}

// waitAdopter waits until koordlet's container cgroup loop runs and has
// found the NodeManager pod's cgroup.
func waitAdopter(t *testing.T, b *nodebox.Box) *yarnadopt.Status {
	t.Helper()
	var st *yarnadopt.Status
	require.Eventually(t, func() bool {
		resp, err := b.Containers()
		st = resp.ContainerCgroups
		return err == nil && st != nil && st.Detection != "" && st.NodeManager != ""
	}, 60*time.Second, 100*time.Millisecond, "koordlet watches the NodeManager pod's cgroups")
	return st
}

// inPodCgroup reports whether pid is in the box's NodeManager pod cgroup in
// ctrl ("" on v2).
func procCgroup(pid int, ctrl string) string {
	for _, line := range strings.Split(readFile("/proc/"+strconv.Itoa(pid)+"/cgroup"), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if ctrl == "" && parts[0] == "0" && parts[1] == "" {
			return strings.TrimPrefix(parts[2], "/")
		}
		for _, n := range strings.Split(parts[1], ",") {
			if ctrl != "" && n == ctrl {
				return strings.TrimPrefix(parts[2], "/")
			}
		}
	}
	return ""
}

// noCgroupsNode: containers launched the DefaultContainerExecutor way are
// found at their exec and moved into cgroups koordlet makes (marked), the
// NodeManager stays in its pod's cgroup (whose cpu.shares the kubelet keeps
// writing), per-container metrics match the kernel's counters of the new
// cgroups, /yarn/containers says what koordlet did; a container launched
// while koordlet is down is adopted by the scan after its restart; with
// the gate off the containers run on where they are and new ones stay in
// the NM pod; a finished container's cgroup is removed.
func noCgroupsNode(t *testing.T, l nodebox.Layout) {
	b := startBox(t, nodebox.Options{Layout: l, KubeletCPUShares: !l.Unified,
		KoordletArgs: []string{"--feature-gates=" + adoptGate, "--yarn-resync-interval=2s"}})
	st := waitAdopter(t, b)
	say(t, "koordlet finds container processes by %s in %s", st.Detection, st.NodeManager)
	wantDetection := "ebpf"
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		wantDetection = "scan"
	}
	assert.Equal(t, wantDetection, st.Detection)

	am, err := b.NM.Launch(nmemu.Spec{AppID: 7, Attempt: 1, Sequence: 1, User: "spark", MemoryMB: 1024, VCores: 1,
		Script: "sleep 3600 & exec sleep 3600"})
	require.NoError(t, err)
	burner, err := b.NM.Launch(nmemu.Spec{AppID: 7, Attempt: 1, Sequence: 2, User: "spark", MemoryMB: 2048, VCores: 1,
		Script: kerneltest.HelperScript("burn")})
	require.NoError(t, err)
	alloc, err := b.NM.Launch(nmemu.Spec{AppID: 7, Attempt: 1, Sequence: 3, User: "spark", MemoryMB: 1024, VCores: 1,
		Script: kerneltest.HelperScript("alloc=128")})
	require.NoError(t, err)

	v2 := l.Unified
	ctrls := []string{"cpu", "cpuacct", "memory"}
	if v2 {
		ctrls = []string{""}
	}
	own := func(id string) string { return b.Hierarchy() + "/" + id }
	amProcs := 3
	if l.LCELaunch {
		amProcs = 2
	}
	var resp = mustContainers(t, b)
	require.Eventually(t, func() bool {
		resp = mustContainers(t, b)
		for _, id := range []string{am, burner, alloc} {
			c := find(resp, id)
			if c == nil || !c.HasCgroup() || c.User != "spark" || !c.Cgroups[cgroups.CPU].Owned || !c.Cgroups[cgroups.Memory].Owned {
				return false
			}
			// The cgroup appears with the first process moved, which may
			// be a child of the launch script (the emulator's launch
			// delay runs sleep(1) first, as YARN's script runs mkdir and
			// ln before it execs the JVM); the main process follows at
			// its own next exec.
			for _, c := range ctrls {
				if procCgroup(b.NM.Pid(id), c) != own(id) {
					return false
				}
			}
		}
		// The AM's processes: the DefaultContainerExecutor's wrapper
		// (the NM's child, which stays), the command (exec'd by the
		// launch's session) and the sleep it forked. The
		// LinuxContainerExecutor's launch, the wrapper's counterpart,
		// names no container (an empty environment): it stays in the
		// NM pod's cgroup, as the native executor does.
		return len(find(resp, am).Pids) == amProcs
	}, 30*time.Second, 100*time.Millisecond, "every container's main process in a cgroup of its own, found with the NM's data, the AM's %d processes", amProcs)
	a := find(resp, am)
	assert.True(t, a.IsAM, "the AM is told apart")
	assert.Equal(t, cgroups.MemoryByCgroup, find(resp, alloc).MemoryAccounting())
	for _, id := range []string{am, burner, alloc} {
		pid := b.NM.Pid(id)
		for _, c := range ctrls {
			if !assert.Equal(t, own(id), procCgroup(pid, c), "%s's process in its own %s cgroup", id, c) {
				dir := filepath.Join(b.CgroupRoot(), c, own(id))
				t.Logf("%s's main process %d: stat %q; its cgroup holds %q", id, pid,
					readFile("/proc/"+strconv.Itoa(pid)+"/stat"), readFile(filepath.Join(dir, "cgroup.procs")))
			}
			dir := filepath.Join(b.CgroupRoot(), c, own(id))
			m := make([]byte, 1)
			_, err := unix.Getxattr(dir, yarnadopt.Marker, m)
			assert.NoError(t, err, "%s carries koordlet's marker", dir)
		}
	}
	// The NodeManager stays where the runtime put it.
	for _, c := range ctrls {
		assert.Equal(t, b.PodCgroup("nodemanager"), procCgroup(b.NMPID(), c), "the NodeManager stays in its pod's %s cgroup", c)
	}
	if st.Detection == "ebpf" {
		// Each container's exec time comes with its exec event, which a
		// scan's move may overtake: the record has it once that event is
		// handled, moments after the move.
		require.Eventually(t, func() bool {
			resp = mustContainers(t, b)
			for _, id := range []string{am, burner, alloc} {
				if resp.ContainerCgroups == nil || resp.ContainerCgroups.Containers[id].LaunchToCgroupNanos <= 0 {
					return false
				}
			}
			return true
		}, 10*time.Second, 100*time.Millisecond, "found at its exec: every container's exec → own cgroup time known")
	}
	st = resp.ContainerCgroups
	require.NotNil(t, st)
	assert.Equal(t, yarnadopt.LayoutNone, st.Layout)
	for _, id := range []string{am, burner, alloc} {
		ad, ok := st.Containers[id]
		if assert.True(t, ok, "/yarn/containers says koordlet made %s's cgroup", id) {
			assert.False(t, ad.CgroupMadeAt.IsZero())
			assert.Positive(t, ad.ProcessesMoved)
			say(t, "%s: cgroup made %s, %d processes moved, %d KiB left charged to the NM pod, exec → own cgroup %v",
				id, ad.CgroupMadeAt.Format(time.RFC3339Nano), ad.ProcessesMoved, ad.MemoryChargedToNodeManagerBytes>>10, time.Duration(ad.LaunchToCgroupNanos))
			// Each process is moved within milliseconds of its exec, before
			// the workload allocates (the allocator's 128 MiB come after);
			// the main process runs sh → sh → env → this Go test binary
			// within a millisecond, and when the move lands the Go runtime
			// has already taken up to ~9 MiB (RssAnon; measured on this
			// machine kind). A JVM's launch script runs for tens of
			// milliseconds before its exec: make measure-adopt has that
			// figure.
			assert.Less(t, ad.MemoryChargedToNodeManagerBytes, int64(16<<20), "moved at its exec, before it allocated")
			if st.Detection == "ebpf" {
				assert.Positive(t, ad.LaunchToCgroupNanos, "found at its exec")
			}
		}
	}

	// Metrics against the kernel's counters of koordlet's cgroups.
	cpuCtrl := "cpuacct"
	if v2 {
		cpuCtrl = ""
	}
	var cores float64
	require.Eventually(t, func() bool {
		v, ok := polled(t, b, "koordlet_yarn_container_cpu_usage_cores", map[string]string{"container_id": burner})
		cores = v
		return ok && v > 0
	}, 60*time.Second, 500*time.Millisecond, "the burner's CPU shows on /metrics")
	cores, truth := cpuOverSpan(t, b, burner, 5*time.Second, func() time.Duration { return cpuUsage2(t, b, cpuCtrl, own(burner)) })
	say(t, "burner: koordlet %.3f cores, kernel %.3f cores", cores, truth)
	assert.InDelta(t, truth, cores, 0.25*truth+0.05, "koordlet's CPU matches the kernel's")
	memoryShown(t, b, alloc, 120<<20, 60*time.Second, "the allocator's 128 MiB show on /metrics, measured in its own memory cgroup")

	// The kubelet's writes to the NM pod's cgroups keep working (the box's
	// kubelet writes them every round; a refusal fails the test).
	_, rounds := b.KubeletErrors()
	require.Eventually(t, func() bool { _, r := b.KubeletErrors(); return r > rounds }, 30*time.Second, 200*time.Millisecond, "a kubelet round after the moves")

	// A container launched while koordlet is down stays in the NM pod and
	// is adopted by the scan after the restart.
	b.StopKoordlet()
	late, err := b.NM.Launch(nmemu.Spec{AppID: 7, Attempt: 1, Sequence: 4, User: "spark", MemoryMB: 512, VCores: 1, Script: "exec sleep 3600"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return b.NM.Pid(late) > 0 }, 10*time.Second, 50*time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	assert.Equal(t, b.PodCgroup("nodemanager"), procCgroup(b.NM.Pid(late), ctrls[0]), "without koordlet the container stays in the NM pod")
	require.NoError(t, b.StartKoordlet())
	require.Eventually(t, func() bool {
		resp, err := b.Containers()
		return err == nil && find(resp, late) != nil && find(resp, late).Cgroups[cgroups.CPU].Owned && find(resp, am) != nil && find(resp, am).IsAM &&
			procCgroup(b.NM.Pid(late), ctrls[0]) == own(late)
	}, 60*time.Second, 200*time.Millisecond, "after the restart the late container is adopted (its main process in its cgroup) and the others found again")

	// A finished container's cgroup goes.
	b.NM.Exit(late)
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(b.CgroupRoot(), ctrls[0], own(late)))
		return os.IsNotExist(err)
	}, 30*time.Second, 200*time.Millisecond, "the cgroup koordlet made for the finished container is removed")

	// Gate off: the containers run on where they are; a new one stays in
	// the NM pod.
	b.StopKoordlet()
	b.SetKoordletArgs([]string{"--yarn-resync-interval=2s"})
	require.NoError(t, b.StartKoordlet())
	off, err := b.NM.Launch(nmemu.Spec{AppID: 7, Attempt: 1, Sequence: 5, User: "spark", MemoryMB: 512, VCores: 1, Script: "exec sleep 3600"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { r, err := b.Containers(); return err == nil && find(r, off) != nil }, 30*time.Second, 200*time.Millisecond)
	time.Sleep(3 * time.Second)
	assert.Equal(t, b.PodCgroup("nodemanager"), procCgroup(b.NM.Pid(off), ctrls[0]), "with the gate off a new container stays in the NM pod")
	for _, id := range []string{am, burner, alloc} {
		c, _ := b.NM.Get(id)
		assert.Equal(t, "RUNNING", c.State, "%s runs on", id)
		assert.Equal(t, own(id), procCgroup(b.NM.Pid(id), ctrls[0]), "%s stays in its cgroup", id)
	}
}

func mustContainers(t *testing.T, b *nodebox.Box) koordletyarn.ContainersResponse {
	t.Helper()
	resp, err := b.Containers()
	require.NoError(t, err)
	return resp
}

// cpuUsage2 reads a cgroup's CPU time: cpuacct.usage on v1 (ctrl
// "cpuacct"), cpu.stat usage_usec on v2 (ctrl "").
func cpuUsage2(t *testing.T, b *nodebox.Box, ctrl, rel string) time.Duration {
	if ctrl == "" {
		return cpuUsage(t, b.CgroupRoot(), rel)
	}
	v, err := strconv.ParseInt(readFile(filepath.Join(b.CgroupRoot(), ctrl, rel, "cpuacct.usage")), 10, 64)
	require.NoError(t, err)
	return time.Duration(v)
}
