// Package nodebox runs a Kubernetes node in a box on this machine, for the
// node-level e2e tests and the demo: a real kube-apiserver and etcd on
// loopback with Koordinator's CRDs, a Node and a NodeSLO, a kubelet stub
// serving the node's pods, a YARN NodeManager emulator launching real
// processes in real cgroup v1 container cgroups, and bin/koordlet built from
// this repository pointed at all of it. Everything it creates is removed by
// Stop, also after a failure.
package nodebox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	koordclient "github.com/koordinator-sh/koordinator/pkg/client/clientset/versioned"

	koordletyarn "github.com/koordlet-yarn/koordlet-yarn"
	"github.com/koordlet-yarn/koordlet-yarn/test/cgtree"
	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
)

// NodeName is the box's node.
const NodeName = "e2e-node"

// NMNodeID is the NodeManager emulator's node id (its /ws/v1/node/info's
// nodeId: what the ResourceManager calls the node).
const NMNodeID = "127.0.0.1:8041"

// YARNHierarchy is where the emulated NM puts container cgroups in the
// default layout: below the besteffort QoS cgroup (cgroupfs driver). Other
// layouts: Box.Hierarchy.
const YARNHierarchy = "kubepods/besteffort/hadoop-yarn"

// NMPodLabels select the NodeManager pod (koordlet's default selector).
var NMPodLabels = map[string]string{"app.kubernetes.io/component": "node-manager", "app": "hadoop-yarn",
	"koordinator.sh/qosClass": "BE", "koordinator.sh/priority-class": "koord-batch"}

// Options configure a box.
type Options struct {
	// Top is the repository top; binaries are bin/koordlet and build/bin/{etcd,kube-apiserver}.
	Top string
	// NodeSLO is the node's NodeSLO spec.
	NodeSLO slov1alpha1.NodeSLOSpec
	// KoordletArgs are extra koordlet flags (e.g. --feature-gates=...).
	KoordletArgs []string
	// ExtraCRDs are more of the koordinator module's CRD files
	// (config/crd/bases) to install, e.g. for koord-manager.
	ExtraCRDs []string
	// Layout is the node's cgroup layout (zero value: LayoutCgroupfs).
	Layout Layout
	// LockWait is how long Start waits for another box on this machine to
	// finish (0: fail at once, naming the lock).
	LockWait time.Duration
	// FakeRoot points koordlet at a fake cgroup root (and sys fs root) that
	// has the files of the kernel features this machine lacks (Group
	// Identity, Anolis Memory QoS, a resctrl BE group). Processes still run
	// for real; their cgroup membership is only written to the fake files.
	FakeRoot bool
	// Pods are extra pods of the node, made as the built-in ones are (a
	// placeholder process in the container's cgroups, listed by the
	// kubelet stub); PodCgroup names their container cgroup.
	Pods []PodSpec
	// KubeletCPUShares sets cpu.shares (v2: cpu.weight) on the QoS and pod cgroups as the
	// kubelet does (see ApplyKubeletCPUShares), at start and every
	// KubeletSyncPeriod; off, every cgroup keeps the kernel's 1024, which
	// the box's kubelet still writes back every KubeletSyncPeriod (see
	// KubeletErrors).
	KubeletCPUShares bool
	// KoordletCgroupNS runs koordlet as a containerd pod's container is
	// run on cgroup v2: in a pod cgroup of its own (burstable) and a
	// private cgroup namespace rooted there, so that /proc/<pid>/cgroup of
	// every other process reads relative to it. Unified layouts only.
	KoordletCgroupNS bool
	// ExternalNM: the NodeManager koordlet talks to is not the box's
	// emulator (which then does not listen) but a real one the test
	// starts in the NodeManager pod's cgroups (NMPodProcs); Start does
	// not start koordlet: StartKoordletFor does, with the real
	// NodeManager's REST address.
	ExternalNM bool
	// APIServer, when set, is a control plane the boxes of this process
	// share (StartAPIServer; the caller stops it): the box uses it instead
	// of starting its own, and first empties it of everything earlier
	// boxes and their tests made (shared.go). Under the v2 guest's
	// emulated CPU that saves about a minute a box.
	APIServer *APIServer
}

