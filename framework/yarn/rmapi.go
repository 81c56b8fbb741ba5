package yarn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// RMApp is the part of the ResourceManager's application report
// (GET /ws/v1/cluster/apps/{appid}, Hadoop's AppInfo) the plugins use.
// Numbers the RM renders as strings are accepted; a field that is absent or
// not a number reads 0.
type RMApp struct {
	ID              string
	User            string
	Name            string
	Queue           string
	State           string
	FinalStatus     string
	ApplicationType string
	// ApplicationTags are the application's tags (the RM sends them
	// comma-separated).
	ApplicationTags []string
	Priority        int64
	// AMContainerLogs is the AM container's log link, whose path names the
	// AM container (.../containerlogs/<container id>/<user>).
	AMContainerLogs   string
	AMHostHTTPAddress string
	StartedTime       int64
	AllocatedMB       int64
	AllocatedVCores   int64
	RunningContainers int64
}

// AMContainerID returns the AM container named in AMContainerLogs.
func (a *RMApp) AMContainerID() (ContainerID, bool) {
	for _, part := range strings.Split(a.AMContainerLogs, "/") {
		if strings.HasPrefix(part, "container_") {
			id, err := ParseContainerID(part)
			return id, err == nil
		}
	}
	return ContainerID{}, false
}

type rawApp struct {
	ID                string  `json:"id"`
	User              string  `json:"user"`
	Name              string  `json:"name"`
	Queue             string  `json:"queue"`
	State             string  `json:"state"`
	FinalStatus       string  `json:"finalStatus"`
	ApplicationType   string  `json:"applicationType"`
	ApplicationTags   string  `json:"applicationTags"`
	Priority          flexNum `json:"priority"`
	AMContainerLogs   string  `json:"amContainerLogs"`
	AMHostHTTPAddress string  `json:"amHostHttpAddress"`
	StartedTime       flexNum `json:"startedTime"`
	AllocatedMB       flexNum `json:"allocatedMB"`
	AllocatedVCores   flexNum `json:"allocatedVCores"`
	RunningContainers flexNum `json:"runningContainers"`
}

