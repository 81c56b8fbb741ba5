package nodebox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	koordclient "github.com/koordinator-sh/koordinator/pkg/client/clientset/versioned"

	"github.com/koordlet-yarn/koordlet-yarn/framework/nodemem"
)

// crdFiles are the Koordinator CRDs koordlet needs, shipped in the
// koordinator module.
var crdFiles = []string{
	"slo.koordinator.sh_nodeslos.yaml",
	"slo.koordinator.sh_nodemetrics.yaml",
	"topology.node.k8s.io_noderesourcetopologies.yaml",
	"scheduling.koordinator.sh_devices.yaml",
}

// readCRDs reads CRD files of crdDir.
func readCRDs(crdDir string, files []string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(crdDir, f))
		if err != nil {
			return nil, fmt.Errorf("read CRD: %w", err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(b, crd); err != nil {
			return nil, fmt.Errorf("decode CRD %s: %w", f, err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

// applyCRDs creates the CRDs (one a shared API server has from an earlier
// box is kept) and waits until each is established.
func applyCRDs(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, crd := range crds {
		_, err := client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create CRD %s: %w", crd.Name, err)
		}
		name := crd.Name
		if err := waitFor(30*time.Second, "CRD "+name+" established", func() bool {
			got, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true
				}
			}
			return false
		}); err != nil {
			return err
		}
	}
	return nil
}

func createNode(ctx context.Context, kube kubernetes.Interface, name string) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	created, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create node: %w", err)
	}
	total, _, err := MemInfo()
	if err != nil {
		return err
	}
	// The node's capacity is this machine's: koordlet's memory thresholds are
	// percentages of it and its usage comes from /proc/meminfo.
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(total, resource.BinarySI),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	created.Status = corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity,
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: "127.0.0.1"},
			{Type: corev1.NodeHostName, Address: name},
		},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(), Reason: "KubeletReady"}},
		NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.35.4", OperatingSystem: "linux", Architecture: "amd64"},
	}
	if _, err := kube.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update node status: %w", err)
	}
	return nil
}

func createNodeSLO(ctx context.Context, koord koordclient.Interface, name string, spec slov1alpha1.NodeSLOSpec) error {
	slo := &slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	if _, err := koord.SloV1alpha1().NodeSLOs().Create(ctx, slo, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create NodeSLO: %w", err)
	}
	return nil
}

// MemInfo returns this machine's MemTotal and used memory as koordlet-yarn's
// memory evictor reads it (MemTotal − MemAvailable less the free pages on
// the per-CPU lists, framework/nodemem), in bytes.
func MemInfo() (total, used int64, err error) {
	u, err := nodemem.Read("/proc")
	if err != nil {
		return 0, 0, err
	}
	return u.Total, u.Used(), nil
}

// PodSpec describes one pod of the box.
type PodSpec struct {
	Namespace, Name string
	Labels          map[string]string
	HostNetwork     bool
	// CPU and Memory are the container's requests = limits; empty for BestEffort.
	CPU, Memory string
	// Extended are extra requests = limits (e.g. kubernetes.io/batch-cpu,
	// kubernetes.io/batch-memory); they do not change the pod's QoS class.
	Extended corev1.ResourceList
}

// runningPod is a pod as the kubelet stub reports it, with its cgroups.
type runningPod struct {
	pod             corev1.Pod
	cgroupDir       string // pod cgroup, relative to the controller mounts
	containerCgroup string
}

func createPod(ctx context.Context, kube kubernetes.Interface, l Layout, node string, spec PodSpec, ip string) (*runningPod, error) {
	c := corev1.Container{Name: "main", Image: "nodebox/none"}
	qos := corev1.PodQOSBestEffort
	if spec.CPU != "" {
		rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(spec.CPU), corev1.ResourceMemory: resource.MustParse(spec.Memory)}
		c.Resources = corev1.ResourceRequirements{Requests: rl, Limits: rl}
		qos = corev1.PodQOSGuaranteed
	}
	if len(spec.Extended) > 0 {
		if c.Resources.Requests == nil {
			c.Resources.Requests, c.Resources.Limits = corev1.ResourceList{}, corev1.ResourceList{}
		}
		for name, q := range spec.Extended {
			c.Resources.Requests[name], c.Resources.Limits[name] = q, q
		}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: spec.Namespace, Name: spec.Name, Labels: spec.Labels},
		Spec:       corev1.PodSpec{NodeName: node, HostNetwork: spec.HostNetwork, Containers: []corev1.Container{c}},
	}
	if spec.Namespace != "default" {
		_, _ = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: spec.Namespace}}, metav1.CreateOptions{})
	}
	created, err := kube.CoreV1().Pods(spec.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create pod %s/%s: %w", spec.Namespace, spec.Name, err)
	}
	sum := sha256.Sum256([]byte(created.UID))
	containerID := hex.EncodeToString(sum[:])
	now := metav1.Now()
	podIP := ip
	if spec.HostNetwork {
		podIP = "127.0.0.1"
	}
	created.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, HostIP: "127.0.0.1", PodIP: podIP, StartTime: &now, QOSClass: qos,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: "main", Ready: true, Image: c.Image, ContainerID: "containerd://" + containerID,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		}},
	}
	updated, err := kube.CoreV1().Pods(spec.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("update pod status %s/%s: %w", spec.Namespace, spec.Name, err)
	}
	dir := l.podDir(qos, string(created.UID))
	return &runningPod{pod: *updated, cgroupDir: dir, containerCgroup: l.containerDir(dir, containerID)}, nil
}
