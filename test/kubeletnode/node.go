// Package kubeletnode is a real Kubernetes node for make test-kubelet, in
// the real-kubelet guest (test/v2guest, cgroup v2, a kernel of its own):
// etcd, kube-apiserver, kube-controller-manager (the DaemonSet, service
// account, root CA and garbage collector controllers), kube-scheduler,
// containerd with runc,
// and the kubelet (cgroupfs driver) that owns the guest's kubepods. Pods
// use the host network (no CNI). Images come from an OCI registry in the
// test process, built from files on this machine (images.go).
//
// It refuses to start outside such a guest: a kubelet tunes kernel
// settings and owns kubepods, which must never happen on a shared host.
package kubeletnode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

// The node's addresses, on the guest's loopback: the API server at the
// kubernetes Service's ClusterIP (10.0.0.1:443, what in-cluster clients
// are told by the kubelet: there is no kube-proxy to translate it), and
// the node's InternalIP (koordlet reaches the kubelet there).
const (
	APIServerIP = "10.0.0.1"
	NodeIP      = "10.1.0.2"
)

// Well-known paths a node has, where koordlet's DaemonSet mounts them.
const (
	ContainerdSocket = "/run/containerd/containerd.sock"
	KubeletRoot      = "/var/lib/kubelet"
	containerdRoot   = "/var/lib/containerd"
	containerdState  = "/run/containerd"
)

// Options configure the node.
type Options struct {
	// Top is the repository top: its build/bin holds the binaries (make
	// e2e-tools, make kubelet-tools) and its bin/koordlet koordlet-yarn.
	Top string
	// Dir is where the node's own files go (logs, configurations).
	Dir string
	// Podbin is the static test pod program (test/kubeletnode/podbin).
	Podbin string
	// NodeName is the node's name (default: the host name).
	NodeName string
	// Logf is told of progress (a pod's state as it changes); nil: silent.
	Logf func(format string, args ...any)
}

// Node is the running node.
type Node struct {
	opts         Options
	Name         string
	Client       kubernetes.Interface
	cp           *nodebox.ControlPlane
	kcm          *nodebox.Proc
	sched        *nodebox.Proc
	ctrd         *nodebox.Proc
	kubelt       *nodebox.Proc
	stopRegistry func()
	bin          string
}

// InGuest reports whether this process may own the machine's kubepods:
// PID 1 is the v2 guest's init (its configuration at /, the kernel booted
// with its rdinit), the kernel has cgroup v2 alone, and no kubelet has
// made kubepods here.
func InGuest() error {
	comm, _ := os.ReadFile("/proc/1/comm")
	cmdline, _ := os.ReadFile("/proc/cmdline")
	_, cfgErr := os.Stat("/v2guest.json")
	if strings.TrimSpace(string(comm)) != "init" || !strings.Contains(string(cmdline), "rdinit=/init") || cfgErr != nil {
		return fmt.Errorf("this is not the v2 guest (PID 1 %q, no /v2guest.json or rdinit=/init): a real kubelet runs only in make test-kubelet's guest", strings.TrimSpace(string(comm)))
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.subtree_control"); err != nil {
		return fmt.Errorf("/sys/fs/cgroup is not cgroup v2: %w", err)
	}
	if _, err := os.Stat("/sys/fs/cgroup/kubepods"); err == nil {
		return errors.New("/sys/fs/cgroup/kubepods exists: another kubelet owns this machine")
	}
	return nil
}

// Start brings the node up and waits until it is Ready for host-network
// pods (its runtime and the kubelet registered).
func Start(ctx context.Context, o Options) (n *Node, err error) {
	if err := InGuest(); err != nil {
		return nil, err
	}
	if o.NodeName == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, err
		}
		o.NodeName = strings.ToLower(h)
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	n = &Node{opts: o, Name: o.NodeName, bin: filepath.Join(o.Top, "build/bin")}
	defer func() {
		if err != nil {
			n.Stop()
			n = nil
		}
	}()
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	if err := addresses(); err != nil {
		return nil, err
	}
	if n.stopRegistry, err = serveRegistry(Registry); err != nil {
		return nil, err
	}
	if err := pushImages(filepath.Join(o.Top, "bin/koordlet"), o.Podbin); err != nil {
		return nil, err
	}
	if n.cp, err = nodebox.StartControlPlane(filepath.Join(o.Dir, "control-plane"), n.bin, nodebox.ControlPlaneOptions{Address: APIServerIP, Port: 443, ServiceAccounts: true}); err != nil {
		return nil, fmt.Errorf("control plane: %w", err)
	}
	if n.Client, err = kubernetes.NewForConfig(n.cp.RestConfig()); err != nil {
		return nil, err
	}
	if err := n.startControllers(); err != nil {
		return nil, err
	}
	if err := n.StartContainerd(); err != nil {
		return nil, err
	}
	if err := n.StartKubelet(); err != nil {
		return nil, err
	}
	if err := n.WaitNodeReady(ctx, 5*time.Minute); err != nil {
		return nil, err
	}
	return n, nil
}