// Box is a running node in a box.
type Box struct {
	opts Options
	dir  string
	lock *os.File
	// token identifies this run; it is the marker on the kubepods
	// directories the run created.
	token string
	// created records the host cgroup directories this run created: Stop
	// removes those and nothing else.
	created cgtree.Tracker
	cp      *controlPlane
	// sharedCP: cp is Options.APIServer's, which Stop leaves running.
	sharedCP bool
	Kube     kubernetes.Interface
	Koord    koordclient.Interface
	kubelet  *kubeletStub
	// kubeletWriter writes the QoS and pod cgroups' cpu.shares as the
	// kubelet does.
	kubeletWriter *kubeletWriter
	pods          map[string]*runningPod
	podProcs      map[string]*exec.Cmd
	// NM is the NodeManager emulator.
	NM *nmemu.NM
	// NMAddr is the emulator's REST address (host:port).
	NMAddr       string
	koordlet     *proc
	koordletPort int
	koordletRuns int
	// cgroupRoot is the root koordlet and the emulator use; sysFSRoot is
	// koordlet's --sys-fs-root-dir.
	cgroupRoot, sysFSRoot string
	// steps are Start's steps and how long each took.
	steps []string
	began time.Time
}

// step records that Start's step name ended now.
func (b *Box) step(name string) {
	now := time.Now()
	b.steps = append(b.steps, fmt.Sprintf("%s %v", name, now.Sub(b.began).Round(time.Millisecond)))
	b.began = now
}

// StartSteps says how long each of Start's steps took ("lock 1ms, control
// plane 40s, …"): under the v2 guest's emulated CPU a start takes a minute.
func (b *Box) StartSteps() string { return strings.Join(b.steps, ", ") }

// Prerequisites says why the box cannot run here, or nil.
func Prerequisites() error {
	if os.Geteuid() != 0 {
		return errors.New("the node in a box needs root (it creates cgroups and runs kube-apiserver)")
	}
	if PureV2() {
		// A cgroup v2 host (the guest of make test-v2): the unified
		// layouts run, with the controllers a v2 node's kubelet uses.
		if err := checkV2Controllers(CgroupRoot); err != nil {
			return err
		}
	} else {
		for _, c := range controllers {
			if _, err := os.Stat(filepath.Join(CgroupRoot, c, "cgroup.procs")); err != nil {
				return fmt.Errorf("the node in a box needs the cgroup v1 %s controller mounted at %s/%s, or cgroup v2 at %s", c, CgroupRoot, c, CgroupRoot)
			}
		}
	}
	if _, err := exec.LookPath("openssl"); err != nil {
		return errors.New("the node in a box needs openssl")
	}
	return checkNotKubernetesNode(CgroupRoot, "/proc", kubeletPodsDir)
}

// EnsureBinaries builds bin/koordlet and the cached kube-apiserver and etcd.
func EnsureBinaries(top string, log io.Writer) error {
	build := exec.Command(filepath.Join(top, "test/e2e/tools/build.sh"))
	build.Stdout, build.Stderr = log, log
	if err := build.Run(); err != nil {
		return fmt.Errorf("build e2e tools: %w", err)
	}
	for _, b := range []struct{ out, pkg string }{{"bin/koordlet", "./cmd/koordlet"}, {ContainerExecutorBin, "./test/containerexecutor"}} {
		gob := exec.Command("go", "build", "-o", filepath.Join(top, b.out), b.pkg)
		gob.Dir = top
		gob.Stdout, gob.Stderr = log, log
		if err := gob.Run(); err != nil {
			return fmt.Errorf("build %s: %w", b.pkg, err)
		}
	}
	return nil
}

// ContainerExecutorBin is the stand-in for YARN's native container-executor
// (test/containerexecutor) that EnsureBinaries builds, relative to the
// repository top: the real NodeManager's LinuxContainerExecutor runs it.
const ContainerExecutorBin = "build/bin/container-executor"

// CheckBinaries checks that what EnsureBinaries builds is there (in the v2
// guest, which sees the repository read-only).
func CheckBinaries(top string) error {
	for _, f := range []string{"bin/koordlet", "build/bin/kube-apiserver", "build/bin/etcd", ContainerExecutorBin} {
		if _, err := os.Stat(filepath.Join(top, f)); err != nil {
			return fmt.Errorf("%s was not built on the host: %w", f, err)
		}
	}
	return nil
}

const lockPath = "/run/koordlet-yarn-nodebox.lock"

