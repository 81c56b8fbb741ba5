package yarnadopt

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/kill"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// node is a test's own piece of the real cgroup tree: a NodeManager pod
// cgroup and a YARN hierarchy below one unique root, in cpu, cpuacct and
// memory (cgroup v1) or on the unified hierarchy (a v2 host).
type node struct {
	h      cgroups.Hierarchy
	v2     bool
	pod    string   // relative
	podAbs []string // per hierarchy the pod's process cgroup
	st     *store.Store
	nm     *fakeNM
	mu     sync.Mutex
	procs  map[string]int // launchNamed's
}

// fakeNM is the NodeManager's list for the adopter.
type fakeNM struct {
	mu    sync.Mutex
	ids   map[string]bool
	calls int
}

func (f *fakeNM) add(id string) { f.mu.Lock(); f.ids[id] = true; f.mu.Unlock() }

func (f *fakeNM) list(context.Context) ([]yarn.NMContainer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	var out []yarn.NMContainer
	for id := range f.ids {
		cid, err := yarn.ParseContainerID(id)
		if err == nil {
			out = append(out, yarn.NMContainer{ID: cid, State: yarn.StateRunning})
		}
	}
	return out, nil
}

func newNode(t *testing.T) *node {
	t.Helper()
	v2 := false
	if _, err := os.Stat(filepath.Join(kerneltest.CgroupRoot, "cgroup.controllers")); err == nil {
		v2 = true
		if os.Geteuid() != 0 {
			kerneltest.Skip(t, "real-kernel test: needs root to create cgroups")
		}
	} else {
		kerneltest.RequireCgroupV1(t, "cpu", "cpuacct", "memory")
	}
	top := kerneltest.UniqueRoot(t)
	n := &node{v2: v2, pod: top + "/pod-nm", st: store.New(), nm: &fakeNM{ids: map[string]bool{}}}
	n.h = cgroups.Hierarchy{CgroupRoot: kerneltest.CgroupRoot, ProcRoot: "/proc", V2: v2, Dir: top + "/hadoop-yarn"}
	ctrls := []string{"memory", "cpu", "cpuacct"}
	if v2 {
		ctrls = []string{""}
	}
	for _, c := range ctrls {
		// The pod's processes live in a container cgroup below it, as
		// with a container runtime.
		n.podAbs = append(n.podAbs, kerneltest.MakeCgroup(t, c, n.pod+"/nm"))
		// The YARN hierarchy's parent exists (the besteffort QoS cgroup);
		// the hierarchy itself is koordlet's to make.
		kerneltest.MakeCgroup(t, c, top)
		t.Cleanup(func() { kerneltest.RemoveCgroupTree(t, filepath.Join(kerneltest.CgroupRoot, c, top, "hadoop-yarn")) })
	}
	if v2 {
		enableSubtree(t, filepath.Join(kerneltest.CgroupRoot, top))
	}
	return n
}

// enableSubtree enables every controller dir has for its children.
func enableSubtree(t *testing.T, dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	require.NoError(t, err)
	for _, c := range strings.Fields(string(b)) {
		_ = os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+"+c), 0)
	}
}

func (n *node) adopter(t *testing.T, withNM bool) *Adopter {
	opts := Options{Store: n.st, ScanInterval: time.Second,
		Hierarchy:   func() (cgroups.Hierarchy, bool) { return n.h, true },
		NMPodCgroup: func() (string, string, bool) { return n.pod, "test/nodemanager", true }}
	if withNM {
		opts.ListNM = n.nm.list
	}
	return New(opts)
}

// running starts an adopter with the NM's list and waits until it watches
// the NM pod; it stops when the test ends.
func (n *node) running(t *testing.T) *Adopter {
	a := n.adopter(t, true)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	a.Run(stop)
	require.Eventually(t, func() bool { s := a.Status(); return s.Detection != "" && s.NodeManager != "" }, 10*time.Second, 10*time.Millisecond)
	return a
}

// launch starts a container's process the DefaultContainerExecutor's way:
// forked outside, moved into the NM pod's cgroups, then its wrapper execs
// the launch script there with CONTAINER_ID in its environment.
func (n *node) launch(t *testing.T, id, script string) *kerneltest.Process {
	p := kerneltest.Start(t, "exec env CONTAINER_ID="+id+" sh -c '"+script+"'", n.podAbs...)
	require.NoError(t, p.Release())
	return p
}

