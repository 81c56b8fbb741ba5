package preflight

import (
	"context"
	"errors"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	koordclientset "github.com/koordinator-sh/koordinator/pkg/client/clientset/versioned"
)

// APIServerChecks reads the node's NodeSLO and asks the API server what
// koordlet's identity may do (SelfSubjectAccessReview).
func APIServerChecks(restConfig func() (*rest.Config, error), kube func() (kubernetes.Interface, error), node string, timeout time.Duration) ClusterOptions {
	return ClusterOptions{
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
		CanI: func(ctx context.Context, a Access) (bool, error) {
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

// NodePods lists the pods bound to node through the API server.
func NodePods(kube func() (kubernetes.Interface, error), node string, timeout time.Duration) func(context.Context) ([]*corev1.Pod, error) {
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
