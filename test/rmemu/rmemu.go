// Package rmemu emulates the YARN ResourceManager REST API for node-level
// tests: GET /ws/v1/cluster/apps/{appid} (a minimal application report),
// POST /ws/v1/cluster/nodes/{nodeId}/resource (updateNodeResource, every
// call recorded in order), GET /ws/v1/cluster/info and GET /conf?name=
// (Hadoop's ConfServlet in JSON, for the properties set with SetConf: an RM
// with a slow node heartbeat is one whose heartbeat-interval-ms is long). It can play a standby
// RM the way Hadoop's RMWebAppFilter answers (a 307 to the active RM with
// "This is standby RM...", or "There is no active RM right now." when it
// knows none), and fail like a broken one (slow, garbage, 500), and it can
// require a user (simple authentication's user.name). Given a node's
// containers (SetNodeContainers), it ends an over-commit after its timeout
// as Hadoop's scheduler does (overcommit.go).
package rmemu

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// Mode is how the emulator answers.
type Mode string

// Modes.
const (
	ModeActive  Mode = "active"  // documented answers
	ModeStandby Mode = "standby" // RMWebAppFilter's standby answers
	ModeSlow    Mode = "slow"    // hang until the client gives up
	ModeGarbage Mode = "garbage" // 200 with a body that is not JSON
	ModeError   Mode = "error"   // HTTP 500
)

// Call is one updateNodeResource call the RM accepted or refused.
type Call struct {
	Time     time.Time
	NodeID   string
	User     string
	Resource yarn.NodeResource
	// OverCommitTimeout as sent.
	OverCommitTimeout int64
	// Mode the RM was in when it was called; only ModeActive calls
	// changed the node.
	Mode Mode
	// armed: the call set the node's over-commit deadline.
	armed bool
}

// App is an application the emulator reports.
type App struct {
	ID, User, Name, Queue, State, ApplicationType string
	Tags                                          []string
	Priority                                      int64
	// AMContainer is the AM container's id (for amContainerLogs).
	AMContainer string
}

// RM is one emulated ResourceManager; it is an http.Handler.
type RM struct {
	mu sync.Mutex
	// mode and activeURL (where a standby redirects; empty: it knows no
	// active RM).
	mode      Mode
	activeURL string
	// requireUser, when set, refuses writes without user.name, as
	// RMWebServices does for an unauthenticated caller.
	requireUser bool
	apps        map[string]App
	calls       []Call
	nodes       map[string]yarn.NodeResource
	nodeReads   int
	conf        map[string]string
	// running, overcommit (a node's over-commit deadline), preempted and
	// stop: the scheduler's side of updateNodeResource (overcommit.go).
	running    map[string]NodeContainers
	overcommit map[string]time.Time
	preempted  []Preemption
	killed     map[string]bool
	stop       chan struct{}
	beating    sync.WaitGroup
	// beat serializes heartbeats.
	beat sync.Mutex
}

// New returns an active RM with no applications.
func New() *RM {
	return &RM{mode: ModeActive, apps: map[string]App{}, nodes: map[string]yarn.NodeResource{}, conf: map[string]string{},
		overcommit: map[string]time.Time{}}
}

// SetConf sets a property of the RM's configuration served at /conf (an
// empty value removes it: /conf?name= answers 404, as for a property the
// RM does not have).
func (rm *RM) SetConf(name, value string) {
	rm.mu.Lock()
	if value == "" {
		delete(rm.conf, name)
	} else {
		rm.conf[name] = value
	}
	rm.mu.Unlock()
}

// SetMode sets how the RM answers from now on; activeURL is where a standby
// redirects (empty: it knows no active RM).
func (rm *RM) SetMode(m Mode, activeURL string) {
	rm.mu.Lock()
	rm.mode, rm.activeURL = m, strings.TrimRight(activeURL, "/")
	rm.mu.Unlock()
}

// RequireUser makes writes without user.name fail with 403.
func (rm *RM) RequireUser(on bool) {
	rm.mu.Lock()
	rm.requireUser = on
	rm.mu.Unlock()
}

// AddApp adds or replaces an application.
func (rm *RM) AddApp(a App) {
	rm.mu.Lock()
	rm.apps[a.ID] = a
	rm.mu.Unlock()
}

// Calls returns the updateNodeResource calls so far, in order.
func (rm *RM) Calls() []Call {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	return append([]Call(nil), rm.calls...)
}

// Node returns the resource the RM holds for nodeID after the accepted
// updates.
func (rm *RM) Node(nodeID string) (yarn.NodeResource, bool) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	r, ok := rm.nodes[nodeID]
	return r, ok
}