func containerName(seq int) string {
	return yarn.ContainerID{Epoch: 17, ClusterTimestamp: 1700000000000, AppID: 7, AttemptID: 1, Sequence: int64(seq)}.String()
}

// TestRealKernelAdopt: on the real kernel, containers launched into the NM
// pod's cgroup are moved, at their exec, into marked cgroups below the
// YARN hierarchy; a process naming no listed container and the NM itself
// stay; the finished container's cgroup is removed.
func TestRealKernelAdopt(t *testing.T) {
	n := newNode(t)
	a := n.running(t)

	nmProc := kerneltest.Start(t, "exec sleep 3600", n.podAbs...) // the NodeManager
	require.NoError(t, nmProc.Release())
	c2, c3 := containerName(2), containerName(3)
	n.nm.add(c2)
	p2 := n.launch(t, c2, "sleep 3600 & exec sleep 3600")
	stranger := n.launch(t, containerName(9), "exec sleep 3600") // the NM does not list it
	require.Eventually(t, func() bool {
		_, ok := a.Status().Containers[c2]
		return ok && len(kerneltest.Pids(n.podAbs[0])) == 2
	}, 10*time.Second, 10*time.Millisecond, "the container's processes moved, the NM and the stranger left: %+v, pod %v", a.Status(), kerneltest.Pids(n.podAbs[0]))
	for _, ctrl := range leafControllers(n.h) {
		require.True(t, n.h.Contains(p2.Pid(), ctrl, n.h.ContainerRelDir(c2)), "in its own %s cgroup", ctrl)
		require.False(t, n.h.Contains(nmProc.Pid(), ctrl, n.h.ContainerRelDir(c2)))
		require.False(t, n.h.Contains(stranger.Pid(), ctrl, n.h.ContainerRelDir(containerName(9))))
	}
	m, err := marked(n.h.AbsDir(cgroups.CPU, n.h.ContainerRelDir(c2)))
	require.NoError(t, err)
	require.True(t, m, "koordlet's marker")
	if n.v2 {
		on, _ := os.ReadFile(filepath.Join(n.h.RootDir(cgroups.CPU), "cgroup.subtree_control"))
		for _, c := range []string{"cpu", "memory", "pids"} {
			require.Contains(t, string(on), c, "the YARN hierarchy enables %s for its containers", c)
		}
	}
	// Scan path: a container launched while the exec watch misses it
	// (here: before the NM lists it) is moved by the scan once listed.
	p3 := n.launch(t, c3, "exec sleep 3600")
	time.Sleep(50 * time.Millisecond)
	n.nm.add(c3)
	require.Eventually(t, func() bool { return n.h.Contains(p3.Pid(), cgroups.CPU, n.h.ContainerRelDir(c3)) }, 10*time.Second, 20*time.Millisecond)

	// Finished: the cgroup goes once empty and the NM no longer lists it.
	killGroup(p3)
	n.nm.mu.Lock()
	delete(n.nm.ids, c3)
	n.nm.mu.Unlock()
	require.Eventually(t, func() bool {
		_, err := os.Stat(n.h.AbsDir(cgroups.CPU, n.h.ContainerRelDir(c3)))
		return os.IsNotExist(err)
	}, 10*time.Second, 50*time.Millisecond, "the finished container's cgroup is removed")
}

// measureEnv asks for TestMeasureLaunchToCgroup's figures: the number of
// containers (make measure-adopt sets it).
const measureEnv = "KOORDLET_YARN_MEASURE_ADOPT"

