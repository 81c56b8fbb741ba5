package yarninformer

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/koordinator-sh/koordinator/apis/extension"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	koordletutil "github.com/koordinator-sh/koordinator/pkg/koordlet/util"

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

// NodeManagerPriority is the NodeManager pod's koord priority, which YARN
// containers rank with by default (koord-batch's lowest before the pod is
// known).
func (p *Plugin) NodeManagerPriority() int64 {
	if p.pods != nil {
		for _, pm := range p.pods() {
			if pm != nil && pm.Pod != nil && p.IsNodeManagerPod(pm.Pod) {
				return int64(*extension.GetPodPriorityValueWithDefault(pm.Pod))
			}
		}
	}
	return int64(extension.PriorityBatchValueMin)
}

// NodeManagerPodCgroup is the NodeManager pod's cgroup (relative to the
// mount root, as koordlet names pod cgroups) and its namespace/name.
func (p *Plugin) NodeManagerPodCgroup() (dir, pod string, ok bool) {
	nm := p.NodeManagerPod()
	if nm == nil {
		return "", "", false
	}
	return koordletutil.GetPodCgroupParentDir(nm), nm.Namespace + "/" + nm.Name, true
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
