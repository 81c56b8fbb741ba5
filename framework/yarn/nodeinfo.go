package yarn

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

const nodeInfoPath = "/ws/v1/node/info"

// NodeInfo is the part of the NodeManager's GET /ws/v1/node/info used here.
type NodeInfo struct {
	// NodeID is the NM's YARN node id (host:port).
	NodeID   string
	HostName string
	Version  string
}

// DecodeNodeInfo decodes the body of GET /ws/v1/node/info
// ({"nodeInfo":{"id":"host:port",...}}; a "nodeId" field is accepted too).
func DecodeNodeInfo(body []byte) (NodeInfo, error) {
	var doc struct {
		NodeInfo *struct {
			ID       string `json:"id"`
			NodeID   string `json:"nodeId"`
			HostName string `json:"nodeHostName"`
			Version  string `json:"nodeManagerVersion"`
		} `json:"nodeInfo"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return NodeInfo{}, fmt.Errorf("decode NM node info: %w", err)
	}
	if doc.NodeInfo == nil {
		return NodeInfo{}, fmt.Errorf("decode NM node info: no \"nodeInfo\" in %s", shorten(body))
	}
	n := doc.NodeInfo
	id := n.ID
	if id == "" {
		id = n.NodeID
	}
	if id == "" || strings.ContainsAny(id, "/?#%") {
		return NodeInfo{}, fmt.Errorf("decode NM node info: bad node id %s", strconv.Quote(shorten([]byte(id))))
	}
	return NodeInfo{NodeID: id, HostName: n.HostName, Version: n.Version}, nil
}

// NodeInfo fetches and decodes the NM's GET /ws/v1/node/info.
func (c *NMClient) NodeInfo(ctx context.Context) (NodeInfo, error) {
	body, done, err := c.open(ctx, nodeInfoPath)
	if err != nil {
		return NodeInfo{}, err
	}
	defer done()
	b, err := readCapped(body, maxNodeInfoBytes, 0)
	if err != nil {
		return NodeInfo{}, fmt.Errorf("NM %s node info: %w", c.Endpoint, err)
	}
	info, err := DecodeNodeInfo(b)
	if err != nil {
		return NodeInfo{}, fmt.Errorf("NM %s: %w", c.Endpoint, err)
	}
	return info, nil
}

// maxNodeInfoBytes caps the NM's node info document (a few hundred bytes).
const maxNodeInfoBytes = 1 << 20