// TestMeasureLaunchToCgroup measures on the real kernel, with the running
// adopter and its exec watch: a container's first exec in the NM pod's
// cgroup → that process in its own cgroup, and the memory left charged to
// the NM pod, for a launcher like YARN's (bash running the launch script,
// which execs the workload). The NM lists each container before its
// launch, as the real one does (the NM knows a container from
// startContainers on); "store" has it in koordlet's store already, "nm"
// asks the NM at the exec.
func TestMeasureLaunchToCgroup(t *testing.T) {
	count, _ := strconv.Atoi(os.Getenv(measureEnv))
	if count <= 0 {
		count = 5
	}
	for _, mode := range []string{"store", "nm"} {
		t.Run(mode, func(t *testing.T) {
			n := newNode(t)
			a := n.running(t)
			if a.Status().Detection != "ebpf" {
				kerneltest.Skip(t, "no eBPF exec watch on this kernel: the figure is for the exec path")
			}
			var lat []time.Duration
			var charged []int64
			byScan := 0
			for i := 0; i < count; i++ {
				id := containerName(100 + i)
				n.nm.add(id)
				if mode == "store" {
					cid, _ := yarn.ParseContainerID(id)
					n.st.Resync(store.Observation{NM: []yarn.NMContainer{{ID: cid, State: yarn.StateRunning}}, NMOK: true, ScanOK: false}, time.Now())
				}
				p := n.launch(t, id, "x=1; exec sleep 3600")
				var ad Adoption
				if !assert.Eventually(t, func() bool { var ok bool; ad, ok = a.Status().Containers[id]; return ok }, 10*time.Second, time.Millisecond) {
					failAdopter(t, a, fmt.Sprintf("container %d not adopted; pod %v", i, kerneltest.Pids(n.podAbs[0])))
				}
				if ad.LaunchToCgroupNanos > 0 {
					lat = append(lat, time.Duration(ad.LaunchToCgroupNanos))
				} else {
					byScan++
				}
				charged = append(charged, ad.MemoryChargedToNodeManagerBytes)
				killGroup(p)
				time.Sleep(30 * time.Millisecond)
			}
			require.NotEmpty(t, lat)
			// The periodic scan may reach a container first (it runs
			// every second, the exec → move window is about a millisecond).
			require.LessOrEqual(t, byScan, count/10+1, "containers found at their exec")
			sort.Slice(charged, func(i, j int) bool { return charged[i] < charged[j] })
			v := "v1"
			if n.v2 {
				v = "v2"
			}
			fmt.Printf("YARNContainerCgroups, cgroup %s, NM list from %s, %d containers: first exec → in its own cgroup %s (%d moved by the scan first); memory left charged to the NM pod p50 %d KiB, max %d KiB\n",
				v, mode, count, quantiles(lat), byScan, charged[len(charged)/2]>>10, charged[len(charged)-1]>>10)
		})
	}
}

func quantiles(d []time.Duration) string {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	r := func(x time.Duration) time.Duration { return x.Round(time.Microsecond) }
	return fmt.Sprintf("p50 %v, p99 %v, max %v", r(d[len(d)/2]), r(d[len(d)*99/100]), r(d[len(d)-1]))
}

// killGroup kills a process started by kerneltest.Start and its group.
func killGroup(p *kerneltest.Process) {
	_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
	_ = p.Cmd.Process.Kill()
	_ = p.Cmd.Wait()
}

// TestRealKernelRestoreDisabled: with the gate off, an empty cgroup
// koordlet made goes; one with a process stays (the container runs on
// there); a directory without the marker (YARN's) is never removed.
func TestRealKernelRestoreDisabled(t *testing.T) {
	n := newNode(t)
	a := n.adopter(t, false)
	empty, busy, yarns := containerName(2), containerName(3), containerName(4)
	_, err := ensureLeaf(n.h, empty, nil)
	require.NoError(t, err)
	dirs, err := ensureLeaf(n.h, busy, nil)
	require.NoError(t, err)
	p := kerneltest.Start(t, "exec sleep 3600", dirs...)
	require.NoError(t, p.Release())
	for _, c := range leafControllers(n.h) {
		require.NoError(t, os.Mkdir(n.h.AbsDir(c, n.h.ContainerRelDir(yarns)), 0o755))
	}
	require.Equal(t, 1, a.RestoreDisabled())
	_, err = os.Stat(n.h.AbsDir(cgroups.CPU, n.h.ContainerRelDir(empty)))
	require.True(t, os.IsNotExist(err), "the empty cgroup koordlet made is removed")
	require.True(t, n.h.Contains(p.Pid(), cgroups.CPU, n.h.ContainerRelDir(busy)), "the running container stays where it is")
	_, err = os.Stat(n.h.AbsDir(cgroups.CPU, n.h.ContainerRelDir(yarns)))
	require.NoError(t, err, "YARN's directory is not koordlet's to remove")
	// A directory YARN made is never filled either.
	_, err = ensureLeaf(n.h, yarns, nil)
	require.ErrorIs(t, err, errNotOurs)
}

