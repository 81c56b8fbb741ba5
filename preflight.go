package koordletyarn

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/koordlet-yarn/koordlet-yarn/preflight"
)

// PreflightFlag is the flag that makes koordlet print the node preflight
// and exit.
const PreflightFlag = "yarn-preflight"

// preflightTimeout bounds the whole preflight (the NodeManager request and
// the pod list have their own, shorter timeouts).
const preflightTimeout = 30 * time.Second

// initPreflightFlag registers --yarn-preflight on fs.
func (fw *Framework) initPreflightFlag(fs *flag.FlagSet) {
	fs.BoolVar(&fw.preflight, PreflightFlag, false,
		"Inspect this node for the YARN plugin set (cgroups, YARN hierarchy, eBPF, resctrl, QoS files, NodeManager, what each enabled gate does here), print the report and exit: 0 when nothing blocks, 1 otherwise.")
}

// PreflightRequested reports whether --yarn-preflight was given.
func (fw *Framework) PreflightRequested() bool { return fw.preflight }

// RunPreflight inspects the node with koordlet's parsed flags and gates,
// writes the report to w and returns the exit code. kube returns a client
// for the node's pod list (to find the NodeManager pod); it may fail (no
// API access), which the report then says.
func (fw *Framework) RunPreflight(w io.Writer, kube func() (kubernetes.Interface, error)) int {
	ctx, cancel := context.WithTimeout(context.Background(), preflightTimeout)
	defer cancel()
	return preflight.Run(ctx, preflight.Options{Config: fw.Config, Pods: nodePods(kube, os.Getenv("NODE_NAME"), fw.Config.NMTimeout)}, w)
}

// nodePods lists the pods bound to node through the API server.
func nodePods(kube func() (kubernetes.Interface, error), node string, timeout time.Duration) func(context.Context) ([]*corev1.Pod, error) {
	return func(ctx context.Context) ([]*corev1.Pod, error) {
		if node == "" {
			return nil, errors.New("NODE_NAME is not set (the DaemonSet sets it)")
		}
		client, err := kube()
		if err != nil {
			return nil, fmt.Errorf("API server client: %w", err)
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		list, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
		if err != nil {
			return nil, fmt.Errorf("list the pods of node %s: %w", node, err)
		}
		pods := make([]*corev1.Pod, 0, len(list.Items))
		for i := range list.Items {
			pods = append(pods, &list.Items[i])
		}
		return pods, nil
	}
}