// Start brings the box up; on error everything started is stopped.
func Start(ctx context.Context, opts Options) (b *Box, err error) {
	if err := Prerequisites(); err != nil {
		return nil, err
	}
	b = &Box{opts: opts, pods: map[string]*runningPod{}, podProcs: map[string]*exec.Cmd{}, began: time.Now()}
	defer func() {
		if err != nil {
			b.Stop()
			b = nil
		}
	}()
	if err = b.takeLock(opts.LockWait); err != nil {
		return b, err
	}
	// Under the lock no other box runs: check again, then clear what a
	// crashed box left (every kubepods tree here carries a box marker, or
	// the check refused), and only that.
	if err = checkNotKubernetesNode(CgroupRoot, "/proc", kubeletPodsDir); err != nil {
		return b, err
	}
	if !opts.FakeRoot {
		for _, dir := range leftoverTrees(CgroupRoot) {
			fmt.Fprintf(os.Stderr, "nodebox: removing %s, left by an earlier box run (marker %q)\n", dir, marker(dir))
			if err = cgtree.Remove(dir); err != nil {
				return b, fmt.Errorf("remove a crashed box's cgroups: %w", err)
			}
		}
	}
	b.step("lock")
	if b.dir, err = os.MkdirTemp("", "nodebox-"); err != nil {
		return b, err
	}
	if opts.Layout.Name == "" {
		opts.Layout = LayoutCgroupfs
		if PureV2() {
			opts.Layout = LayoutUnified // a cgroup v2 host has no other
		}
		b.opts.Layout = opts.Layout
	}
	l := opts.Layout
	if l.Unified && opts.FakeRoot {
		return b, errors.New("the unified layout runs on the real cgroup2 hierarchy, not a fake root")
	}
	if PureV2() && !l.Unified {
		return b, fmt.Errorf("layout %s is cgroup v1; this host mounts cgroup v2 (use a unified layout)", l.Name)
	}
	if opts.KoordletCgroupNS && !l.Unified {
		return b, errors.New("koordlet in a private cgroup namespace (clone into its pod cgroup) needs a unified layout")
	}
	if l.CoMounted && !opts.FakeRoot {
		return b, errors.New("the co-mounted layout needs a fake root (this host mounts cpu and cpuacct apart)")
	}
	if _, statErr := os.Stat(filepath.Join(l.cgroupRoot(), "cgroup.procs")); l.Unified && statErr != nil {
		return b, fmt.Errorf("the unified layout needs a cgroup2 hierarchy at %s", l.cgroupRoot())
	}
	b.cgroupRoot, b.sysFSRoot = l.cgroupRoot(), "/sys/fs"
	// The real tree: every process's membership is real, also with a fake
	// root (which mirrors it in its files), so that koordlet's checks of
	// /proc/<pid>/cgroup hold as on a real node.
	if err = makeCgroup(&b.created, l.cgroupRoot(), l.controllers(), l.kubepods()); err != nil {
		return b, err
	}
	for _, dir := range l.kubepodsDirs() {
		if err = setMarker(dir, b.token); err != nil {
			return b, err
		}
	}
	for _, qos := range []corev1.PodQOSClass{corev1.PodQOSBestEffort, corev1.PodQOSBurstable} {
		if err = makeCgroup(&b.created, l.cgroupRoot(), l.controllers(), l.qosDir(qos)); err != nil {
			return b, err
		}
	}
	if opts.FakeRoot {
		b.cgroupRoot, b.sysFSRoot = filepath.Join(b.dir, "cgroupfs"), filepath.Join(b.dir, "sysfs")
		if err = makeFakeRoot(b.cgroupRoot, l.CoMounted); err != nil {
			return b, err
		}
		if err = os.MkdirAll(filepath.Join(b.sysFSRoot, "resctrl", "BE"), 0o755); err != nil {
			return b, err
		}
		if err = os.WriteFile(filepath.Join(b.sysFSRoot, "resctrl", "BE", "tasks"), nil, 0o644); err != nil {
			return b, err
		}
	}
	b.step("cgroups")
	crdDir, err := koordinatorCRDDir()
	if err != nil {
		return b, err
	}
	crds, err := readCRDs(crdDir, append(append([]string(nil), crdFiles...), opts.ExtraCRDs...))
	if err != nil {
		return b, err
	}
	if opts.APIServer != nil {
		b.cp, b.sharedCP = opts.APIServer.cp, true
		keep := map[string]bool{}
		for _, crd := range crds {
			keep[crd.Name] = true
		}
		if err = opts.APIServer.clear(ctx, keep); err != nil {
			return b, err
		}
		b.step("shared control plane cleared")
	} else if b.cp, err = startControlPlane(b.dir, filepath.Join(opts.Top, "build/bin"), b.step); err != nil {
		return b, err
	}
	cfg := b.cp.restConfig()
	if b.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return b, err
	}
	if b.Koord, err = koordclient.NewForConfig(cfg); err != nil {
		return b, err
	}
	if err = applyCRDs(ctx, cfg, crds); err != nil {
		return b, err
	}
	b.step("CRDs")
	if err = createNode(ctx, b.Kube, NodeName); err != nil {
		return b, err
	}
	if err = createNodeSLO(ctx, b.Koord, NodeName, opts.NodeSLO); err != nil {
		return b, err
	}
	for i, spec := range append([]PodSpec{
		{Namespace: "yarn", Name: "nodemanager", Labels: NMPodLabels, HostNetwork: true},
		{Namespace: "default", Name: "web", Labels: map[string]string{"app": "web"}, CPU: "500m", Memory: "256Mi"},
		{Namespace: "default", Name: "batch", Labels: map[string]string{"app": "batch", "koordinator.sh/qosClass": "BE"}},
	}, opts.Pods...) {
		rp, err := createPod(ctx, b.Kube, l, NodeName, spec, "10.244.0."+strconv.Itoa(10+i))
		if err != nil {
			return b, err
		}
		if err = makeCgroup(b.tracker(), b.cgroupRoot, b.ctrls(), rp.containerCgroup); err != nil {
			return b, err
		}
		if opts.FakeRoot {
			if err = makeCgroup(&b.created, l.cgroupRoot(), l.controllers(), rp.containerCgroup); err != nil {
				return b, err
			}
		}
		cmd := exec.Command("sleep", "86400")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err = cmd.Start(); err != nil {
			return b, err
		}
		b.podProcs[spec.Name] = cmd
		if err = movePid(b.cgroupRoot, b.ctrls(), cmd.Process.Pid, rp.containerCgroup); err != nil {
			return b, err
		}
		if opts.FakeRoot {
			if err = movePid(l.cgroupRoot(), l.controllers(), cmd.Process.Pid, rp.containerCgroup); err != nil {
				return b, err
			}
		}
		b.pods[spec.Name] = rp
	}
	b.step("node, NodeSLO, pods")
	if b.kubelet, err = startKubeletStub(); err != nil {
		return b, err
	}
	b.kubelet.setPods(b.podList())
	if opts.KubeletCPUShares {
		if err = b.ApplyKubeletCPUShares(); err != nil {
			return b, err
		}
	}
	b.startKubeletWriter()

	nmCfg := nmemu.Config{
		CgroupRoot: b.cgroupRoot, Hierarchy: l.Hierarchy(), Controllers: l.yarnControllers(), NoContainerCgroups: l.NoYARNCgroups, LCELaunch: l.LCELaunch,
		PodCgroup: b.pods["nodemanager"].containerCgroup, PodControllers: b.ctrls(),
		NodeID: NMNodeID,
		// YARN's launch script runs a moment before it execs the JVM.
		LaunchDelay: 200 * time.Millisecond,
	}
	if opts.FakeRoot {
		nmCfg.FakeFiles = fakeKernelFiles
		nmCfg.MirrorRoot = l.cgroupRoot()
		nmCfg.MirrorControllers = l.mirrorControllers()
	}
	b.NM = nmemu.New(nmCfg)
	if opts.ExternalNM {
		// The test starts the real NodeManager (whose REST port it
		// learns then), then koordlet (StartKoordletFor); the emulator
		// object stays, idle, for the box's own bookkeeping.
		return b, nil
	}
	if b.NMAddr, err = b.NM.Listen("127.0.0.1:0"); err != nil {
		return b, err
	}
	b.step("kubelet, NM")
	if err = b.StartKoordlet(); err != nil {
		return b, err
	}
	b.step("koordlet")
	return b, nil
}