// TestRealKernelNoAdoptionWhereYARNMakesCgroups: once the layout shows
// YARN's own container cgroups, a process in the NM pod's cgroup naming a
// listed container is left alone (koordlet's mkdir could beat the LCE's).
func TestRealKernelNoAdoptionWhereYARNMakesCgroups(t *testing.T) {
	n := newNode(t)
	a := n.adopter(t, true)
	a.layout = LayoutLCE
	id := containerName(2)
	n.nm.add(id)
	p := n.launch(t, id, "exec sleep 3600")
	time.Sleep(200 * time.Millisecond)
	a.Scan()
	require.False(t, n.h.Contains(p.Pid(), cgroups.CPU, n.h.ContainerRelDir(id)))
	_, err := os.Stat(n.h.AbsDir(cgroups.CPU, n.h.ContainerRelDir(id)))
	require.True(t, os.IsNotExist(err), "no cgroup made")
}

// failAdopter fails t with the adopter's status (if it can be had within
// 2 s: a stuck loop holds its lock) and every goroutine's stack.
func failAdopter(t *testing.T, a *Adopter, msg string) {
	t.Helper()
	st := make(chan Status, 1)
	go func() { st <- a.Status() }()
	select {
	case s := <-st:
		msg += fmt.Sprintf("; status %+v", s)
	case <-time.After(2 * time.Second):
		msg += "; the adopter's lock is held (stuck loop)"
	}
	var b strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
	t.Fatalf("%s\ngoroutines:\n%s", msg, b.String())
}

// TestRealKernelClaimByDescent: a process of container c2 that names c3 in
// its environment is c2's (it descends from c2's launch): c3 is neither
// charged nor evicted for it. Before, the environment alone decided and
// the process landed in c3's cgroup.
func TestRealKernelClaimByDescent(t *testing.T) {
	n := newNode(t)
	a := n.running(t)
	c2, c3 := containerName(2), containerName(3)
	n.nm.add(c2)
	n.nm.add(c3)
	p3 := n.launch(t, c3, "exec sleep 3600")
	p2 := n.launch(t, c2, "env CONTAINER_ID="+c3+" sleep 3600 & exec sleep 3600")
	var child int
	require.Eventually(t, func() bool {
		for _, pid := range kerneltest.Pids(n.h.AbsDir(cgroups.CPU, n.h.ContainerRelDir(c2))) {
			if pid != p2.Pid() {
				child = pid
			}
		}
		return child != 0 && n.h.Contains(p3.Pid(), cgroups.CPU, n.h.ContainerRelDir(c3))
	}, 10*time.Second, 10*time.Millisecond, "the child naming c3 moved with c2; status %+v; c2 %v, c3 %v", a.Status(),
		kerneltest.Pids(n.h.AbsDir(cgroups.CPU, n.h.ContainerRelDir(c2))), kerneltest.Pids(n.h.AbsDir(cgroups.CPU, n.h.ContainerRelDir(c3))))
	a.Scan()
	require.Equal(t, []int{p3.Pid()}, kerneltest.Pids(n.h.AbsDir(cgroups.CPU, n.h.ContainerRelDir(c3))), "c3 holds its own process only")
	require.True(t, n.h.Contains(child, cgroups.CPU, n.h.ContainerRelDir(c2)))
}

// TestRealKernelLookAlikeClaimLeftAlone: a process whose CONTAINER_ID is
// a listed container's id with one more leading zero is not that
// container's: it stays in the NM pod while the container's own process
// is moved. Before, the id was normalised to c2 and the process adopted.
func TestRealKernelLookAlikeClaimLeftAlone(t *testing.T) {
	n := newNode(t)
	a := n.running(t)
	c2 := containerName(2)
	n.nm.add(c2)
	i := strings.LastIndexByte(c2, '_') + 1
	lookAlike := c2[:i] + "0" + c2[i:]
	pl := n.launch(t, lookAlike, "exec sleep 3600")
	p2 := n.launch(t, c2, "exec sleep 3600")
	require.Eventually(t, func() bool { return n.h.Contains(p2.Pid(), cgroups.CPU, n.h.ContainerRelDir(c2)) }, 10*time.Second, 10*time.Millisecond,
		"c2's own process moved; status %+v", a.Status())
	a.Scan()
	assert.Equal(t, []int{p2.Pid()}, kerneltest.Pids(n.h.AbsDir(cgroups.CPU, n.h.ContainerRelDir(c2))), "c2 holds its own process only")
	assert.False(t, n.h.Contains(pl.Pid(), cgroups.CPU, n.h.ContainerRelDir(c2)), "the look-alike %s is not c2", lookAlike)
}