// RegisterNode sets nodeID's resource as a NodeManager's (re-)registration
// does: the capacity from its yarn-site, whatever updateNodeResource set
// before (what an RM restart, a failover or an NM reconnect leaves), and
// no over-commit timeout (a new SchedulerNode).
func (rm *RM) RegisterNode(nodeID string, r yarn.NodeResource) {
	rm.mu.Lock()
	rm.nodes[nodeID] = r
	delete(rm.overcommit, nodeID)
	rm.mu.Unlock()
}

// NodeReads counts the GET /ws/v1/cluster/nodes/{id} requests answered.
func (rm *RM) NodeReads() int {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	return rm.nodeReads
}

// ServeHTTP answers one REST request.
func (rm *RM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rm.mu.Lock()
	mode, active, requireUser := rm.mode, rm.activeURL, rm.requireUser
	rm.mu.Unlock()
	path := strings.TrimSuffix(r.URL.Path, "/")
	if mode != ModeActive && strings.HasSuffix(path, "/resource") && r.Method == http.MethodPost {
		rm.record(r, mode, path)
	}
	switch mode {
	case ModeStandby:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if active != "" {
			to := active + r.URL.RequestURI()
			w.Header().Set("Location", to)
			w.WriteHeader(http.StatusTemporaryRedirect)
			fmt.Fprintf(w, "This is standby RM. The redirect url is: %s\n", to)
			return
		}
		fmt.Fprint(w, "There is no active RM right now.\nHA Zookeeper Connection State: CONNECTED\n")
		return
	case ModeSlow:
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
		return
	case ModeGarbage:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "<html>\x00{{{")
		return
	case ModeError:
		http.Error(w, "emulated ResourceManager failure", http.StatusInternalServerError)
		return
	}
	switch {
	case path == "/ws/v1/cluster/info" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"clusterInfo": map[string]any{
			"id": 1700000000000, "state": "STARTED", "haState": "ACTIVE", "resourceManagerVersion": "3.3.6-emulated"}})
	case path == "/conf" && r.Method == http.MethodGet:
		rm.serveConf(w, r.URL.Query().Get("name"))
	case strings.HasPrefix(path, "/ws/v1/cluster/apps/") && r.Method == http.MethodGet:
		rm.serveApp(w, strings.TrimPrefix(path, "/ws/v1/cluster/apps/"))
	case strings.HasPrefix(path, "/ws/v1/cluster/nodes/") && !strings.Contains(strings.TrimPrefix(path, "/ws/v1/cluster/nodes/"), "/") && r.Method == http.MethodGet:
		rm.serveNode(w, strings.TrimPrefix(path, "/ws/v1/cluster/nodes/"))
	case strings.HasPrefix(path, "/ws/v1/cluster/nodes/") && strings.HasSuffix(path, "/resource"):
		if r.Method != http.MethodPost {
			remoteException(w, http.StatusMethodNotAllowed, "WebApplicationException", "method not allowed")
			return
		}
		if requireUser && r.URL.Query().Get("user.name") == "" {
			rm.record(r, "unauthenticated", path)
			remoteException(w, http.StatusForbidden, "AuthorizationException", "Unable to obtain user name, user not authenticated")
			return
		}
		c, err := rm.record(r, ModeActive, path)
		if err != nil {
			remoteException(w, http.StatusBadRequest, "BadRequestException", err.Error())
			return
		}
		if c.armed && c.OverCommitTimeout == 0 {
			// signalContainersIfOvercommitted(node, kill: timeout == 0):
			// killed during the update, not at the next heartbeat.
			rm.Heartbeat(c.NodeID, c.Time)
		}
		writeJSON(w, http.StatusOK, map[string]any{"memory": c.Resource.MemoryMB, "vCores": c.Resource.VCores})
	default:
		remoteException(w, http.StatusNotFound, "NotFoundException", "no such resource "+path)
	}
}

