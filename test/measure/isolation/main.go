// Command isolation measures the YARN CPU QoS applier on this kernel
// (cgroup v1, cpu.idle): (1) the effect: a CPU-bound latency-sensitive
// process (one worker per CPU, in a cgroup beside the YARN hierarchy with
// the same cpu.shares) — its throughput alone, next to YARN CPU hogs without
// the applier, and next to them with the applier (the BE class asks for
// sched-idle);
// (2) the latency from a container's first process joining its cgroup (the
// LinuxContainerExecutor writing it into the cgroup's tasks) to that process
// running SCHED_IDLE, with the node's best discovery source (eBPF here),
// over many containers; (3) with YARN that makes no container cgroups, LS
// throughput beside the hogs in the NodeManager pod's cgroup with
// YARNContainerCgroups off and on. Needs root and cpu.idle (cgroup v1, or v2 in make
// measure-v2's guest).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/koordlet-yarn/koordlet-yarn/test/cgtree"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/cgroupwatch"
	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/hooks/yarnqos"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// root is where the run makes its cgroups: the v1 cpu controller, or the
// unified hierarchy of a cgroup v2 host (rootV2; make measure-v2's guest).
var root, rootV2 = cgroupBase()

func cgroupBase() (string, bool) {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return "/sys/fs/cgroup", true
	}
	return "/sys/fs/cgroup/cpu", false
}

// enableCPU hands the cpu controller to dir's children on cgroup v2.
func enableCPU(dir string) error {
	if !rootV2 {
		return nil
	}
	return os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+cpu"), 0o644)
}

func main() {
	kerneltest.RunHelperIfRequested()
	hogs := flag.Int("hogs", 4, "YARN CPU hogs")
	window := flag.Duration("window", 3*time.Second, "throughput window")
	containers := flag.Int("containers", 200, "containers for the latency measurement")
	noCgroups := flag.Bool("no-yarn-cgroups", true, "also measure YARN without container cgroups (YARNContainerCgroups off and on)")
	flag.Parse()
	if err := run(*hogs, *window, *containers, *noCgroups); err != nil {
		fmt.Fprintln(os.Stderr, "isolation:", err)
		os.Exit(1)
	}
}

// fakeInformer serves the NodeSLO the applier reads.
type fakeInformer struct {
	statesinformer.StatesInformer
	spec *slov1alpha1.NodeSLOSpec
}

func (f *fakeInformer) GetNodeSLO() *slov1alpha1.NodeSLO { return &slov1alpha1.NodeSLO{Spec: *f.spec} }
func (f *fakeInformer) GetNode() *corev1.Node            { return &corev1.Node{} }
func (f *fakeInformer) RegisterCallbacks(statesinformer.RegisterType, string, string, statesinformer.UpdateCbFn) {
}