// TestRealKernelSlowNMBlocksNothing: the NodeManager's list is asked for
// outside the adopter's loop and lock. The NM here (an HTTP server) blocks
// until Status() has returned and a container the store knows, launched
// meanwhile, has been moved at its exec; before, the adopter asked under
// its lock from its loop, so neither happened until the list timed out
// (2 s) and the server saw its request cancelled.
func TestRealKernelSlowNMBlocksNothing(t *testing.T) {
	n := newNode(t)
	c2 := containerName(2)
	cid, _ := yarn.ParseContainerID(c2)
	n.st.Resync(store.Observation{NM: []yarn.NMContainer{{ID: cid, State: yarn.StateRunning}}, NMOK: true}, time.Now())

	entered := make(chan struct{}, 16)
	statusDone := make(chan struct{})
	var a *Adopter
	var answered atomic.Bool
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) > 1 {
			_, _ = w.Write([]byte("[]")) // only the first list is the test
			return
		}
		entered <- struct{}{}
		for {
			select {
			case <-statusDone:
				if n.h.Contains(n.launched(c2), cgroups.CPU, n.h.ContainerRelDir(c2)) {
					answered.Store(true)
					_, _ = w.Write([]byte("[]"))
					return
				}
			case <-r.Context().Done():
				return
			default:
			}
			select {
			case <-r.Context().Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}))
	t.Cleanup(srv.Close)
	list := func(ctx context.Context) ([]yarn.NMContainer, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
		return nil, nil
	}
	a = New(Options{Store: n.st, ScanInterval: time.Second, ListNM: list,
		Hierarchy:   func() (cgroups.Hierarchy, bool) { return n.h, true },
		NMPodCgroup: func() (string, string, bool) { return n.pod, "test/nodemanager", true }})
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	a.Run(stop)
	require.Eventually(t, func() bool { s := a.Status(); return s.Detection != "" && s.NodeManager != "" }, 10*time.Second, 10*time.Millisecond)

	n.launch(t, containerName(9), "exec sleep 3600") // unknown: the NM is asked
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the NodeManager was never asked")
	}
	go func() { a.Status(); close(statusDone) }()
	n.launchNamed(t, c2, "exec sleep 3600")
	require.Eventually(t, func() bool { return answered.Load() || requests.Load() > 1 }, 10*time.Second, 10*time.Millisecond)
	require.True(t, answered.Load(), "Status() returned and the known container was moved while the NodeManager's first list was in flight")
}

// slowNMAdopter runs an adopter scanning every 100 ms whose NodeManager
// list hangs until the test ends: what an exec names stays unknown until
// the store learns of it.
func slowNMAdopter(t *testing.T, n *node) *Adopter {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	list := func(ctx context.Context) ([]yarn.NMContainer, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, ctx.Err()
	}
	a := New(Options{Store: n.st, ScanInterval: 100 * time.Millisecond, ListNM: list,
		Hierarchy:   func() (cgroups.Hierarchy, bool) { return n.h, true },
		NMPodCgroup: func() (string, string, bool) { return n.pod, "test/nodemanager", true }})
	a.nm.timeout = time.Minute
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	a.Run(stop)
	require.Eventually(t, func() bool { s := a.Status(); return s.Detection != "" && s.NodeManager != "" }, 10*time.Second, 10*time.Millisecond)
	if a.Status().Detection != "ebpf" {
		kerneltest.Skip(t, "needs the eBPF exec watch (BTF, CAP_BPF)")
	}
	return a
}

// waitPending waits until an exec'd process waits for the NM's list.
func waitPending(t *testing.T, a *Adopter) {
	require.Eventually(t, func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(a.pending) > 0
	}, 10*time.Second, 10*time.Millisecond, "the exec'd process waits for the NodeManager's list")
}