// HoldLock takes the machine-wide box lock, waiting up to wait for a box
// that runs, so that a test can prepare the host while no box runs; call
// release before starting a box.
func HoldLock(wait time.Duration) (release func(), err error) {
	var b Box
	if err := b.takeLock(wait); err != nil {
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(b.lock.Fd()), syscall.LOCK_UN)
		b.lock.Close()
	}, nil
}

// takeLock takes the machine-wide box lock, waiting up to wait for a box
// that runs, and records this run's token in it.
func (b *Box) takeLock(wait time.Duration) error {
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(wait)
	for {
		if err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
			break
		}
		if time.Now().After(deadline) {
			f.Close()
			return fmt.Errorf("another node in a box runs on this machine (%s is locked)", lockPath)
		}
		time.Sleep(500 * time.Millisecond)
	}
	b.lock = f
	b.token = fmt.Sprintf("pid=%d start=%d", os.Getpid(), time.Now().UnixNano())
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(b.token+"\n"), 0)
	return nil
}

// Hierarchy is the YARN hierarchy of the box's layout.
func (b *Box) Hierarchy() string { return b.opts.Layout.Hierarchy() }

// Layout is the box's cgroup layout.
func (b *Box) Layout() Layout { return b.opts.Layout }

// ctrls are the hierarchies the box's cgroups live in.
func (b *Box) ctrls() []string {
	if b.opts.FakeRoot {
		return controllers
	}
	return b.opts.Layout.controllers()
}