// DecodeRMApp decodes the body of GET /ws/v1/cluster/apps/{appid}
// ({"app":{...}}).
func DecodeRMApp(body []byte) (*RMApp, error) {
	var doc struct {
		App *rawApp `json:"app"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("decode RM application: %w", err)
	}
	if doc.App == nil || doc.App.ID == "" {
		return nil, fmt.Errorf("decode RM application: no \"app\" with an id in %s", shorten(body))
	}
	r := doc.App
	num := func(n flexNum) int64 {
		v, _ := n.inRange(-1<<53, 1<<53)
		return v
	}
	app := &RMApp{ID: r.ID, User: r.User, Name: r.Name, Queue: r.Queue, State: r.State,
		FinalStatus: r.FinalStatus, ApplicationType: r.ApplicationType,
		Priority: num(r.Priority), AMContainerLogs: r.AMContainerLogs, AMHostHTTPAddress: r.AMHostHTTPAddress,
		StartedTime: num(r.StartedTime), AllocatedMB: num(r.AllocatedMB), AllocatedVCores: num(r.AllocatedVCores),
		RunningContainers: num(r.RunningContainers)}
	for _, t := range strings.Split(r.ApplicationTags, ",") {
		if t = strings.TrimSpace(t); t != "" {
			app.ApplicationTags = append(app.ApplicationTags, t)
		}
	}
	return app, nil
}

// App fetches the application report of appID (application_<ts>_<seq>).
// An application the RM does not know is an *RMHTTPError with 404.
func (c *RMClient) App(ctx context.Context, appID string) (*RMApp, error) {
	if !validAppID(appID) {
		return nil, fmt.Errorf("invalid application id %q", appID)
	}
	body, err := c.Do(ctx, http.MethodGet, "/ws/v1/cluster/apps/"+appID, nil)
	if err != nil {
		return nil, err
	}
	return DecodeRMApp(body)
}

// validAppID accepts application_<digits>_<digits> only, so an id read from
// the node never becomes another RM path.
func validAppID(s string) bool {
	rest, ok := strings.CutPrefix(s, "application_")
	if !ok {
		return false
	}
	ts, seq, ok := strings.Cut(rest, "_")
	return ok && allDigits(ts) && allDigits(seq)
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// NodeResource is a node's resource as the RM's ResourceInfo renders it.
type NodeResource struct {
	// MemoryMB is the memory in MiB (YARN's "MB").
	MemoryMB int64 `json:"memory"`
	// VCores is the number of virtual cores.
	VCores int64 `json:"vCores"`
}

// ResourceOption is the body of updateNodeResource (Hadoop's
// ResourceOptionInfo): the node's new total resource and the over-commit
// timeout in milliseconds (-1: containers above the new total are never
// preempted for it).
type ResourceOption struct {
	Resource          NodeResource `json:"resource"`
	OverCommitTimeout int64        `json:"overCommitTimeout"`
}

// UpdateNodeResource sets the total resource of the YARN node nodeID
// (host:port, the NM's node id) through the RM web service
// POST /ws/v1/cluster/nodes/{nodeId}/resource (RMWebServices.updateNodeResource,
// Hadoop 3.2 and later), with overCommitTimeout -1: containers above the
// new total are never preempted for it. The RM needs an authenticated
// caller for it (User, with simple authentication).
func (c *RMClient) UpdateNodeResource(ctx context.Context, nodeID string, r NodeResource) error {
	return c.UpdateNodeResourceWithTimeout(ctx, nodeID, r, -1)
}

// UpdateNodeResourceWithTimeout is UpdateNodeResource with an over-commit
// timeout: when the new total is below what the node has allocated, the
// RM's scheduler (AbstractYarnScheduler, Hadoop 3.3 and later) at once asks
// the ApplicationMasters for the containers above it (a preemption
// message), and at the first node heartbeat after the timeout preempts
// them (exit status PREEMPTED), non-AM containers first. A negative
// timeout is sent as -1 (never). The RM keeps a node's timeout until it
// restarts: a later -1 does not clear it.
func (c *RMClient) UpdateNodeResourceWithTimeout(ctx context.Context, nodeID string, r NodeResource, timeout time.Duration) error {
	if nodeID == "" || strings.ContainsAny(nodeID, "/?#%") {
		return fmt.Errorf("invalid YARN node id %q", nodeID)
	}
	if r.MemoryMB < 0 || r.VCores < 0 {
		return fmt.Errorf("update YARN node %s: negative resource %+v", nodeID, r)
	}
	ms := int64(-1)
	if timeout >= 0 {
		ms = timeout.Milliseconds()
	}
	body, err := json.Marshal(ResourceOption{Resource: r, OverCommitTimeout: ms})
	if err != nil {
		return fmt.Errorf("encode resource option: %w", err)
	}
	if _, err := c.Do(ctx, http.MethodPost, "/ws/v1/cluster/nodes/"+url.PathEscape(nodeID)+"/resource", body); err != nil {
		return fmt.Errorf("update YARN node %s resource to %d MB, %d vcores (over-commit timeout %d ms): %w", nodeID, r.MemoryMB, r.VCores, ms, err)
	}
	return nil
}

// rmNode is the part of the RM's NodeInfo (GET /ws/v1/cluster/nodes/{id})
// the read-back needs: totalResource (Hadoop 2.8 and later), else the used
// and available memory and vcores, whose sums are the total.
type rmNode struct {
	Node *struct {
		ID            string        `json:"id"`
		TotalResource *NodeResource `json:"totalResource"`
		UsedMemoryMB  *int64        `json:"usedMemoryMB"`
		AvailMemoryMB *int64        `json:"availMemoryMB"`
		UsedVCores    *int64        `json:"usedVirtualCores"`
		AvailVCores   *int64        `json:"availableVirtualCores"`
	} `json:"node"`
}

// NodeResource returns the total resource the RM holds for the YARN node
// nodeID (GET /ws/v1/cluster/nodes/{nodeId}): what updateNodeResource set,
// or, after an RM restart, a failover or the NodeManager registering again,
// the NodeManager's own configured capacity.
func (c *RMClient) NodeResource(ctx context.Context, nodeID string) (NodeResource, error) {
	if nodeID == "" || strings.ContainsAny(nodeID, "/?#%") {
		return NodeResource{}, fmt.Errorf("invalid YARN node id %q", nodeID)
	}
	body, err := c.Do(ctx, http.MethodGet, "/ws/v1/cluster/nodes/"+url.PathEscape(nodeID), nil)
	if err != nil {
		return NodeResource{}, fmt.Errorf("read YARN node %s from the ResourceManager: %w", nodeID, err)
	}
	r, err := DecodeRMNodeResource(body)
	if err != nil {
		return NodeResource{}, fmt.Errorf("read YARN node %s from the ResourceManager: %w", nodeID, err)
	}
	return r, nil
}

// DecodeRMNodeResource decodes a node's total resource from the RM's
// NodeInfo JSON.
func DecodeRMNodeResource(body []byte) (NodeResource, error) {
	var n rmNode
	if err := json.Unmarshal(body, &n); err != nil {
		return NodeResource{}, fmt.Errorf("decode node info: %w", err)
	}
	if n.Node == nil {
		return NodeResource{}, errors.New("decode node info: no \"node\" object")
	}
	var r NodeResource
	switch {
	case n.Node.TotalResource != nil:
		r = *n.Node.TotalResource
	case n.Node.UsedMemoryMB != nil && n.Node.AvailMemoryMB != nil && n.Node.UsedVCores != nil && n.Node.AvailVCores != nil:
		r = NodeResource{MemoryMB: *n.Node.UsedMemoryMB + *n.Node.AvailMemoryMB, VCores: *n.Node.UsedVCores + *n.Node.AvailVCores}
	default:
		return NodeResource{}, errors.New("decode node info: neither totalResource nor used and available memory and vcores")
	}
	if r.MemoryMB < 0 || r.VCores < 0 {
		return NodeResource{}, fmt.Errorf("decode node info: negative resource %+v", r)
	}
	return r, nil
}

// ClusterInfo is the part of GET /ws/v1/cluster/info the plugin set shows.
type ClusterInfo struct {
	// State is the RM service state (STARTED, ...); HAState ACTIVE or
	// STANDBY; ResourceManagerVersion the Hadoop version.
	State                  string `json:"state"`
	HAState                string `json:"haState"`
	ResourceManagerVersion string `json:"resourceManagerVersion"`
}

// ClusterInfo asks the active ResourceManager for its cluster information
// (a standby one is skipped as for every request).
func (c *RMClient) ClusterInfo(ctx context.Context) (ClusterInfo, error) {
	body, err := c.Do(ctx, http.MethodGet, "/ws/v1/cluster/info", nil)
	if err != nil {
		return ClusterInfo{}, err
	}
	var v struct {
		ClusterInfo *ClusterInfo `json:"clusterInfo"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return ClusterInfo{}, fmt.Errorf("decode /ws/v1/cluster/info: %w", err)
	}
	if v.ClusterInfo == nil {
		return ClusterInfo{}, errors.New("decode /ws/v1/cluster/info: no clusterInfo")
	}
	return *v.ClusterInfo, nil
}