// movedAndRecorded waits until pid is in container id's cgroup and the
// adopter has published its record (published after the move), and
// returns the record.
func (n *node) movedAndRecorded(t *testing.T, a *Adopter, id string, pid int, within time.Duration, msg string) Adoption {
	var ad Adoption
	require.Eventually(t, func() bool {
		var ok bool
		ad, ok = a.Status().Containers[id]
		return ok && n.h.Contains(pid, cgroups.CPU, n.h.ContainerRelDir(id))
	}, within, 10*time.Millisecond, msg)
	return ad
}

// storeLearns puts id in the store as the NodeManager's resync does.
func (n *node) storeLearns(id string) {
	cid, _ := yarn.ParseContainerID(id)
	n.st.Resync(store.Observation{NM: []yarn.NMContainer{{ID: cid, State: yarn.StateRunning}}, NMOK: true}, time.Now())
}

// TestRealKernelExecTimeKeptWhenTheScanMoves: a process found at its exec
// names a container the store does not know yet, so the NodeManager is
// asked (in the background) and the process waits for the list; the store
// learns of the container first (its resync) and the scan moves the
// process. The move is still the one of a process found at its exec: its
// launch → cgroup time is recorded (before, the scan's move took the
// process as found by the scan, time 0).
func TestRealKernelExecTimeKeptWhenTheScanMoves(t *testing.T) {
	n := newNode(t)
	a := slowNMAdopter(t, n)
	c5 := containerName(5)
	p := n.launch(t, c5, "exec sleep 3600")
	waitPending(t, a)
	n.storeLearns(c5)
	ad := n.movedAndRecorded(t, a, c5, p.Pid(), 10*time.Second, "the scan moves it once the store knows its container")
	assert.Positive(t, ad.LaunchToCgroupNanos, "found at its exec: the scan's move keeps its exec time")
	a.mu.Lock()
	assert.Empty(t, a.pending, "a moved process waits no more")
	a.mu.Unlock()
}

// TestRealKernelLaunchTimeFromTheChildsExec: the DefaultContainerExecutor's
// way, as the NodeManager emulator launches: the launch shell carries
// CONTAINER_ID from its start but execs before it is moved into the NM
// pod (no exec of it is seen there); its first child (YARN's script runs
// mkdir, ln before its exec) is the container's first exec in the pod and
// waits for the NM's list, while the scan moves the shell. The container's
// launch → cgroup time is from that child's exec (the v2 guest's e2e
// found two of three containers with time 0).
func TestRealKernelLaunchTimeFromTheChildsExec(t *testing.T) {
	n := newNode(t)
	a := slowNMAdopter(t, n)
	c6 := containerName(6)
	cmd := exec.Command("sh", "-c", "read gate; sleep 5; exec sleep 3600")
	cmd.Env = append(os.Environ(), "CONTAINER_ID="+c6)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	gate, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	for _, dir := range n.podAbs {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644))
	}
	_, err = gate.Write([]byte("go\n"))
	require.NoError(t, err)
	waitPending(t, a)
	n.storeLearns(c6)
	ad := n.movedAndRecorded(t, a, c6, cmd.Process.Pid, 4*time.Second, "the scan moves the launch shell during its sleep")
	assert.Positive(t, ad.LaunchToCgroupNanos, "the launch is the child's exec, seen in the pod")
	assert.Less(t, ad.LaunchToCgroupNanos, int64(4*time.Second))
}