// addresses puts the API server's and the node's addresses on loopback.
func addresses() error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("find lo: %w", err)
	}
	for _, ip := range []string{APIServerIP, NodeIP} {
		a, err := netlink.ParseAddr(ip + "/32")
		if err != nil {
			return err
		}
		if err := netlink.AddrReplace(lo, a); err != nil {
			return fmt.Errorf("add %s to lo: %w", ip, err)
		}
	}
	return nil
}

// startControllers starts kube-controller-manager (the controllers a
// DaemonSet's pods need: daemonset, the default service accounts, the
// kube-root-ca.crt every namespace's pods mount) and kube-scheduler, which
// places the DaemonSet's pods.
func (n *Node) startControllers() (err error) {
	dir := filepath.Join(n.opts.Dir, "controllers")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	n.kcm, err = nodebox.StartProc(dir, "kube-controller-manager", filepath.Join(n.bin, "kube-controller-manager"), nil,
		"--kubeconfig="+n.cp.Kubeconfig(), "--controllers=daemonset,serviceaccount,root-ca-cert-publisher,garbagecollector",
		"--root-ca-file="+n.cp.ServingCA(), "--leader-elect=false", "--use-service-account-credentials=false",
		"--bind-address=127.0.0.1", "--v=2")
	if err != nil {
		return err
	}
	n.sched, err = nodebox.StartProc(dir, "kube-scheduler", filepath.Join(n.bin, "kube-scheduler"), nil,
		"--kubeconfig="+n.cp.Kubeconfig(), "--leader-elect=false", "--bind-address=127.0.0.1", "--v=2")
	return err
}

