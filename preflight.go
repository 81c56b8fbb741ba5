package koordletyarn

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	koordclientset "github.com/koordinator-sh/koordinator/pkg/client/clientset/versioned"

	"github.com/koordlet-yarn/koordlet-yarn/preflight"
)

// PreflightFlag is the flag that makes koordlet print the node preflight
// and exit.
const PreflightFlag = "yarn-preflight"

// preflightTimeout bounds the whole preflight (the NodeManager request and
// the pod list have their own, shorter timeouts).
const preflightTimeout = 30 * time.Second

// initPreflightFlag registers --yarn-preflight and its output format on fs.
func (fw *Framework) initPreflightFlag(fs *flag.FlagSet) {
	fs.BoolVar(&fw.preflight, PreflightFlag, false,
		"Inspect this node for the YARN plugin set (cgroups, YARN hierarchy, eBPF, resctrl, QoS files, NodeManager, the NodeSLO's host application and BE thresholds, the ResourceManager, koordlet's RBAC, what each enabled gate does here), print the report and exit: 0 when nothing blocks, 1 otherwise.")
	fs.StringVar(&fw.preflightOutput, "yarn-preflight-output", "text", "Format of the --yarn-preflight report: text or json.")
}

// PreflightRequested reports whether --yarn-preflight was given.
func (fw *Framework) PreflightRequested() bool { return fw.preflight }

// RunPreflight inspects the node with koordlet's parsed flags and gates,
// writes the report to w and returns the exit code. kube returns a client
// for the node's pod list (to find the NodeManager pod); it may fail (no
// API access), which the report then says.
func (fw *Framework) RunPreflight(w io.Writer, restConfig func() (*rest.Config, error)) int {
	if fw.preflightOutput != "text" && fw.preflightOutput != "json" {
		fmt.Fprintf(os.Stderr, "koordlet: --yarn-preflight-output %q: must be text or json\n", fw.preflightOutput)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), preflightTimeout)
	defer cancel()
	node := os.Getenv("NODE_NAME")
	// One client for the pod list and the permission checks.
	kube := sync.OnceValues(func() (kubernetes.Interface, error) {
		rc, err := restConfig()
		if err != nil {
			return nil, err
		}
		return kubernetes.NewForConfig(rc)
	})
	return preflight.Run(ctx, preflight.Options{Config: fw.Config, Pods: nodePods(kube, node, fw.Config.NMTimeout),
		Cluster: clusterChecks(restConfig, kube, node, fw.Config.NMTimeout), JSON: fw.preflightOutput == "json"}, w)
}

// clusterChecks reads the node's NodeSLO and asks the API server what
// koordlet's identity may do (SelfSubjectAccessReview).
func clusterChecks(restConfig func() (*rest.Config, error), kube func() (kubernetes.Interface, error), node string, timeout time.Duration) preflight.ClusterOptions {
	return preflight.ClusterOptions{
		NodeSLO: func(ctx context.Context) (*slov1alpha1.NodeSLO, error) {
			if node == "" {
				return nil, errors.New("NODE_NAME is not set (the DaemonSet sets it)")
			}
			rc, err := restConfig()
			if err != nil {
				return nil, fmt.Errorf("API server client: %w", err)
			}
			client, err := koordclientset.NewForConfig(rc)
			if err != nil {
				return nil, fmt.Errorf("Koordinator client: %w", err)
			}
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			return client.SloV1alpha1().NodeSLOs().Get(ctx, node, metav1.GetOptions{})
		},
		CanI: func(ctx context.Context, a preflight.Access) (bool, error) {
			client, err := kube()
			if err != nil {
				return false, fmt.Errorf("API server client: %w", err)
			}
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			review, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
					Verb: a.Verb, Group: a.Group, Resource: a.Resource, Subresource: a.Subresource}}}, metav1.CreateOptions{})
			if err != nil {
				return false, err
			}
			return review.Status.Allowed, nil
		},
	}
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
