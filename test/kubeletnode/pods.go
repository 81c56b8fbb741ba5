package kubeletnode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

// The NodeManager pod: namespace, name, the label koordlet-yarn's
// DaemonSet selects it by (-yarn-nm-pod-selector), and the YARN hierarchy
// it makes under the kubelet's besteffort QoS cgroup (cgroupfs driver), as
// yarn-site.v2.xml configures it.
const (
	YARNNamespace  = "yarn"
	NMPodName      = "nodemanager"
	NMLabel        = "app.kubernetes.io/component"
	NMLabelValue   = "node-manager"
	YARNHierarchy  = "kubepods/besteffort/hadoop-yarn"
	nmControlURL   = "http://127.0.0.1:8043"
	KoordletNS     = "koordinator-system"
	KoordletLabel  = "koord-app"
	KoordletMetric = "http://127.0.0.1:9316"
)

func hostPath(name, path string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}}
}

// NMPod is the NodeManager pod: the NM emulator (podbin nodemanager) in a
// BestEffort, privileged, host-network pod that mounts the host's cgroups
// at /host-cgroup (Koordinator's hadoop-yarn chart's mount) and the host's
// /usr (the containers' shell and tools).
// With noCgroups it launches as Hadoop before 3.5 does on cgroup v2: no
// container cgroups, every container process in the pod's own cgroup.
func (n *Node) NMPod(noCgroups bool) *corev1.Pod {
	args := []string{"nodemanager", "-cgroup-root=/host-cgroup", "-hierarchy=" + YARNHierarchy}
	if noCgroups {
		args = append(args, "-no-container-cgroups")
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: NMPodName, Namespace: YARNNamespace,
			Labels:      map[string]string{NMLabel: NMLabelValue},
			Annotations: map[string]string{"yarn.hadoop.apache.org/node-id": n.Name + ":45454"}},
		Spec: corev1.PodSpec{
			NodeName: n.Name, HostNetwork: true, TerminationGracePeriodSeconds: ptr.To[int64](20),
			Containers: []corev1.Container{{
				Name: "nodemanager", Image: PodImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Args:            args,
				SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
				ReadinessProbe: &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
					Path: "/ws/v1/node/info", Port: intstr.FromInt32(8042), Host: "127.0.0.1"}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "host-cgroup", MountPath: "/host-cgroup"},
					{Name: "usr", MountPath: "/usr", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{hostPath("host-cgroup", "/sys/fs/cgroup"), hostPath("usr", "/usr")},
		},
	}
}

// LSPod is a Guaranteed LS service (podbin serve) on the host network.
func (n *Node) LSPod(name string, port int, cpu, memory string) *corev1.Pod {
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"koordinator.sh/qosClass": "LS"}},
		Spec: corev1.PodSpec{
			NodeName: n.Name, HostNetwork: true, TerminationGracePeriodSeconds: ptr.To[int64](5),
			Containers: []corev1.Container{{
				Name: "web", Image: PodImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Args:      []string{"serve", fmt.Sprintf("-listen=127.0.0.1:%d", port), "-hold-mib=16"},
				Resources: corev1.ResourceRequirements{Requests: rl, Limits: rl},
			}},
		},
	}
}

// CreatePod creates a pod and waits until it is Running with every
// container ready.
func (n *Node) CreatePod(ctx context.Context, p *corev1.Pod, timeout time.Duration) (*corev1.Pod, error) {
	if _, err := n.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.Namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	if _, err := n.Client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return n.WaitPodRunning(ctx, p.Namespace, p.Name, timeout)
}

// WaitPodRunning waits until the pod is Running with its containers ready.
func (n *Node) WaitPodRunning(ctx context.Context, ns, name string, timeout time.Duration) (*corev1.Pod, error) {
	var got *corev1.Pod
	var last string
	err := nodebox.WaitFor(timeout, "pod "+ns+"/"+name+" running", func() bool {
		p, err := n.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false
		}
		got = p
		if d := describe(p); d != last {
			n.opts.Logf("pod %s/%s: %s", ns, name, d)
			last = d
		}
		if p.Status.Phase != corev1.PodRunning {
			return false
		}
		for _, c := range p.Status.ContainerStatuses {
			if !c.Ready {
				return false
			}
		}
		return len(p.Status.ContainerStatuses) > 0
	})
	if err != nil {
		return got, fmt.Errorf("%w: %s", err, last)
	}
	return got, nil
}

// describe is a pod's phase and its containers' states, for errors.
func describe(p *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s", p.Status.Phase)
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			fmt.Fprintf(&b, "; %s: %s", c.Type, c.Message)
		}
	}
	for _, c := range p.Status.ContainerStatuses {
		switch {
		case c.State.Waiting != nil:
			fmt.Fprintf(&b, "; %s waiting: %s %s", c.Name, c.State.Waiting.Reason, c.State.Waiting.Message)
		case c.State.Terminated != nil:
			fmt.Fprintf(&b, "; %s terminated: %s (%d) %s", c.Name, c.State.Terminated.Reason, c.State.Terminated.ExitCode, c.State.Terminated.Message)
		default:
			fmt.Fprintf(&b, "; %s running (restarts %d)", c.Name, c.RestartCount)
		}
	}
	return b.String()
}

// Launch asks the NodeManager pod for a YARN container (as the
// ResourceManager would) and returns its id.
func Launch(spec nmemu.Spec) (string, error) {
	body, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	resp, err := http.Post(nmControlURL+"/launch", "application/json", bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("launch a YARN container: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("launch a YARN container: %s: %s", resp.Status, b)
	}
	return string(b), nil
}

// KoordletGet GETs a path of koordlet's HTTP server (host network: the
// chart's -addr=:9316). The timeout is wide: koordlet's /metrics in a TCG
// guest on a loaded host, under memory pressure, has taken over 10 s.
func KoordletGet(path string) ([]byte, error) {
	c := http.Client{Timeout: 45 * time.Second}
	resp, err := c.Get(KoordletMetric + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, b)
	}
	return b, nil
}
