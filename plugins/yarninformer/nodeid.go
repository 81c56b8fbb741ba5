package yarninformer

import (
	"context"

	"k8s.io/klog/v2"
)

// NodeIDAnnotation on the NodeManager pod names its YARN node id, as
// upstream yarn-copilot's operator reads it.
const NodeIDAnnotation = "yarn.hadoop.apache.org/node-id"

// Sources of the NM's node id.
const (
	NodeIDFromPod    = "pod-annotation"
	NodeIDFromNMInfo = "nm-node-info"
)

// resolveNodeID records the NM's YARN node id after an NM list succeeded:
// the NM pod's annotation when it has one, else the NM's /ws/v1/node/info,
// asked once per endpoint (again at the next resync after a failure).
func (p *Plugin) resolveNodeID(ctx context.Context, target nmPod) {
	if target.NodeID != "" {
		p.setStatus(func(s *Status) { s.NMNodeID, s.NMNodeIDSource = target.NodeID, NodeIDFromPod })
		return
	}
	if p.nodeIDEndpoint == target.Endpoint && p.Status().NMNodeID != "" {
		return
	}
	info, err := p.nm.NodeInfo(ctx)
	if err != nil {
		klog.V(2).Infof("yarn: NodeManager node id not known yet: %v", err)
		return
	}
	p.nodeIDEndpoint = target.Endpoint
	if p.Status().NMNodeID != info.NodeID {
		klog.Infof("yarn: NodeManager node id %s (from %s)", info.NodeID, target.Endpoint)
	}
	p.setStatus(func(s *Status) { s.NMNodeID, s.NMNodeIDSource = info.NodeID, NodeIDFromNMInfo })
}

// NodeID returns the NM's YARN node id, or "" when not known yet.
func (p *Plugin) NodeID() string { return p.Status().NMNodeID }
