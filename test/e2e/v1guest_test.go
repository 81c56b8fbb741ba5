package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/procfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"

	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
	"github.com/koordlet-yarn/koordlet-yarn/test/v2guest"
	"github.com/koordlet-yarn/koordlet-yarn/test/v2guest/guestconf"
)

// v1Guest is TestV1Guest's node: cgroup v1, small enough that the test can
// fill its memory in seconds under TCG, with a scratch disk for page cache
// the kernel can reclaim (the guest's own files are tmpfs).
var v1Guest = v2guest.Guest{CgroupV1: true, MemoryMiB: 3072, ScratchMiB: 4096}

// TestV1Guest runs the scenarios that need a cgroup v1 node of their own:
// make test-v2 runs it in the guest booted with cgroup v1
// (KOORDLET_YARN_E2E_GUEST=v1); never on this shared host, whose memory
// it would press on.
func TestV1Guest(t *testing.T) {
	scratch := os.Getenv(guestconf.ScratchEnv)
	if !v2guest.InGuest() || nodebox.PureV2() || scratch == "" {
		kerneltest.Skip(t, "TestV1Guest presses on the whole node's memory: make test-v2 runs it in a guest booted with cgroup v1 and a scratch disk (KOORDLET_YARN_E2E_GUEST=v1)")
	}
	t.Run("memory relief soft limit, global reclaim", func(t *testing.T) { v1GlobalReclaim(t, scratch) })
}

// Sizes of the global reclaim scenario's files (MiB): LS's data, read
// once, and batch's, read twice (shuffle data a job reads again: on the
// kernel's active list, where LRU order alone keeps it over LS's).
const (
	reclaimLSMiB   = 256
	reclaimYARNMiB = 768
)

// reclaimRate is the pressure's growth (MiB/s): a service's memory growing
// over seconds, which the kernel's background reclaim (kswapd, whose every
// round starts with the soft limits) follows.
const reclaimRate = 96

// v1GlobalReclaim: memory relief's cgroup v1 rung. With YARNMemoryRelief
// koordlet gives the YARN hierarchy memory soft limit 0 once the
// NodeManager has made it, so that the kernel's global reclaim prefers
// batch's page cache. The same scenario runs with the gate on and then off
// (the control: the root's own soft limit back): LS reads its file once, a
// YARN container reads its own twice, then an allocator outside both grows
// by the free memory and 60% of batch's cache. With the gate reclaim takes
// a larger share from batch and LS keeps more of its cache than without;
// nothing is killed.
func v1GlobalReclaim(t *testing.T, scratch string) {
	lsFile, yarnFile := filepath.Join(scratch, "ls.data"), filepath.Join(scratch, "yarn.data")
	writeData(t, lsFile, reclaimLSMiB)
	writeData(t, yarnFile, reclaimYARNMiB)
	defer os.Remove(lsFile)
	defer os.Remove(yarnFile)

	b := startBox(t, nodebox.Options{KoordletArgs: []string{reliefGates}})
	ctx := context.Background()
	// The strategy (and relief with it) runs with a threshold set: one far
	// above what the scenario uses, so that nothing is killed.
	require.NoError(t, b.UpdateNodeSLO(ctx, func(s *slov1alpha1.NodeSLOSpec) {
		s.ResourceUsedThresholdWithBE = &slov1alpha1.ResourceThresholdStrategy{Enable: ptr.To(true),
			MemoryEvictThresholdPercent: ptr.To(int64(97)), MemoryEvictLowerPercent: ptr.To(int64(95))}
	}))
	// The NodeManager makes its hierarchy at its start (Hadoop's
	// CGroupsHandlerImpl); koordlet, running before, sets the soft limit
	// at its first check after.
	require.NoError(t, b.MakeYARNHierarchy())
	yarnRoot := filepath.Join(b.CgroupRoot(), "memory", b.Hierarchy())
	lsCgroup := filepath.Join(b.CgroupRoot(), "memory", b.PodCgroup("web"))
	soft := filepath.Join(yarnRoot, "memory.soft_limit_in_bytes")
	require.Eventually(t, func() bool { return readFile(soft) == "0" }, 30*time.Second, 200*time.Millisecond,
		"memory relief on v1: koordlet gives the YARN root soft limit 0")

	arm := func(name string, seq int64) (lsKept, batchShare float64) {
		dropCaches(t)
		readIn(t, b, lsFile, "web")
		done := filepath.Join(scratch, fmt.Sprintf("read-%d", seq))
		id, err := b.NM.Launch(nmemu.Spec{AppID: 7, Attempt: 1, Sequence: seq, User: "spark", MemoryMB: 2048, VCores: 1,
			Script: fmt.Sprintf("cat %s > /dev/null && cat %s > /dev/null && touch %s && exec sleep 3600", yarnFile, yarnFile, done)})
		require.NoError(t, err)
		defer os.Remove(done)
		require.Eventually(t, func() bool { _, err := os.Stat(done); return err == nil }, 3*time.Minute, 250*time.Millisecond,
			"the YARN container read its data twice")
		lsBefore, yarnBefore := totalCache(t, lsCgroup), totalCache(t, yarnRoot)
		require.Greater(t, lsBefore, int64(reclaimLSMiB)<<20*9/10, "LS's data is in its page cache")
		require.Greater(t, yarnBefore, int64(reclaimYARNMiB)<<20*9/10, "batch's data is in its page cache")
		free := memFree(t)
		need := (free + yarnBefore*6/10) >> 20
		stop := allocate(t, need, reclaimRate)
		lsAfter, yarnAfter := totalCache(t, lsCgroup), totalCache(t, yarnRoot)
		stop()
		lsKept = float64(lsAfter) / float64(lsBefore)
		if took := lsBefore - lsAfter + yarnBefore - yarnAfter; took > 0 {
			batchShare = float64(yarnBefore-yarnAfter) / float64(took)
		}
		say(t, "%s: the soft limit %s; %d MiB allocated outside at %d MiB/s (MemFree was %d MiB): LS's page cache %d → %d MiB (%.0f%% kept), batch's %d → %d MiB; batch's share of what reclaim took %.0f%%",
			name, readFile(soft), need, reclaimRate, free>>20, lsBefore>>20, lsAfter>>20, lsKept*100, yarnBefore>>20, yarnAfter>>20, batchShare*100)
		c, _ := b.NM.Get(id)
		assert.Equal(t, "RUNNING", c.State, "%s: the YARN container lives (reclaim, not a kill)", name)
		return lsKept, batchShare
	}
	onLS, onShare := arm("gate on", 2)

	b.StopKoordlet()
	b.SetKoordletArgs([]string{pressureGates})
	require.NoError(t, b.StartKoordlet())
	require.Eventually(t, func() bool { return readFile(soft) != "0" }, 30*time.Second, 200*time.Millisecond,
		"with the gate off the root's own soft limit is back")
	offLS, offShare := arm("gate off (control)", 3)

	// The soft limit shifts global reclaim toward batch; it does not make
	// it take batch's cache first (2026-11-29, four runs: LS kept 29–30%
	// of its cache with it, 20–21% without; batch's share of what reclaim
	// took 60% with it, 47–49% without).
	assert.Greater(t, onShare, offShare, "with the soft limit global reclaim takes a larger share from batch's page cache")
	assert.Greater(t, onLS, offLS, "LS keeps more of its page cache with the soft limit")
	ev, err := b.Evictions()
	require.NoError(t, err)
	assert.Empty(t, ev.Records, "reclaim relieved the pressure: nothing killed")
}

