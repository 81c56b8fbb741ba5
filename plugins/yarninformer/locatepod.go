package yarninformer

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
)

// LocateNodeManager finds the NodeManager pod among pods exactly as the
// informer does (the running pod matching selector started last; the host
// IP for a host-network pod) and returns its namespace/name and web
// endpoint on port. The preflight uses it with the node's pods from the
// API server.
func LocateNodeManager(pods []*corev1.Pod, selector string, port int) (pod, endpoint string, err error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return "", "", fmt.Errorf("NodeManager selector %q: %w", selector, err)
	}
	metas := make([]*statesinformer.PodMeta, 0, len(pods))
	for _, p := range pods {
		metas = append(metas, &statesinformer.PodMeta{Pod: p})
	}
	nm, err := locateNM(metas, sel, port)
	if err != nil {
		return "", "", err
	}
	return nm.String(), nm.Endpoint, nil
}