// record decodes and records an updateNodeResource call; in ModeActive an
// accepted call changes the node.
func (rm *RM) record(r *http.Request, mode Mode, path string) (Call, error) {
	nodeID, err := url.PathUnescape(strings.TrimSuffix(strings.TrimPrefix(path, "/ws/v1/cluster/nodes/"), "/resource"))
	if err != nil {
		return Call{}, fmt.Errorf("node id: %w", err)
	}
	var opt yarn.ResourceOption
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	if err == nil {
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.DisallowUnknownFields()
		err = dec.Decode(&opt)
	}
	c := Call{Time: time.Now(), NodeID: nodeID, User: r.URL.Query().Get("user.name"),
		Resource: opt.Resource, OverCommitTimeout: opt.OverCommitTimeout, Mode: mode}
	rm.mu.Lock()
	defer rm.mu.Unlock()
	rm.calls = append(rm.calls, c)
	if err != nil {
		return c, fmt.Errorf("resourceOption: %w", err)
	}
	if mode == ModeActive {
		old, known := rm.nodes[nodeID]
		rm.nodes[nodeID] = opt.Resource
		// AbstractYarnScheduler.updateNodeResource acts on a changed
		// resource only ("with the same resource": nothing, the timeout
		// included); then SchedulerNode.setOvercommitTimeOut sets (or
		// replaces) the deadline for a timeout ≥ 0, and -1 leaves it.
		if (!known || old != opt.Resource) && opt.OverCommitTimeout >= 0 {
			rm.overcommit[nodeID] = c.Time.Add(time.Duration(opt.OverCommitTimeout) * time.Millisecond)
			c.armed = true
		}
	}
	return c, nil
}

// serveNode answers GET /ws/v1/cluster/nodes/{nodeid} as RMWebServices.getNode
// does: {"node": NodeInfo} with totalResource and the used/available
// memory and vcores (what SetNodeContainers' view holds; nothing without
// one), 404 for an unknown node.
func (rm *RM) serveNode(w http.ResponseWriter, escaped string) {
	id, err := url.PathUnescape(escaped)
	rm.mu.Lock()
	rm.nodeReads++
	res, ok := rm.nodes[id]
	rm.mu.Unlock()
	if err != nil || !ok {
		remoteException(w, http.StatusNotFound, "NotFoundException", "nodeId, "+escaped+", is not found")
		return
	}
	host, _, _ := strings.Cut(id, ":")
	mem, vcores, n := rm.used(id)
	writeJSON(w, http.StatusOK, map[string]any{"node": map[string]any{
		"rack": "/default-rack", "state": "RUNNING", "id": id, "nodeHostName": host, "healthStatus": "Healthy",
		"usedMemoryMB": mem, "availMemoryMB": res.MemoryMB - mem, "usedVirtualCores": vcores, "availableVirtualCores": res.VCores - vcores,
		"numContainers": n, "totalResource": map[string]any{"memory": res.MemoryMB, "vCores": res.VCores}}})
}

// serveConf answers as ConfServlet does in JSON: one property for a name,
// 404 for a name the configuration lacks.
func (rm *RM) serveConf(w http.ResponseWriter, name string) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	prop := func(k, v string) map[string]any {
		return map[string]any{"key": k, "value": v, "isFinal": false, "resource": "yarn-site.xml"}
	}
	if name == "" {
		var all []map[string]any
		for k, v := range rm.conf {
			all = append(all, prop(k, v))
		}
		writeJSON(w, http.StatusOK, map[string]any{"properties": all})
		return
	}
	v, ok := rm.conf[name]
	if !ok {
		http.Error(w, "Property "+name+" not found", http.StatusNotFound)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"property": prop(name, v)})
}

func (rm *RM) serveApp(w http.ResponseWriter, id string) {
	rm.mu.Lock()
	a, ok := rm.apps[id]
	rm.mu.Unlock()
	if !ok {
		remoteException(w, http.StatusNotFound, "NotFoundException", "app with id: "+id+" not found")
		return
	}
	state := a.State
	if state == "" {
		state = "RUNNING"
	}
	writeJSON(w, http.StatusOK, map[string]any{"app": map[string]any{
		"id": a.ID, "user": a.User, "name": a.Name, "queue": a.Queue, "state": state,
		"finalStatus": "UNDEFINED", "applicationType": a.ApplicationType,
		"applicationTags": strings.Join(a.Tags, ","), "priority": a.Priority,
		"amContainerLogs":   "http://localhost:8042/node/containerlogs/" + a.AMContainer + "/" + a.User,
		"amHostHttpAddress": "localhost:8042",
	}})
}

func remoteException(w http.ResponseWriter, code int, exception, msg string) {
	writeJSON(w, code, map[string]any{"RemoteException": map[string]string{
		"exception": exception, "message": msg,
		"javaClassName": "org.apache.hadoop.yarn.webapp." + exception}})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// Server is an RM listening on loopback.
type Server struct {
	*RM
	// URL is the RM's web address (http://127.0.0.1:port).
	URL string
	srv *http.Server
}

// Start serves a new RM on a free loopback port.
func Start() (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the RM emulator: %w", err)
	}
	s := &Server{RM: New(), URL: "http://" + l.Addr().String()}
	s.srv = &http.Server{Handler: s.RM, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.srv.Serve(l) }()
	return s, nil
}

// Close stops the server and the scheduler's heartbeats.
func (s *Server) Close() error {
	s.Stop()
	return s.srv.Close()
}