// writeData writes mib MiB (not zeros) to path and syncs it.
func writeData(t *testing.T, path string, mib int) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	chunk := bytes.Repeat([]byte{0xa5, 0x5a, 0x3c, 0xc3}, 1<<18)
	for i := 0; i < mib; i++ {
		_, err = f.Write(chunk)
		require.NoError(t, err)
	}
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
}

// dropCaches drops the guest's clean page cache (its own kernel: the
// guest is this test's node).
func dropCaches(t *testing.T) {
	t.Helper()
	require.True(t, v2guest.InGuest(), "drop_caches only in the guest")
	unix.Sync()
	require.NoError(t, os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0o644))
}

// readIn reads path once from a process in the box's pod's cgroups.
func readIn(t *testing.T, b *nodebox.Box, path, pod string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", "read gate; exec cat \"$0\" > /dev/null", path)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	for _, c := range b.Controllers() {
		require.NoError(t, os.WriteFile(filepath.Join(b.CgroupRoot(), c, b.PodCgroup(pod), "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644))
	}
	_, _ = stdin.Write([]byte("go\n"))
	require.NoError(t, cmd.Wait())
}

// totalCache is a v1 memory cgroup's page cache, its subtree's included.
func totalCache(t *testing.T, dir string) int64 {
	t.Helper()
	v := memoryStat(dir, "total_cache")
	require.GreaterOrEqual(t, v, int64(0), "total_cache in %s/memory.stat", dir)
	return v
}

// memFree is the node's free memory in bytes.
func memFree(t *testing.T) int64 {
	t.Helper()
	fs, err := procfs.NewFS("/proc")
	require.NoError(t, err)
	mi, err := fs.Meminfo()
	require.NoError(t, err)
	require.NotNil(t, mi.MemFree)
	return int64(*mi.MemFree) << 10
}

// allocate starts an allocator growing to mib MiB at rate MiB/s (this
// test's child, in its cgroup) and returns once it holds them; the
// returned func ends it.
func allocate(t *testing.T, mib, rate int64) (stop func()) {
	t.Helper()
	cmd := exec.Command("sh", "-c", kerneltest.HelperScript(fmt.Sprintf("grow=%d@%d", mib, rate)))
	require.NoError(t, cmd.Start())
	stop = func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	ok := assert.Eventually(t, func() bool {
		p, err := procfs.NewProc(cmd.Process.Pid)
		if err != nil {
			return false
		}
		st, err := p.NewStatus()
		return err == nil && int64(st.VmRSS) >= mib<<20*95/100
	}, 3*time.Minute, 250*time.Millisecond, "the allocator holds its %d MiB", mib)
	if !ok {
		stop()
		t.FailNow()
	}
	return stop
}
