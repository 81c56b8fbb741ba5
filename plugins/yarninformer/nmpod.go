package yarninformer

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"

	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// NodeManagerPod returns the NodeManager pod as the informer selects it
// from koordlet's pods (nil when none runs, or before Setup).
func (p *Plugin) NodeManagerPod() *corev1.Pod {
	if p.selector == nil || p.pods == nil {
		return nil
	}
	nm, err := locateNM(p.pods(), p.selector, p.cfg.NMPort)
	if err != nil {
		return nil
	}
	return nm.Pod
}

// ListNM lists the NodeManager's containers now, at the endpoint the
// informer uses (for a consumer that cannot wait for the next resync).
func (p *Plugin) ListNM(ctx context.Context) ([]yarn.NMContainer, error) {
	endpoint := p.cfg.NMEndpoint
	if endpoint == "" {
		if p.selector == nil {
			return nil, fmt.Errorf("the container informer is not set up")
		}
		var pods []*statesinformer.PodMeta
		if p.pods != nil {
			pods = p.pods()
		}
		nm, err := locateNM(pods, p.selector, p.cfg.NMPort)
		if err != nil {
			return nil, err
		}
		endpoint = nm.Endpoint
	}
	c := &yarn.NMClient{Endpoint: endpoint, Timeout: p.cfg.NMTimeout, MaxResponseBytes: p.cfg.NMMaxResponseBytes, HTTPClient: p.client, Metrics: p.NMMetrics}
	return c.ListContainers(ctx)
}