func run(hogs int, window time.Duration, containers int, noCgroups bool) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("needs root")
	}
	top := fmt.Sprintf("koordlet-yarn-isolation-%d", os.Getpid())
	// The run's own top cgroup: one that exists is not ours, and only what
	// this run created is removed.
	var mine cgtree.Tracker
	if err := mine.Mkdir(filepath.Join(root, top)); err != nil {
		return err
	}
	defer func() { _ = mine.RemoveAll() }()
	if err := enableCPU(filepath.Join(root, top)); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(root, top, "ls"), 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(root, top, "ls", "cpu.idle")); err != nil {
		return fmt.Errorf("this kernel has no cpu.idle")
	}
	if err := koordfeatures.DefaultMutableKoordletFeatureGate.Add(features.Specs); err != nil {
		return err
	}
	if err := koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{string(features.YARNCPUQoS): true, string(features.YARNEBPFDiscovery): true}); err != nil {
		return err
	}
	system.Conf.CgroupRootDir = "/sys/fs/cgroup/"
	system.UseCgroupsV2.Store(rootV2)
	f := system.CgroupPathFormatter
	f.ParentDir = top // koordlet's support check looks here instead of the host's kubepods
	system.CgroupPathFormatter = f

	policy := slov1alpha1.CPUQOSPolicyCoreSched
	spec := &slov1alpha1.NodeSLOSpec{ResourceQOSStrategy: &slov1alpha1.ResourceQOSStrategy{
		Policies: &slov1alpha1.ResourceQOSPolicies{CPUPolicy: &policy},
		BEClass: &slov1alpha1.ResourceQOS{CPUQOS: &slov1alpha1.CPUQOSCfg{Enable: ptr.To(true),
			CPUQOS: slov1alpha1.CPUQOS{SchedIdle: ptr.To[int64](1)}}}}}
	st := store.New()
	applied := make(chan string, 1024)
	if err := os.MkdirAll(filepath.Join(root, top, "hadoop-yarn"), 0o755); err != nil {
		return err
	}
	if err := enableCPU(filepath.Join(root, top, "hadoop-yarn")); err != nil {
		return err
	}
	a := yarnqos.New(yarnqos.Options{Store: st, Interval: time.Hour, Hierarchy: func() string { return top + "/hadoop-yarn" },
		StatesInformer: func() statesinformer.StatesInformer { return &fakeInformer{spec: spec} },
		OnApplied:      func(c *store.Container, _ time.Time) { applied <- c.Name }})
	stop := make(chan struct{})
	defer close(stop)

	// (1) effect: the applier is started only once the hogs run without it.
	alone, err := spin(top, window)
	if err != nil {
		return err
	}
	var scan []cgroups.Container
	var pids []int
	for i := 0; i < hogs; i++ {
		id := yarn.ContainerID{Epoch: 17, ClusterTimestamp: 1700000000000, AppID: 1, AttemptID: 1, Sequence: int64(2 + i)}
		rel := top + "/hadoop-yarn/" + id.String()
		if err := os.MkdirAll(filepath.Join(root, rel), 0o755); err != nil {
			return err
		}
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "KOORDLET_YARN_TEST_HELPER=burn")
		if err := cmd.Start(); err != nil {
			return err
		}
		pids = append(pids, cmd.Process.Pid)
		if err := os.WriteFile(filepath.Join(root, rel, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			return err
		}
		own := cgroups.Ref{Dir: rel, Owned: true}
		scan = append(scan, cgroups.Container{Name: id.String(), ID: id, Pids: []int{cmd.Process.Pid}, Cgroups: cgroups.Cgroups{cgroups.CPU: own}})
	}
	defer func() {
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}()
	time.Sleep(500 * time.Millisecond)
	without, err := spin(top, window)
	if err != nil {
		return err
	}
	a.Run(stop) // applies to the YARN root at once
	st.Resync(store.Observation{ScanOK: true, Scan: scan}, time.Now())
	for range scan {
		<-applied
	}
	with, err := spin(top, window)
	if err != nil {
		return err
	}
	fmt.Printf("LS throughput (loop iterations in %v): alone %d; with %d YARN hogs, applier off %d (%.0f%%); applier on (YARN root cpu.idle=1, tasks SCHED_IDLE) %d (%.0f%%)\n",
		window, alone, hogs, without, 100*float64(without)/float64(alone), with, 100*float64(with)/float64(alone))
	for _, p := range pids { // the LCE hogs end before the next part
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	if noCgroups {
		if err := noYARNCgroups(top, &mine, hogs, window, alone, func() statesinformer.StatesInformer { return &fakeInformer{spec: spec} }); err != nil {
			return fmt.Errorf("no YARN cgroups: %w", err)
		}
	}

	// (2) latency: a container's first process joins its cgroup → that
	// process runs SCHED_IDLE, with the best discovery source of this node
	// feeding the store.
	h := cgroups.Hierarchy{CgroupRoot: "/sys/fs/cgroup", ProcRoot: "/proc", Dir: top + "/hadoop-yarn", V2: rootV2}
	w := cgroupwatch.New(cgroupwatch.Options{Store: st, ResyncInterval: time.Hour, Hierarchy: func() (cgroups.Hierarchy, bool) { return h, true }})
	w.Run(stop)
	for w.Active() == "" {
		time.Sleep(5 * time.Millisecond)
	}
	var lat []time.Duration
	for i := 0; i < containers; i++ {
		id := yarn.ContainerID{Epoch: 17, ClusterTimestamp: 1700000000000, AppID: 2, AttemptID: 1, Sequence: int64(2 + i)}
		rel := top + "/hadoop-yarn/" + id.String()
		if err := os.MkdirAll(filepath.Join(root, rel), 0o755); err != nil {
			return err
		}
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			return err
		}
		pid := cmd.Process.Pid
		t0 := time.Now()
		if err := os.WriteFile(filepath.Join(root, rel, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			_ = cmd.Process.Kill()
			return err
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			attr, err := unix.SchedGetAttr(pid, 0)
			if err == nil && attr.Policy == unix.SCHED_IDLE {
				break
			}
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				return fmt.Errorf("container %s: its process is not SCHED_IDLE within 5s", id)
			}
			time.Sleep(50 * time.Microsecond)
		}
		lat = append(lat, time.Since(t0))
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	fmt.Printf("first process joins its container cgroup → SCHED_IDLE, discovery by %s, %d containers: p50 %v, p99 %v, max %v\n", w.Active(), len(lat),
		lat[len(lat)/2].Round(time.Microsecond), lat[len(lat)*99/100].Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond))
	return nil
}

// spin runs the LS stand-in in <top>/ls for window and returns its count.
func spin(top string, window time.Duration) (uint64, error) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "KOORDLET_YARN_TEST_HELPER=spin="+window.String())
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(root, top, "ls", "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		return 0, err
	}
	if err := cmd.Wait(); err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(out.String()), 10, 64)
}