// TestRealKernelLateExecEventGivesTheLaunchTime: the scan moves a process
// before the exec watch's event of it is handled (the event waits in the
// ring buffer or the loop's queue; the v2 guest's e2e found containers
// with time 0): the late event still gives the container its launch →
// cgroup time. An event at that pid from before the process's fork
// (another process) or after the cgroup was made (not its launch) gives
// none.
func TestRealKernelLateExecEventGivesTheLaunchTime(t *testing.T) {
	n := newNode(t)
	a := n.adopter(t, false)
	a.opts.openExec = func() (execSource, error) { return newQuietWatch(), nil }
	a.opts.ScanInterval = 50 * time.Millisecond
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	a.Run(stop)
	require.Eventually(t, func() bool { s := a.Status(); return s.Detection == "ebpf" && s.NodeManager != "" }, 10*time.Second, 10*time.Millisecond)

	c := containerName(8)
	before, _ := monoNow()
	p := n.launch(t, c, "exec sleep 3600")
	execAt, _ := monoNow() // after its fork; the store does not know c yet: not moved
	n.storeLearns(c)
	ad := n.movedAndRecorded(t, a, c, p.Pid(), 10*time.Second, "the scan moves it")
	require.Zero(t, ad.LaunchToCgroupNanos, "the scan alone does not know its exec")
	after, _ := monoNow()

	a.OnExec(ExecEvent{Pid: p.Pid(), KtimeNs: before - uint64(time.Second)})
	a.OnExec(ExecEvent{Pid: p.Pid(), KtimeNs: after})
	assert.Zero(t, a.Status().Containers[c].LaunchToCgroupNanos, "another process's exec, or one after the cgroup was made")

	a.OnExec(ExecEvent{Pid: p.Pid(), KtimeNs: execAt})
	got := a.Status().Containers[c].LaunchToCgroupNanos
	assert.Positive(t, got, "the late event gives the launch time")
	assert.LessOrEqual(t, got, int64(after-execAt), "from that exec to the cgroup's making")
	a.OnExec(ExecEvent{Pid: p.Pid(), KtimeNs: execAt + 1})
	assert.Equal(t, got, a.Status().Containers[c].LaunchToCgroupNanos, "a later exec does not replace the earliest")
}

// launchNamed is launch, remembering the process by its container.
func (n *node) launchNamed(t *testing.T, id, script string) {
	p := n.launch(t, id, script)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.procs == nil {
		n.procs = map[string]int{}
	}
	n.procs[id] = p.Pid()
}

// launched returns the pid launchNamed started for id (0: none yet).
func (n *node) launched(id string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.procs[id]
}

// TestRealKernelOrphanEnded: a container's process runs on in the cgroup
// koordlet made after its NodeManager pod is gone (the runtime no longer
// ends it): once no NodeManager has listed it for orphanGrace it is ended
// by the eviction killer (only what is in that cgroup, each pinned) and
// the cgroup removed. Its sibling, listed again by a NodeManager that came
// back, runs on. Before, both ran on for ever. (The evidence for c2 at
// the end is the NodeManager's answer without it: one that could not be
// asked would hold the count, see TestRealKernelRestartNMOmitsAContainer.)
func TestRealKernelOrphanEnded(t *testing.T) {
	n := newNode(t)
	now := time.Now()
	var clock sync.Mutex
	var podGone atomic.Bool
	killer := &kill.Killer{H: n.h, Grace: 10 * time.Millisecond}
	a := New(Options{Store: n.st, ScanInterval: time.Second, ListNM: n.nm.list,
		Now:       func() time.Time { clock.Lock(); defer clock.Unlock(); return now },
		Hierarchy: func() (cgroups.Hierarchy, bool) { return n.h, true },
		NMPodCgroup: func() (string, string, bool) {
			return n.pod, "test/nodemanager", !podGone.Load()
		},
		Kill: func(name string) error {
			var c store.Container
			c.Name = name
			c.Cgroups[cgroups.CPU] = cgroups.Ref{Dir: n.h.ContainerRelDir(name), Owned: true}
			_, err := killer.KillFor(&c, "test: orphaned")
			return err
		}})
	c2, c3 := containerName(2), containerName(3)
	n.nm.add(c2)
	n.nm.add(c3)
	p2 := n.launch(t, c2, "exec sleep 3600")
	p3 := n.launch(t, c3, "exec sleep 3600")
	require.Eventually(t, func() bool {
		a.Scan()
		return n.h.Contains(p2.Pid(), cgroups.CPU, n.h.ContainerRelDir(c2)) && n.h.Contains(p3.Pid(), cgroups.CPU, n.h.ContainerRelDir(c3))
	}, 10*time.Second, 50*time.Millisecond)
	// The store has both from the cgroup scan and the NodeManager.
	n.resync(t, a.opts.Now(), true, c2, c3)

	podGone.Store(true) // the NM pod crashed: nothing ends the containers
	a.Scan()
	clock.Lock()
	now = now.Add(orphanGrace - time.Second)
	clock.Unlock()
	a.Scan()
	require.True(t, alive(p2.Pid()), "not before the grace")
	podGone.Store(false) // a NodeManager is back; it recovered c3, not c2
	n.nm.mu.Lock()
	delete(n.nm.ids, c2)
	n.nm.mu.Unlock()
	clock.Lock()
	now = now.Add(2 * time.Second)
	clock.Unlock()
	n.resync(t, a.opts.Now(), true, c3) // the NodeManager back answers without c2
	a.Scan()                            // c2 still orphaned (no NM lists it): ended
	require.Eventually(t, func() bool { return !alive(p2.Pid()) }, 10*time.Second, 20*time.Millisecond, "the orphan's process is ended")
	require.Eventually(t, func() bool {
		a.Scan()
		_, err := os.Stat(n.h.AbsDir(cgroups.CPU, n.h.ContainerRelDir(c2)))
		return os.IsNotExist(err)
	}, 10*time.Second, 50*time.Millisecond, "its cgroup removed")
	require.True(t, alive(p3.Pid()), "the container a NodeManager lists runs on")
	require.True(t, n.h.Contains(p3.Pid(), cgroups.CPU, n.h.ContainerRelDir(c3)))
}