// StartContainerd starts containerd (again, after StopContainerd: its
// containers keep running under their shims meanwhile).
func (n *Node) StartContainerd() (err error) {
	cfg, err := n.writeContainerdConfig()
	if err != nil {
		return err
	}
	env := []string{"PATH=" + n.bin + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	n.ctrd, err = nodebox.StartProc(n.opts.Dir, "containerd", filepath.Join(n.bin, "containerd"), env, "--config="+cfg)
	if err != nil {
		return err
	}
	return nodebox.WaitFor(time.Minute, "containerd's socket", func() bool {
		c, err := net.Dial("unix", ContainerdSocket)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
}

// StopContainerd stops containerd (SIGTERM), leaving the containers.
func (n *Node) StopContainerd() { n.ctrd.Stop(20 * time.Second) }

// writeContainerdConfig writes containerd's configuration (version 3, the
// CRI plugin's v1 sections) and the registry's hosts file.
func (n *Node) writeContainerdConfig() (string, error) {
	hosts := filepath.Join("/etc/containerd/certs.d", Registry)
	if err := os.MkdirAll(hosts, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(hosts, "hosts.toml"), []byte(fmt.Sprintf(`server = "http://%[1]s"

[host."http://%[1]s"]
  capabilities = ["pull", "resolve"]
`, Registry)), 0o644); err != nil {
		return "", err
	}
	// disable_apparmor: Debian's kernel has AppArmor, the guest neither
	// its profiles nor apparmor_parser. (runc's pivot_root works: the
	// Node guest's root is a tmpfs, not the initramfs.)
	cfg := fmt.Sprintf(`version = 3
root = %[1]q
state = %[2]q

[grpc]
  address = %[3]q

[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %[4]q
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = '/etc/containerd/certs.d'

[plugins.'io.containerd.cri.v1.runtime']
  disable_apparmor = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'runc'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = %[5]q
        SystemdCgroup = false
`, containerdRoot, containerdState, ContainerdSocket, PauseImage, filepath.Join(n.bin, "runc"))
	path := filepath.Join(n.opts.Dir, "containerd.toml")
	return path, os.WriteFile(path, []byte(cfg), 0o644)
}

// kubeletConfig is the kubelet's configuration file: the cgroupfs driver,
// containerd's CRI socket, koordlet's way in (webhook authentication and
// authorization of its service account's token on the secure port), and
// the defaults of everything else (its eviction thresholds among them).
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://%s
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
authorization:
  mode: Webhook
failSwapOn: false
serializeImagePulls: false
healthzBindAddress: 127.0.0.1
healthzPort: 10248
resolvConf: ""
`

// StartKubelet starts the kubelet (again, after StopKubelet).
func (n *Node) StartKubelet() (err error) {
	dir := filepath.Join(n.opts.Dir, "kubelet")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(kubeletConfig, ContainerdSocket)), 0o644); err != nil {
		return err
	}
	env := []string{"PATH=" + n.bin + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	n.kubelt, err = nodebox.StartProc(dir, "kubelet", filepath.Join(n.bin, "kubelet"), env,
		"--config="+cfg, "--kubeconfig="+n.cp.Kubeconfig(), "--root-dir="+KubeletRoot,
		"--hostname-override="+n.Name, "--node-ip="+NodeIP, "--v=2")
	if err != nil {
		return err
	}
	return nodebox.WaitFor(3*time.Minute, "the kubelet's healthz", func() bool {
		if n.kubelt.Exited() {
			return true
		}
		resp, err := http.Get("http://127.0.0.1:10248/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// StopKubelet stops the kubelet (SIGTERM): its pods keep running.
func (n *Node) StopKubelet() { n.kubelt.Stop(20 * time.Second) }

// KubeletLog is the path of the kubelet's log.
func (n *Node) KubeletLog() string { return n.kubelt.Log() }

// ContainerdLog is the path of containerd's log.
func (n *Node) ContainerdLog() string { return n.ctrd.Log() }

// WaitNodeReady waits until the kubelet has registered the node and its
// runtime is up (Ready may stay False for want of a CNI network, which
// host-network pods do not need: the condition's reason says so).
func (n *Node) WaitNodeReady(ctx context.Context, timeout time.Duration) error {
	var last string
	err := nodebox.WaitFor(timeout, "the node registered with a running runtime", func() bool {
		if n.kubelt.Exited() {
			last = "the kubelet exited"
			return true
		}
		node, err := n.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false
		}
		for _, c := range node.Status.Conditions {
			if c.Type != corev1.NodeReady {
				continue
			}
			last = fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
			if c.Status == corev1.ConditionTrue || (strings.Contains(c.Message, "network") && !strings.Contains(c.Message, "runtime is down") && !strings.Contains(c.Message, "PLEG")) {
				return true
			}
		}
		return false
	})
	if err == nil && n.kubelt.Exited() {
		err = errors.New("the kubelet exited")
	}
	if err != nil {
		return fmt.Errorf("%w (last: %s; kubelet log %s)", err, last, n.kubelt.Log())
	}
	return nil
}

// Stop deletes every pod the test made (so that the kubelet tears their
// containers and cgroups down), then stops the kubelet, containerd (and
// the shims of whatever is left), the controllers, the control plane and
// the registry.
func (n *Node) Stop() {
	if n == nil {
		return
	}
	if n.Client != nil && n.kubelt != nil && !n.kubelt.Exited() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		n.deleteAllPods(ctx)
		cancel()
	}
	n.kubelt.Stop(20 * time.Second)
	n.ctrd.Stop(20 * time.Second)
	n.sched.Stop(10 * time.Second)
	n.kcm.Stop(10 * time.Second)
	n.cp.Stop()
	if n.stopRegistry != nil {
		n.stopRegistry()
	}
}

// deleteAllPods deletes the DaemonSets and every pod and waits until the
// kubelet has removed them.
func (n *Node) deleteAllPods(ctx context.Context) {
	nss, err := n.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, ns := range nss.Items {
		_ = n.Client.AppsV1().DaemonSets(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		_ = n.Client.CoreV1().Pods(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	}
	_ = nodebox.WaitFor(90*time.Second, "every pod gone", func() bool {
		pods, err := n.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0 || apierrors.IsNotFound(err)
	})
}

// RestConfig is the admin client configuration of the node's API server.
func (n *Node) RestConfig() *rest.Config { return n.cp.RestConfig() }