// tracker returns the record of created cgroups for the host root, nil for
// a fake root (removed with the box's directory).
func (b *Box) tracker() *cgtree.Tracker {
	if b.opts.FakeRoot {
		return nil
	}
	return &b.created
}

// CRDDirEnv names the koordinator module's CRD directory where the go
// command cannot be asked (the v2 guest).
const CRDDirEnv = "KOORDLET_YARN_CRD_DIR"

// KoordinatorCRDDir is the koordinator module's config/crd/bases.
func KoordinatorCRDDir() (string, error) { return koordinatorCRDDir() }

func koordinatorCRDDir() (string, error) {
	if d := os.Getenv(CRDDirEnv); d != "" {
		return d, nil
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/koordinator-sh/koordinator").Output()
	if err != nil {
		return "", fmt.Errorf("locate the koordinator module: %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "config/crd/bases"), nil
}

// SetNodeAnnotations merges annotations into the Node's (a merge patch:
// the others are kept).
func (b *Box) SetNodeAnnotations(ctx context.Context, annotations map[string]string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	if _, err := b.Kube.CoreV1().Nodes().Patch(ctx, NodeName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("annotate node %s: %w", NodeName, err)
	}
	return nil
}

// UpdateNodeSLO changes the node's NodeSLO spec.
func (b *Box) UpdateNodeSLO(ctx context.Context, mutate func(*slov1alpha1.NodeSLOSpec)) error {
	slo, err := b.Koord.SloV1alpha1().NodeSLOs().Get(ctx, NodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	mutate(&slo.Spec)
	_, err = b.Koord.SloV1alpha1().NodeSLOs().Update(ctx, slo, metav1.UpdateOptions{})
	return err
}

// NMPID returns the pid of the process standing for the NodeManager JVM.
func (b *Box) NMPID() int { return b.podProcs["nodemanager"].Process.Pid }

// NMPod returns the NodeManager pod's namespace and name.
func (b *Box) NMPod() (string, string) { return "yarn", "nodemanager" }

// CgroupRoot returns the cgroup root koordlet uses (the fake one with FakeRoot).
func (b *Box) CgroupRoot() string { return b.cgroupRoot }

// SysFSRoot returns koordlet's sys fs root (a fake one with FakeRoot).
func (b *Box) SysFSRoot() string { return b.sysFSRoot }

// KoordletLog is the path of koordlet's log,
// "" before koordlet started.
func (b *Box) KoordletLog() string {
	if b.koordlet == nil {
		return ""
	}
	return b.koordlet.log
}

// KubeconfigPath is the kubeconfig of the box's API server (admin).
func (b *Box) KubeconfigPath() string { return b.cp.kubeconfig }

// Dir is the box's work directory (logs, kubeconfig).
func (b *Box) Dir() string { return b.dir }

// StartKoordletFor starts koordlet for the real NodeManager whose REST is
// at nmAddr (host:port; Options.ExternalNM).
func (b *Box) StartKoordletFor(nmAddr string) error {
	b.NMAddr = nmAddr
	return b.StartKoordlet()
}

// StartKoordlet starts bin/koordlet and waits until its YARN informer has synced.
func (b *Box) StartKoordlet() error {
	nmPort := b.NMAddr[strings.LastIndex(b.NMAddr, ":")+1:]
	b.koordletRuns++
	work := filepath.Join(b.dir, "koordlet")
	args := []string{
		// Port 0: koordlet binds a free port and logs it (no port picked
		// here and bound later, which another process could take between).
		"--addr=127.0.0.1:0",
		"--kubeconfig=" + b.cp.kubeconfig,
		"--cgroup-root-dir=" + b.cgroupRoot + "/",
		// koordlet's defaults are a DaemonSet's host mounts (/host-sys...);
		// the box runs on the host itself.
		"--sys-root-dir=/sys/",
		"--sys-fs-root-dir=" + b.sysFSRoot + "/",
		"--proc-root-dir=/proc/",
		"--var-run-root-dir=" + filepath.Join(work, "var-run") + "/",
		"--tsdb-path=" + filepath.Join(work, "tsdb"),
		"--prediction-checkpoint-filepath=" + filepath.Join(work, "prediction"),
		"--audit-log-dir=" + filepath.Join(work, "audit"),
		"--run-root-dir=" + filepath.Join(work, "run"),
		"--runtime-hooks-addr=" + filepath.Join(work, "koordlet.sock"),
		"--runtime-hooks-host-endpoint=" + filepath.Join(work, "koordlet.sock"),
		"--runtime-hooks-config-path=" + filepath.Join(work, "hookserver") + "/",
		"--enable-nri-runtime-hook=false",
		"--kubelet-insecure-tls=true",
		"--kubelet-read-only-port=" + strconv.Itoa(b.kubelet.port),
		"--disable-query-kubelet-config=true",
		"--kubelet-sync-interval=1s",
		"--collect-res-used-interval=1s",
		"--yarn-nm-port=" + nmPort,
		"--yarn-resync-interval=1s",
		// The eviction audit file in the box's own directory (the default is
		// the DaemonSet's host mount).
		"--yarn-evict-audit-file=" + filepath.Join(b.dir, "yarn-evictions.jsonl"),
		"--yarn-rm-capacity-record=" + filepath.Join(b.dir, "yarn-rm-node-resource.json"),
		"--v=3",
	}
	args = append(args, b.opts.KoordletArgs...)
	for _, d := range []string{"tsdb", "prediction", "audit", "run", "var-run", "hookserver"} {
		if err := os.MkdirAll(filepath.Join(work, d), 0o755); err != nil {
			return err
		}
	}
	var err error
	var po procOpts
	if b.opts.KoordletCgroupNS {
		rel := b.opts.Layout.koordletPodCgroup()
		if err := makeCgroup(&b.created, b.cgroupRoot, b.opts.Layout.controllers(), rel); err != nil {
			return err
		}
		fd, err := unix.Open(filepath.Join(b.cgroupRoot, rel), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open koordlet's pod cgroup: %w", err)
		}
		defer unix.Close(fd)
		po = procOpts{cgroupFD: fd, newCgroupNS: true}
	}
	b.koordlet, err = startProcWith(b.dir, "koordlet-"+strconv.Itoa(b.koordletRuns), filepath.Join(b.opts.Top, "bin/koordlet"),
		[]string{"NODE_NAME=" + NodeName}, po, args...)
	if err != nil {
		return err
	}
	b.koordletPort = 0
	if err := waitFor(60*time.Second, "koordlet to log its HTTP address", func() bool {
		if b.koordlet.exited() {
			return true
		}
		b.koordletPort = listeningPort(b.koordlet.log)
		return b.koordletPort > 0
	}); err != nil {
		return fmt.Errorf("%w (see %s)", err, b.koordlet.log)
	}
	if err := waitFor(90*time.Second, "koordlet's YARN informer to sync", func() bool {
		if b.koordlet.exited() {
			return true
		}
		resp, err := b.Containers()
		return err == nil && resp.Informer.LastResync.After(time.Time{})
	}); err != nil {
		return fmt.Errorf("%w (see %s)", err, b.koordlet.log)
	}
	if b.koordlet.exited() {
		return fmt.Errorf("koordlet exited during start-up (see %s)", b.koordlet.log)
	}
	return nil
}

// KillKoordlet kills koordlet with SIGKILL (a crash: nothing of its own
// shutdown runs).
func (b *Box) KillKoordlet() {
	if b.koordlet == nil {
		return
	}
	b.koordlet.stopped = true
	_ = syscall.Kill(-b.koordlet.cmd.Process.Pid, syscall.SIGKILL)
	<-b.koordlet.done
}

// StopKoordlet stops koordlet (SIGTERM, then SIGKILL).
func (b *Box) StopKoordlet() { b.koordlet.stop(10 * time.Second) }

// KoordletAlive reports whether koordlet still runs.
func (b *Box) KoordletAlive() bool { return b.koordlet != nil && !b.koordlet.exited() }

// KoordletCrashed reports whether koordlet exited without being stopped.
func (b *Box) KoordletCrashed() bool {
	return b.koordlet != nil && b.koordlet.exited() && !b.koordlet.stopped
}

func (b *Box) koordletURL(path string) string {
	return "http://127.0.0.1:" + strconv.Itoa(b.koordletPort) + path
}

// Containers fetches koordlet's /yarn/containers.
func (b *Box) Containers() (koordletyarn.ContainersResponse, error) {
	return getJSON[koordletyarn.ContainersResponse](b, koordletyarn.ContainersPath)
}

// Evictions fetches koordlet's /yarn/evictions.
func (b *Box) Evictions() (koordletyarn.EvictionsResponse, error) {
	return getJSON[koordletyarn.EvictionsResponse](b, koordletyarn.EvictionsPath)
}

// Restore fetches koordlet's /yarn/restore.
func (b *Box) Restore() (koordletyarn.RestoreResponse, error) {
	return getJSON[koordletyarn.RestoreResponse](b, koordletyarn.RestorePath)
}

// Metrics fetches koordlet's Prometheus text.
func (b *Box) Metrics() (string, error) {
	body, err := b.get("/metrics")
	return string(body), err
}

// getJSON fetches and decodes one of koordlet's JSON debug endpoints.
func getJSON[T any](b *Box, path string) (T, error) {
	var out T
	body, err := b.get(path)
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return out, fmt.Errorf("decode %s: %w", path, err)
	}
	return out, nil
}

func (b *Box) get(path string) ([]byte, error) {
	// Under the v2 guest's emulated CPU, with a test's allocator and the
	// host's unit phase beside it, koordlet has taken over 5 s to answer
	// /metrics (CI 2026-11-28).
	client := http.Client{Timeout: 15 * time.Second}
	resp, err := client.Get(b.koordletURL(path))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d", path, resp.StatusCode)
	}
	return body, nil
}

// Stop tears everything down; it is safe on a partly started box.
func (b *Box) Stop() {
	if b == nil {
		return
	}
	if b.koordlet != nil {
		b.koordlet.stop(10 * time.Second)
	}
	if b.NM != nil {
		b.NM.Close()
	}
	for _, cmd := range b.podProcs {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	b.kubeletWriter.close()
	b.kubelet.stop()
	if !b.sharedCP {
		b.cp.stop()
	}
	// Only what this run created; nothing at all when Start refused.
	if err := b.created.RemoveAll(); err != nil {
		fmt.Fprintf(os.Stderr, "nodebox: %v\n", err)
	}
	if b.lock != nil {
		_ = syscall.Flock(int(b.lock.Fd()), syscall.LOCK_UN)
		b.lock.Close()
	}
	if b.dir != "" && os.Getenv("NODEBOX_KEEP") == "" {
		_ = os.RemoveAll(b.dir)
	}
}

// KoordletPID returns koordlet's process id (0 when it is not running).
func (b *Box) KoordletPID() int {
	if b.koordlet == nil || b.koordlet.cmd == nil || b.koordlet.cmd.Process == nil {
		return 0
	}
	return b.koordlet.cmd.Process.Pid
}

// EvictionAuditFile is the koordlet's eviction audit file in the box.
func (b *Box) EvictionAuditFile() string { return filepath.Join(b.dir, "yarn-evictions.jsonl") }

// listeningPort reads the port of koordlet's HTTP server from its log (the
// line koordlet writes once it is bound; 0 before).
func listeningPort(log string) int {
	b, _ := os.ReadFile(log)
	const prefix = "koordlet HTTP server listening on "
	i := strings.LastIndex(string(b), prefix)
	if i < 0 {
		return 0
	}
	rest := string(b[i+len(prefix):])
	if j := strings.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	_, port, ok := strings.Cut(strings.TrimSpace(rest), "127.0.0.1:")
	if !ok {
		return 0
	}
	n, _ := strconv.Atoi(port)
	return n
}