// Conf returns the value of one property of the ResourceManager's own
// configuration (GET /conf?name=..., Hadoop's ConfServlet, in JSON: every
// Hadoop daemon's web server has it unless instrumentation needs an admin,
// hadoop.security.instrumentation.requires.admin). A property the RM does
// not have is an *RMHTTPError with 404.
func (c *RMClient) Conf(ctx context.Context, name string) (string, error) {
	body, err := c.Do(ctx, http.MethodGet, "/conf?name="+url.QueryEscape(name), nil)
	if err != nil {
		return "", fmt.Errorf("read %s from the ResourceManager's configuration: %w", name, err)
	}
	return DecodeConfProperty(body, name)
}

// DecodeConfProperty reads the value of name from ConfServlet's JSON: one
// {"property":{"key","value",...}} for a named request, or the whole
// {"properties":[...]}.
func DecodeConfProperty(body []byte, name string) (string, error) {
	type prop struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	}
	var doc struct {
		Property   *prop  `json:"property"`
		Properties []prop `json:"properties"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return "", fmt.Errorf("decode the ResourceManager's configuration: %w", err)
	}
	if doc.Property != nil && doc.Property.Key == name {
		return doc.Property.Value, nil
	}
	for _, p := range doc.Properties {
		if p.Key == name {
			return p.Value, nil
		}
	}
	return "", fmt.Errorf("decode the ResourceManager's configuration: no %s in %s", name, shorten(body))
}

// The ResourceManager's node heartbeat settings (YarnConfiguration).
const (
	ConfNMHeartbeatInterval    = "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms"
	ConfNMHeartbeatScaling     = "yarn.resourcemanager.nodemanagers.heartbeat-interval-scaling-enable"
	ConfNMHeartbeatIntervalMax = "yarn.resourcemanager.nodemanagers.heartbeat-interval-max-ms"
)

// NodeHeartbeatInterval returns the longest interval between two heartbeats
// of a NodeManager the RM asks for: heartbeat-interval-ms, or
// heartbeat-interval-max-ms when the RM scales the interval with its load.
// The RM acts on a node's over-commit timeout at the node's heartbeats.
func (c *RMClient) NodeHeartbeatInterval(ctx context.Context) (time.Duration, error) {
	ms := func(name string) (time.Duration, error) {
		v, err := c.Conf(ctx, name)
		if err != nil {
			return 0, err
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n <= 0 || n > int64(time.Hour/time.Millisecond) {
			return 0, fmt.Errorf("the ResourceManager's %s is %q, not a number of milliseconds up to an hour", name, v)
		}
		return time.Duration(n) * time.Millisecond, nil
	}
	hb, err := ms(ConfNMHeartbeatInterval)
	if err != nil {
		return 0, err
	}
	if s, err := c.Conf(ctx, ConfNMHeartbeatScaling); err == nil && strings.EqualFold(strings.TrimSpace(s), "true") {
		if m, err := ms(ConfNMHeartbeatIntervalMax); err == nil {
			hb = max(hb, m)
		}
	}
	return hb, nil
}
