package yarninformer

import (
	"fmt"
	"net"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
)

// nmPod is the NodeManager pod found in koordlet's pod list.
type nmPod struct {
	Namespace, Name string
	Endpoint        string
	// NodeID is the pod's yarn.hadoop.apache.org/node-id annotation.
	NodeID string
	// Pod is the pod itself.
	Pod *corev1.Pod
}

// String returns namespace/name, or "" when the endpoint came from a flag.
func (n nmPod) String() string {
	if n.Name == "" {
		return ""
	}
	return n.Namespace + "/" + n.Name
}

// locateNM finds the running NodeManager pod matching sel among pods and
// returns its web endpoint: the host IP for a host-network pod, the pod IP
// otherwise, with port. When several pods match, the most recently started
// running one wins.
func locateNM(pods []*statesinformer.PodMeta, sel labels.Selector, port int) (nmPod, error) {
	var best *corev1.Pod
	matched := 0
	for _, pm := range pods {
		if pm == nil || pm.Pod == nil {
			continue
		}
		pod := pm.Pod
		if !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		matched++
		if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning {
			continue
		}
		if best == nil || startTime(pod).After(startTime(best)) {
			best = pod
		}
	}
	if best == nil {
		if matched > 0 {
			return nmPod{}, fmt.Errorf("%d pod(s) match NodeManager selector %q but none is running", matched, sel)
		}
		return nmPod{}, fmt.Errorf("no pod on this node matches NodeManager selector %q", sel)
	}
	ip := best.Status.PodIP
	if best.Spec.HostNetwork && best.Status.HostIP != "" {
		ip = best.Status.HostIP
	}
	if ip == "" {
		return nmPod{}, fmt.Errorf("NodeManager pod %s/%s has no IP yet", best.Namespace, best.Name)
	}
	return nmPod{
		Namespace: best.Namespace,
		Name:      best.Name,
		Endpoint:  "http://" + net.JoinHostPort(ip, strconv.Itoa(port)),
		NodeID:    best.Annotations[NodeIDAnnotation],
		Pod:       best,
	}, nil
}

func startTime(pod *corev1.Pod) time.Time {
	if pod.Status.StartTime != nil {
		return pod.Status.StartTime.Time
	}
	return pod.CreationTimestamp.Time
}