// alive reports whether pid runs (a zombie counts as ended).
func alive(pid int) bool {
	st, err := readStat("/proc", pid)
	if err != nil {
		return false
	}
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	_ = st
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// TestRealKernelGateOffCleansAsTheyEmpty: with the gate off, a cgroup
// koordlet made whose container finishes later goes once it is empty
// (before: it stayed until the next restart).
func TestRealKernelGateOffCleansAsTheyEmpty(t *testing.T) {
	n := newNode(t)
	a := New(Options{Store: n.st, ScanInterval: 20 * time.Millisecond,
		Hierarchy:   func() (cgroups.Hierarchy, bool) { return n.h, true },
		NMPodCgroup: func() (string, string, bool) { return n.pod, "test/nodemanager", true }})
	busy := containerName(3)
	dirs, err := ensureLeaf(n.h, busy, nil)
	require.NoError(t, err)
	p := kerneltest.Start(t, "exec sleep 3600", dirs...)
	require.NoError(t, p.Release())
	require.Equal(t, 0, a.RestoreDisabled())
	require.True(t, n.h.Contains(p.Pid(), cgroups.CPU, n.h.ContainerRelDir(busy)), "the running container stays where it is")
	killGroup(p) // the container finishes
	require.Eventually(t, func() bool {
		_, err := os.Stat(n.h.AbsDir(cgroups.CPU, n.h.ContainerRelDir(busy)))
		return os.IsNotExist(err)
	}, 10*time.Second, 20*time.Millisecond, "its cgroup goes once empty, the gate off")
}

// TestRealKernelLaunchUnderAnEmptyEnvironment: the LinuxContainerExecutor
// without a resources handler. The NodeManager runs the native
// container-executor with an empty environment (it does not pass its own
// on); the executor stays the parent of the container's launch, which
// gets CONTAINER_ID from launch_container.sh. An empty environment read
// once is what a process in the middle of an exec shows, so it is read
// again; read empty again a scan later, it is an answer (no container
// named), and the launch below it is adopted. Before, every process below
// the executor stayed unread forever: nothing was adopted.
func TestRealKernelLaunchUnderAnEmptyEnvironment(t *testing.T) {
	n := newNode(t)
	a := n.running(t)
	id := containerName(4)
	n.nm.add(id)
	p := kerneltest.Start(t, "exec env -i /bin/sh -c 'CONTAINER_ID="+id+" /bin/sleep 3600 & wait'", n.podAbs...)
	require.NoError(t, p.Release())
	var child int
	require.Eventually(t, func() bool {
		pids := kerneltest.Pids(n.h.AbsDir(cgroups.CPU, n.h.ContainerRelDir(id)))
		if len(pids) == 1 {
			child = pids[0]
		}
		return child != 0
	}, 10*time.Second, 50*time.Millisecond, "the launch below an empty environment is adopted; status %+v", a.Status())
	require.NotEqual(t, p.Pid(), child, "the executor (empty environment) is not the container's")
	for _, dir := range n.podAbs {
		assert.Contains(t, kerneltest.Pids(dir), p.Pid(), "the executor stays in the NM pod's %s", dir)
	}
}
