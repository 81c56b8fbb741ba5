package yarnmemcg

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

func TestMain(m *testing.M) {
	kerneltest.RunHelperIfRequested()
	if err := features.Register(); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// node is a YARN node on the real kernel: a CPU-only YARN hierarchy
// (cpu/<top>/hadoop-yarn) whose containers' memory is charged to a fake
// NodeManager pod memory cgroup (memory/<top>/nmpod).
type node struct {
	t     *testing.T
	top   string
	h     cgroups.Hierarchy
	nmMem string // absolute
	st    *store.Store
}

func newNode(t *testing.T) *node {
	kerneltest.RequireCgroupV1(t, "cpu", "memory")
	kerneltest.UseHostRoots(t)
	top := kerneltest.UniqueRoot(t)
	n := &node{t: t, top: top, st: store.New()}
	n.nmMem = kerneltest.MakeCgroup(t, "memory", top+"/nmpod")
	kerneltest.MakeCgroup(t, "cpu", top+"/hadoop-yarn")
	// Runs before MakeCgroup's cleanups: the memory hierarchy dir the
	// applier made (and anything left in it) goes first.
	t.Cleanup(func() {
		kerneltest.RemoveCgroupTree(t, filepath.Join(kerneltest.CgroupRoot, "memory", top, "hadoop-yarn"))
	})
	n.h = cgroups.Hierarchy{CgroupRoot: kerneltest.CgroupRoot, ProcRoot: "/proc", Dir: top + "/hadoop-yarn",
		NS: cgroups.NewNamespace("/proc", kerneltest.CgroupRoot, false)}
	return n
}

func (n *node) applier(opts Options) *Applier {
	opts.Store = n.st
	opts.Hierarchy = func() (cgroups.Hierarchy, bool) { return n.h, true }
	if opts.Interval == 0 {
		opts.Interval = time.Hour
	}
	return New(opts)
}

// container makes the container's cpu cgroup and starts script in it
// (memory: the NM pod's cgroup), held at the gate.
func (n *node) container(name, script string) (*kerneltest.Process, string) {
	rel := n.h.ContainerRelDir(name)
	cpu := kerneltest.MakeCgroup(n.t, "cpu", rel)
	return kerneltest.Start(n.t, script, n.nmMem, cpu), rel
}

// observe tells the store what a scan sees now.
func (n *node) observe() {
	res, err := cgroups.NewScanner(n.h).Scan()
	require.NoError(n.t, err)
	n.st.Resync(store.Observation{ScanOK: true, Scan: res.Containers}, time.Now())
}

func (n *node) get(name string) *store.Container {
	c, ok := n.st.Get(name)
	require.True(n.t, ok, name)
	return c
}

func readInt(t *testing.T, path string) int64 {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	require.NoError(t, err)
	return v
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

const mib = 1 << 20

// TestRealKernelCPUOnlyContainer: a CPU-only YARN container with real
// forking processes gets memory/<hierarchy>/<id> (marked), every process
// moves into it, its memory is charged there, the scan then finds it as the
// container's own memory cgroup ("cgroup" accounting), and the leaf is
// removed once the cpu cgroup is gone — after a busy retry, nothing killed.
func TestRealKernelCPUOnlyContainer(t *testing.T) {
	n := newNode(t)
	a := n.applier(Options{MaxResidentWithoutChargeMove: -1}) // adopted after they allocate: the charge test below
	nameA := "container_e17_1700000000000_0042_01_000002"
	nameB := "container_e17_1700000000000_0042_01_000003"

	// A allocated 64 MiB before koordlet sees it; B allocates after.
	pa, relA := n.container(nameA, "sleep 3600 & sleep 3600 & "+kerneltest.HelperScript("alloc=64"))
	require.NoError(t, pa.Release())
	cpuA := filepath.Join(kerneltest.CgroupRoot, "cpu", relA)
	waitFor(t, "A's three processes and its allocation", func() bool {
		rss, _ := kerneltest.RssAnon(pa.Pid())
		return len(kerneltest.Pids(cpuA)) == 3 && rss >= 60*mib
	})
	pb, relB := n.container(nameB, kerneltest.HelperScript("alloc=64"))
	n.observe()
	assert.Equal(t, cgroups.MemoryByProcesses, n.get(nameA).Cgroups.MemoryAccounting())

	assert.Equal(t, 3, a.Apply(n.get(nameA)))
	assert.Equal(t, 1, a.Apply(n.get(nameB)))
	memA := n.h.AbsDir(cgroups.Memory, relA)
	memB := n.h.AbsDir(cgroups.Memory, relB)
	for _, dir := range []string{memA, memB, n.h.RootDir(cgroups.Memory)} {
		m, err := marked(dir)
		require.NoError(t, err)
		assert.True(t, m, "%s carries the marker", dir)
	}
	for _, pid := range kerneltest.Pids(cpuA) {
		assert.True(t, n.h.Contains(pid, cgroups.Memory, relA), "pid %d in A's memory cgroup", pid)
	}
	assert.ElementsMatch(t, kerneltest.Pids(cpuA), kerneltest.Pids(memA))
	assert.Equal(t, 4.0, testutil.ToFloat64(a.moves.WithLabelValues(ResultMoved)))
	assert.Equal(t, 0, a.Apply(n.get(nameA)), "nothing left to move")

	// Charge: where the kernel moves charges, A's 64 MiB came along; B's
	// allocation happens after its move, on every kernel.
	if a.chargeMove > 0 {
		assert.Greater(t, readInt(t, filepath.Join(memA, "memory.usage_in_bytes")), int64(64*mib))
	} else {
		t.Logf("this kernel does not move charges: A's memory (%d MiB) stays charged to the NM pod's cgroup", readInt(t, filepath.Join(memA, "memory.usage_in_bytes"))/mib)
	}
	require.NoError(t, pb.Release())
	waitFor(t, "B's allocation charged to its memory cgroup", func() bool {
		return readInt(t, filepath.Join(memB, "memory.usage_in_bytes")) > 64*mib
	})

	// The scan finds the container's own memory cgroup.
	n.observe()
	for _, name := range []string{nameA, nameB} {
		c := n.get(name)
		assert.Equal(t, cgroups.Ref{Dir: n.h.ContainerRelDir(name), Owned: true}, c.Cgroups[cgroups.Memory])
		assert.Equal(t, cgroups.MemoryByCgroup, c.Cgroups.MemoryAccounting())
	}

	// A ends: YARN removes its cpu cgroup; the leaf goes.
	_ = syscall.Kill(-pa.Pid(), syscall.SIGKILL)
	_ = pa.Cmd.Wait()
	waitFor(t, "A's processes gone", func() bool { return len(kerneltest.Pids(cpuA)) == 0 })
	require.NoError(t, unix.Rmdir(cpuA))
	a.ReconcileAll()
	assert.NoDirExists(t, memA)

	// B's cpu cgroup goes while its process lives on elsewhere: its leaf
	// is busy, kept and retried, the process untouched.
	cpuB := filepath.Join(kerneltest.CgroupRoot, "cpu", relB)
	require.NoError(t, os.WriteFile(filepath.Join(kerneltest.CgroupRoot, "cpu", n.top, "cgroup.procs"), []byte(strconv.Itoa(pb.Pid())), 0))
	require.NoError(t, unix.Rmdir(cpuB))
	a.ReconcileAll()
	assert.DirExists(t, memB)
	assert.Equal(t, []string{nameB}, a.Pending())
	assert.NoError(t, unix.Kill(pb.Pid(), 0), "the process lives")
	_ = pb.Cmd.Process.Kill()
	_ = pb.Cmd.Wait()
	waitFor(t, "B's leaf removed", func() bool { a.ReconcileAll(); _, err := os.Stat(memB); return os.IsNotExist(err) })
	assert.Empty(t, a.Pending())
	assert.DirExists(t, n.h.RootDir(cgroups.Memory), "the hierarchy dir stays")
}

// TestRealKernelYARNMemoryCgroupUntouched: a memory cgroup YARN made (no
// marker) is never written, moved into or removed, and while one exists
// koordlet makes no memory cgroup for other containers either.
func TestRealKernelYARNMemoryCgroupUntouched(t *testing.T) {
	n := newNode(t)
	a := n.applier(Options{MaxResidentWithoutChargeMove: -1})
	name := "container_1700000000000_0007_01_000002"
	other := "container_1700000000000_0007_01_000003"
	p, rel := n.container(name, "exec sleep 3600")
	require.NoError(t, p.Release())
	yarnMem := kerneltest.MakeCgroup(t, "memory", rel) // YARN's, empty
	po, relO := n.container(other, "exec sleep 3600")
	require.NoError(t, po.Release())
	n.observe()

	assert.Equal(t, 0, a.Apply(n.get(name)))
	assert.Equal(t, 0, a.Apply(n.get(other)))
	a.ReconcileAll()
	assert.Empty(t, kerneltest.Pids(yarnMem), "nothing moved into YARN's cgroup")
	assert.Equal(t, int64(0), readInt(t, filepath.Join(yarnMem, "memory.move_charge_at_immigrate")))
	m, err := marked(yarnMem)
	require.NoError(t, err)
	assert.False(t, m)
	assert.NoDirExists(t, n.h.AbsDir(cgroups.Memory, relO), "YARN manages memory here: koordlet makes none")
	assert.True(t, n.h.Contains(p.Pid(), cgroups.Memory, n.top+"/nmpod"))

	// Its cpu cgroup goes: YARN's memory cgroup is not koordlet's to remove.
	_ = p.Cmd.Process.Kill()
	_ = p.Cmd.Wait()
	require.NoError(t, unix.Rmdir(filepath.Join(kerneltest.CgroupRoot, "cpu", rel)))
	a.ReconcileAll()
	assert.DirExists(t, yarnMem)
}

// TestRealKernelForeignPidNotMoved: a number listed for the container (a
// stale list, a reused pid) that names a process outside the container's
// cpu cgroup is not moved; a gone one neither.
func TestRealKernelForeignPidNotMoved(t *testing.T) {
	n := newNode(t)
	a := n.applier(Options{})
	name := "container_1700000000000_0007_01_000004"
	p, rel := n.container(name, "exec sleep 3600")
	require.NoError(t, p.Release())
	n.observe()
	require.Equal(t, 1, a.Apply(n.get(name)))

	foreign := kerneltest.Start(t, "exec sleep 3600", n.nmMem) // elsewhere
	require.NoError(t, foreign.Release())
	assert.Equal(t, ResultNotOwn, a.move(n.h, name, rel, foreign.Pid()))
	assert.True(t, n.h.Contains(foreign.Pid(), cgroups.Memory, n.top+"/nmpod"), "the foreign process stays")

	gone := kerneltest.StartPlain(t, "exit 0")
	waitFor(t, "the process to exit", func() bool { _, err := os.Stat("/proc/" + strconv.Itoa(gone)); return err != nil || isZombie(gone) })
	assert.Contains(t, []string{ResultGone, ResultNotOwn}, a.move(n.h, name, rel, gone))
	assert.GreaterOrEqual(t, testutil.ToFloat64(a.moves.WithLabelValues(ResultNotOwn)), 1.0)
}

func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// TestRealKernelAttachFollows: processes YARN attaches to the container
// after its memory cgroup exists follow at the attach event (the store's
// Observe, as the watcher calls it), through the running loop.
func TestRealKernelAttachFollows(t *testing.T) {
	n := newNode(t)
	moved := make(chan string, 16)
	a := n.applier(Options{OnMoved: func(c *store.Container, _ time.Time) { moved <- c.Name }})
	stop := make(chan struct{})
	defer close(stop)
	a.Run(stop)

	name := "container_1700000000000_0007_01_000005"
	id, _ := yarn.ParseContainerID(name)
	p, rel := n.container(name, "exec sleep 3600")
	n.st.Observe(store.CgroupEvent{Type: store.CgroupAttached, Name: name, ID: id, Controller: cgroups.CPU, Dir: rel, Pid: p.Pid()}, time.Now())
	waitChan(t, moved, name)
	late := kerneltest.Start(t, "exec sleep 3600", n.nmMem, filepath.Join(kerneltest.CgroupRoot, "cpu", rel))
	n.st.Observe(store.CgroupEvent{Type: store.CgroupAttached, Name: name, ID: id, Controller: cgroups.CPU, Dir: rel, Pid: late.Pid()}, time.Now())
	waitChan(t, moved, name)
	assert.True(t, n.h.Contains(late.Pid(), cgroups.Memory, rel))
}

func waitChan(t *testing.T, ch <-chan string, want string) {
	t.Helper()
	select {
	case got := <-ch:
		assert.Equal(t, want, got)
	case <-time.After(5 * time.Second):
		t.Fatalf("no move of %s within 5 s", want)
	}
}

// TestRealKernelOldContainerWithoutChargeMove: on a kernel that no longer
// moves charges, a container whose processes already hold more than the
// limit keeps its per-process accounting (its memory would stay with the
// NM pod's cgroup), while one that holds little is adopted whatever its
// age; where the kernel moves charges both are adopted.
func TestRealKernelOldContainerWithoutChargeMove(t *testing.T) {
	n := newNode(t)
	a := n.applier(Options{MaxResidentWithoutChargeMove: 32 << 20})
	big := "container_1700000000000_0007_01_000006"
	small := "container_1700000000000_0007_01_000007"
	pb, relBig := n.container(big, kerneltest.HelperScript("alloc=96"))
	require.NoError(t, pb.Release())
	ps, relSmall := n.container(small, "exec sleep 3600")
	require.NoError(t, ps.Release())
	waitFor(t, "the allocator holds its memory", func() bool {
		m, err := cgroups.NewProcessMemoryReader(n.h).NoKeep().Read(cgroups.CPU, relBig)
		return err == nil && m.Usage() > 96<<20
	})
	n.observe()
	// The first leaf tells whether charges move.
	movedSmall := a.Apply(n.get(small))
	assert.Equal(t, 1, movedSmall, "a container that holds little is adopted, whatever its age")
	assert.DirExists(t, n.h.AbsDir(cgroups.Memory, relSmall))
	moved := a.Apply(n.get(big))
	if a.chargeMove > 0 {
		assert.Equal(t, 1, moved)
		return
	}
	assert.Equal(t, 0, moved)
	assert.NoDirExists(t, n.h.AbsDir(cgroups.Memory, relBig))
	assert.Equal(t, 0, a.Apply(n.get(big)), "decided once")
	assert.NoDirExists(t, n.h.AbsDir(cgroups.Memory, relBig))
}

// TestRealKernelGateOffRestores: with YARNMemoryCgroup off, a koordlet
// moves the processes of the leaves an earlier one made back to the
// NodeManager pod's memory cgroup they came from and removes the leaves;
// the processes live on, nothing frozen or killed. The code before left
// the leaves and their processes as they were.
func TestRealKernelGateOffRestores(t *testing.T) {
	n := newNode(t)
	name := "container_e17_1700000000000_0042_01_000004"
	p, rel := n.container(name, "sleep 3600 & exec sleep 3600")
	require.NoError(t, p.Release())
	cpu := filepath.Join(kerneltest.CgroupRoot, "cpu", rel)
	waitFor(t, "two processes", func() bool { return len(kerneltest.Pids(cpu)) == 2 })
	n.observe()
	a := n.applier(Options{MaxResidentWithoutChargeMove: -1})
	require.Equal(t, 2, a.Apply(n.get(name)))
	leaf := n.h.AbsDir(cgroups.Memory, rel)
	require.ElementsMatch(t, kerneltest.Pids(cpu), kerneltest.Pids(leaf))

	require.False(t, features.Enabled(features.YARNMemoryCgroup), "the gate's default: off")
	off := n.applier(Options{})
	assert.Equal(t, 2, off.RestoreDisabled())
	assert.NoDirExists(t, leaf)
	assert.ElementsMatch(t, kerneltest.Pids(cpu), kerneltest.Pids(n.nmMem), "back in the NodeManager pod's memory cgroup")
	for _, pid := range kerneltest.Pids(cpu) {
		assert.NoError(t, unix.Kill(pid, 0), "pid %d lives", pid)
	}
	assert.Equal(t, 0, off.RestoreDisabled(), "nothing left")
}

func TestValidOrigin(t *testing.T) {
	for _, tc := range []struct {
		from string
		ok   bool
	}{
		{"kubepods/besteffort/pod1/nm", true},
		{"/kubepods/besteffort/pod1/nm", true},
		{"hadoop-yarn/container_1", false},
		{"hadoop-yarn", false},
		{"kubepods/../hadoop-yarn/x", false},
	} {
		assert.Equal(t, tc.ok, cgroups.ValidOrigin(tc.from, "/hadoop-yarn"), tc.from)
	}
}
