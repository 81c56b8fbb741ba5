// Package nmemu emulates a YARN NodeManager for node-level tests and the
// demo: it serves the NodeManager REST API (GET /ws/v1/node/containers,
// /ws/v1/node/containers/{id}, /ws/v1/node/info) as Hadoop documents it, and
// launches containers the way the LinuxContainerExecutor does: a container_*
// cgroup under the YARN hierarchy in the real cgroup v1 controllers it
// manages, real processes moved into it, the state machine NEW → LOCALIZING →
// RUNNING → EXITED_WITH_SUCCESS/EXITED_WITH_FAILURE → DONE, and exit
// reporting when the container's processes are killed from outside.
package nmemu

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/test/cgtree"
)

// Mode is how the emulator answers REST requests, for fault tests.
type Mode string

// Modes.
const (
	ModeOK      Mode = "ok"      // documented responses
	ModeSlow    Mode = "slow"    // hang until the client gives up
	ModeGarbage Mode = "garbage" // a body that is not JSON
	ModeError   Mode = "error"   // HTTP 500
)

// Config configures the emulator.
type Config struct {
	// CgroupRoot is the cgroup v1 mount root (/sys/fs/cgroup).
	CgroupRoot string
	// Hierarchy is the YARN hierarchy relative to the controller mounts.
	Hierarchy string
	// Controllers YARN manages (cgroup v1 names); cpu always, memory when
	// yarn.nodemanager.resource.memory.enabled. On cgroup v2 one "" (the
	// unified hierarchy), with the controllers in V2Controllers. Empty:
	// cpu and memory.
	Controllers []string
	// NoContainerCgroups launches the DefaultContainerExecutor's way (also
	// an LCE without resource handlers, and Hadoop before 3.5 on cgroup
	// v2): no container cgroups; every container process stays in the NM
	// pod's cgroup (PodCgroup), launched through Hadoop's three scripts
	// (the wrapper, which stays the parent; its session, "exec setsid
	// /bin/bash launch_container.sh"; the launch script, which execs the
	// command: dce.go), and the NM ends a container by signalling the
	// session's process group.
	NoContainerCgroups bool
	// LCELaunch, with NoContainerCgroups, launches the way the
	// LinuxContainerExecutor without a resources handler does: the
	// NodeManager runs the native container-executor with an empty
	// environment (its launch, which stays the parent and writes the exit
	// code, and its child, which writes the pid file and execs the launch
	// script with setsid), and the container's whole environment, its
	// CONTAINER_ID first, comes from launch_container.sh's exports. The
	// wrapper and session scripts stand for the two executor processes.
	LCELaunch bool
	// V2Controllers are the controllers YARN's v2 handler enables for its
	// containers in the hierarchy's cgroup.subtree_control (those the
	// hierarchy has); empty: Hadoop 3.5's (cpu, cpuset, io, memory, pids).
	V2Controllers []string
	// PodCgroup is the NM pod's container cgroup (relative): launched
	// processes first join it in PodControllers, then the YARN container
	// cgroups in Controllers, so that in the controllers YARN does not
	// manage they stay in the NM pod's cgroup, as with the real NM.
	PodCgroup      string
	PodControllers []string
	// FakeFiles, for a fake cgroup root, are the files (controller → name →
	// initial value) the kernel would create in each container cgroup; the
	// emulator then also lists the pid in "tasks".
	FakeFiles map[string]map[string]string
	// MirrorRoot, with a fake root, is the real cgroup v1 root where each
	// container's cgroups are also made and its processes really moved, so
	// that /proc/<pid>/cgroup agrees with the fake files.
	MirrorRoot string
	// MirrorControllers are the real controllers the mirror makes each
	// container's cgroups in; empty: Controllers. A fake root that co-mounts
	// cpu,cpuacct on a host that mounts them apart mirrors a cpu cgroup in
	// cpuacct too, as one co-mounted cgroup is both.
	MirrorControllers []string
	// ClusterTimestamp of the emulated ResourceManager.
	ClusterTimestamp int64
	// NodeID is the NM's node id (host:port).
	NodeID string
	// LaunchDelay is how long the container's launch script runs in its
	// cgroups before it execs the workload, as YARN's launch_container.sh
	// does (links, environment, then exec java): 0 execs at once.
	LaunchDelay time.Duration
}

// Container is one emulated container.
type Container struct {
	ID            string `json:"id"`
	State         string `json:"state"`
	ExitCode      int    `json:"exitCode"`
	Diagnostics   string `json:"diagnostics"`
	User          string `json:"user"`
	MemoryMB      int64  `json:"totalMemoryNeededMB"`
	VCores        int64  `json:"totalVCoresNeeded"`
	ExecutionType string `json:"executionType"`
	NodeID        string `json:"nodeId"`
	LogsLink      string `json:"containerLogsLink"`

	cmd    *exec.Cmd
	exited chan struct{}
	// workDir holds a DefaultContainerExecutor launch's scripts and pid
	// file (dce.go).
	workDir string
	// byRM: killed as the ResourceManager asked (KillByRM).
	byRM bool
	// am and launched: the RM's view of it (Allocations).
	am       bool
	launched time.Time
}

// Spec describes a container to launch.
type Spec struct {
	AppID, Attempt, Sequence int64
	User                     string
	MemoryMB, VCores         int64
	Opportunistic            bool
	// Script is run by sh -c inside the container's cgroups.
	Script string
	// Localize is how long the container stays LOCALIZING before it runs.
	Localize time.Duration
	// AM says whether the container is its attempt's ApplicationMaster,
	// which the ResourceManager's AMLauncher marks in its environment;
	// nil: sequence 1 is.
	AM *bool
}

// env is the container's process environment as the NodeManager and the
// AMLauncher set it: CONTAINER_ID always; APP_SUBMIT_TIME_ENV and
// APPLICATION_WEB_PROXY_BASE for the ApplicationMaster only.
func (s Spec) env(id string, ts int64) []string {
	env := append(os.Environ(), "CONTAINER_ID="+id)
	if s.isAM() {
		app := fmt.Sprintf("application_%d_%04d", ts, s.AppID)
		env = append(env, fmt.Sprintf("APP_SUBMIT_TIME_ENV=%d", ts+s.AppID),
			"APPLICATION_WEB_PROXY_BASE=/proxy/"+app)
	}
	return env
}

// isAM says whether the container is its attempt's ApplicationMaster.
func (s Spec) isAM() bool {
	if s.AM != nil {
		return *s.AM
	}
	return s.Sequence == 1
}

// ID returns the container id of the spec under cluster timestamp ts.
func (s Spec) ID(ts int64) string {
	return fmt.Sprintf("container_e17_%d_%04d_%02d_%06d", ts, s.AppID, s.Attempt, s.Sequence)
}

// NM is the emulator.
type NM struct {
	cfg      Config
	mu       sync.Mutex
	mode     Mode
	list     []*Container
	byID     map[string]*Container
	server   *http.Server
	listener net.Listener
	wg       sync.WaitGroup
	// workDir holds the DefaultContainerExecutor launches' work
	// directories (dce.go).
	workDir string
	// created records the hierarchy levels the emulator made: Close
	// removes those, never a hierarchy that existed before it.
	created cgtree.Tracker
}

// New returns an emulator; call Listen to serve and Close to stop.
func New(cfg Config) *NM {
	if cfg.ClusterTimestamp == 0 {
		cfg.ClusterTimestamp = 1700000000000
	}
	switch {
	case cfg.NoContainerCgroups:
		cfg.Controllers = nil
	case len(cfg.Controllers) == 0:
		cfg.Controllers = []string{"cpu", "memory"}
	}
	return &NM{cfg: cfg, mode: ModeOK, byID: map[string]*Container{}}
}

// Listen serves the REST API on addr (e.g. 127.0.0.1:0) and returns the
// bound address.
func (nm *NM) Listen(addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("nmemu: listen %s: %w", addr, err)
	}
	nm.listener = ln
	nm.server = &http.Server{Handler: nm, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = nm.server.Serve(ln) }()
	return ln.Addr().String(), nil
}

// StopServing closes the REST listener (the NM is "down"); containers keep
// running.
func (nm *NM) StopServing() {
	if nm.server != nil {
		_ = nm.server.Close()
		nm.server = nil
	}
}

// SetMode changes how REST requests are answered.
func (nm *NM) SetMode(m Mode) {
	nm.mu.Lock()
	nm.mode = m
	nm.mu.Unlock()
}

// Close stops serving, kills every container and removes the cgroups.
func (nm *NM) Close() {
	nm.StopServing()
	nm.mu.Lock()
	list := append([]*Container(nil), nm.list...)
	nm.mu.Unlock()
	for _, c := range list {
		nm.kill(c)
	}
	nm.wg.Wait()
	nm.mu.Lock()
	if nm.workDir != "" {
		_ = os.RemoveAll(nm.workDir)
		nm.workDir = ""
	}
	nm.mu.Unlock()
	if nm.cfg.FakeFiles != nil {
		for _, dir := range nm.created.Created() {
			if nm.real(dir) {
				_ = cgtree.Remove(dir)
				continue
			}
			_ = os.RemoveAll(dir)
		}
		return
	}
	_ = nm.created.RemoveAll()
}

// removeTree removes a container cgroup as the NM does; on a fake root the
// directories hold regular files and are removed with them.
// writeFakeFiles writes the fake kernel files of ctrl into dir (a fake
// root's cgroup directory); existing ones are kept unless overwrite.
func (nm *NM) writeFakeFiles(ctrl, dir string, overwrite bool) {
	for name, v := range nm.cfg.FakeFiles[ctrl] {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil && !overwrite {
			continue
		}
		_ = os.WriteFile(p, []byte(v), 0o644)
	}
}

// real reports whether dir is on the real cgroup mirror of a fake root.
func (nm *NM) real(dir string) bool {
	return nm.cfg.MirrorRoot != "" && strings.HasPrefix(dir, nm.cfg.MirrorRoot+"/")
}

func (nm *NM) removeTree(dir string) {
	if nm.cfg.FakeFiles != nil && !nm.real(dir) {
		cgtree.Kill(dir)
		_ = os.RemoveAll(dir)
		return
	}
	_ = cgtree.Remove(dir)
}

// Launch starts a container: NEW, then LOCALIZING for spec.Localize, then
// its cgroups are created, its process is moved in and it is RUNNING. It
// returns the container id at once.
func (nm *NM) Launch(spec Spec) (string, error) {
	id := spec.ID(nm.cfg.ClusterTimestamp)
	exec := "GUARANTEED"
	if spec.Opportunistic {
		exec = "OPPORTUNISTIC"
	}
	c := &Container{ID: id, State: "NEW", ExitCode: -1000, User: spec.User, MemoryMB: spec.MemoryMB,
		VCores: spec.VCores, ExecutionType: exec, NodeID: nm.cfg.NodeID, exited: make(chan struct{}),
		am: spec.isAM(), launched: time.Now()}
	nm.mu.Lock()
	if _, dup := nm.byID[id]; dup {
		nm.mu.Unlock()
		return "", fmt.Errorf("nmemu: container %s already exists", id)
	}
	nm.list = append(nm.list, c)
	nm.byID[id] = c
	nm.mu.Unlock()

	nm.setState(c, "LOCALIZING")
	if spec.Localize > 0 {
		time.Sleep(spec.Localize)
	}
	if err := nm.start(c, spec.Script, spec.env(id, nm.cfg.ClusterTimestamp)); err != nil {
		nm.finish(c, "EXITED_WITH_FAILURE", -1, err.Error())
		return id, err
	}
	return id, nil
}

func (nm *NM) start(c *Container, script string, env []string) error {
	var dirs []string
	seen := map[string]bool{} // co-mounted controllers share one directory
	for _, ctrl := range nm.cfg.Controllers {
		dir := filepath.Join(nm.cfg.CgroupRoot, ctrl, nm.cfg.Hierarchy, c.ID)
		if err := nm.created.MkdirAll(filepath.Dir(dir)); err != nil {
			return err
		}
		if ctrl == "" && nm.cfg.FakeFiles == nil {
			// cgroup v2: Hadoop 3.5's v2 handler enables its controllers
			// in the YARN hierarchy's subtree_control for the containers.
			if err := nm.enableV2Controllers(filepath.Dir(dir)); err != nil {
				return err
			}
		}
		// On a fake root every cgroup directory has the kernel's files, the
		// YARN hierarchy's too (koordlet checks support there).
		nm.writeFakeFiles(ctrl, filepath.Dir(dir), false)
		if parent, err := filepath.EvalSymlinks(filepath.Dir(dir)); err == nil {
			if seen[parent] {
				nm.writeFakeFiles(ctrl, dir, true) // co-mounted: this controller's files too
				continue
			}
			seen[parent] = true
		}
		// The container's own cgroup must be new: one that exists is
		// not ours to fill or remove.
		if _, err := os.Lstat(dir); err == nil {
			return fmt.Errorf("create cgroup %s: %w", dir, os.ErrExist)
		}
		if nm.cfg.FakeFiles != nil {
			// A fake cgroup appears with its files, as the kernel's does:
			// made beside, then renamed into place.
			stage := filepath.Join(filepath.Dir(dir), ".stage-"+c.ID)
			if err := os.Mkdir(stage, 0o755); err != nil {
				return fmt.Errorf("create cgroup %s: %w", stage, err)
			}
			nm.writeFakeFiles(ctrl, stage, true)
			if err := os.Rename(stage, dir); err != nil {
				return fmt.Errorf("create cgroup %s: %w", dir, err)
			}
		} else if err := os.Mkdir(dir, 0o755); err != nil {
			return fmt.Errorf("create cgroup %s: %w", dir, err)
		}
		dirs = append(dirs, dir)
	}
	if nm.cfg.MirrorRoot != "" {
		mirror := nm.cfg.MirrorControllers
		if len(mirror) == 0 {
			mirror = nm.cfg.Controllers
		}
		for _, ctrl := range mirror {
			dir := filepath.Join(nm.cfg.MirrorRoot, ctrl, nm.cfg.Hierarchy, c.ID)
			if err := nm.created.MkdirAll(filepath.Dir(dir)); err != nil {
				return err
			}
			if err := os.Mkdir(dir, 0o755); err != nil {
				return fmt.Errorf("create cgroup %s: %w", dir, err)
			}
			dirs = append(dirs, dir)
		}
	}
	// The shell waits at a gate until it is inside the cgroups, so every
	// process it forks is born there, as with the LCE.
	launch := "read gate; "
	if nm.cfg.LaunchDelay > 0 {
		launch += fmt.Sprintf("sleep %.3f; ", nm.cfg.LaunchDelay.Seconds())
	}
	cmd := exec.Command("sh", "-c", launch+script)
	if nm.cfg.NoContainerCgroups {
		// DefaultContainerExecutor: its wrapper, session and launch
		// scripts, run inside the NM pod's cgroup with the container's
		// environment (dce.go).
		dir, err := nm.dceWorkDir(c.ID)
		if err != nil {
			return err
		}
		wrapper, err := dceLaunchScripts(dir, strings.TrimSuffix(launch, "; "), script, env, nm.cfg.LCELaunch)
		if err != nil {
			return err
		}
		nm.mu.Lock()
		c.workDir = dir
		nm.mu.Unlock()
		cmd = exec.Command("/bin/bash", wrapper)
	}
	cmd.Env = env
	if nm.cfg.NoContainerCgroups && nm.cfg.LCELaunch {
		cmd.Env = []string{} // the native executor's: none
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if nm.cfg.NoContainerCgroups {
		// The real NM forks its executor inside its own cgroup: on cgroup
		// v2 the wrapper is born in the NM pod's (clone3 into the
		// cgroup), so its exec, like the real one's, happens there. (On v1
		// it is moved there before its gate opens, below.)
		if pod := nm.unifiedPodCgroup(); pod != nil {
			defer pod.Close()
			cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(pod.Fd())
		}
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start container process: %w", err)
	}
	targets := []string{}
	if nm.cfg.PodCgroup != "" {
		for _, ctrl := range nm.cfg.PodControllers {
			targets = append(targets, filepath.Join(nm.cfg.CgroupRoot, ctrl, nm.cfg.PodCgroup))
			if nm.cfg.MirrorRoot != "" {
				targets = append(targets, filepath.Join(nm.cfg.MirrorRoot, ctrl, nm.cfg.PodCgroup))
			}
		}
	}
	targets = append(targets, dirs...)
	for _, dir := range targets {
		if nm.cfg.FakeFiles != nil && !nm.real(dir) {
			_ = os.WriteFile(filepath.Join(dir, "tasks"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644)
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return fmt.Errorf("move pid into %s: %w", dir, err)
		}
	}
	nm.mu.Lock()
	c.cmd = cmd
	byRM := c.byRM
	nm.mu.Unlock()
	nm.setState(c, "RUNNING")
	_, _ = stdin.Write([]byte("go\n"))
	nm.wg.Add(1)
	go nm.reap(c, dirs)
	if byRM {
		nm.kill(c) // the RM asked before it ran
	}
	return nil
}

// reap waits for the container's main process, kills what is left in its
// cgroups, reports the exit and removes the cgroups, as the NM does.
func (nm *NM) reap(c *Container, dirs []string) {
	defer nm.wg.Done()
	err := c.cmd.Wait()
	code, state, diag := 0, "EXITED_WITH_SUCCESS", ""
	if err != nil {
		state = "EXITED_WITH_FAILURE"
		code = 1
		if ee, ok := err.(*exec.ExitError); ok {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
				diag = killedDiagnostics(time.Now(), code)
			} else {
				code = ee.ExitCode()
			}
		}
	}
	nm.mu.Lock()
	if c.byRM {
		// ContainerManagerImpl's kill of a container the RM's heartbeat
		// response lists to clean up.
		code, state, diag = killedByRMExit, yarn.StateContainerCleanedupAfterKill, "Container Killed by ResourceManager"
	}
	nm.mu.Unlock()
	if nm.cfg.NoContainerCgroups {
		// DefaultContainerExecutor: what is left of the container's
		// process groups goes with it (its cgroup is the NM pod's).
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		dceKill(c.workDir)
	}
	for _, dir := range dirs {
		nm.removeTree(dir)
	}
	nm.finish(c, state, code, diag)
}

func (nm *NM) finish(c *Container, state string, code int, diag string) {
	nm.mu.Lock()
	c.State, c.ExitCode, c.Diagnostics = state, code, diag
	nm.mu.Unlock()
	select {
	case <-c.exited:
	default:
		close(c.exited)
	}
	go func() {
		time.Sleep(2 * time.Second)
		nm.setState(c, "DONE")
	}()
}

// Exit ends a container normally (the application finished it).
func (nm *NM) Exit(id string) { nm.kill(nm.get(id)) }

// Allocation is a container holding its allocation on the node, as the
// ResourceManager sees it.
type Allocation struct {
	Container
	// AM: its attempt's ApplicationMaster; Launched: when it was
	// launched (the RM's allocation, to the emulator).
	AM       bool
	Launched time.Time
}

// Allocations lists the containers that hold their allocation: from their
// launch (NEW, LOCALIZING included) until they exit.
func (nm *NM) Allocations() []Allocation {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	var out []Allocation
	for _, c := range nm.list {
		select {
		case <-c.exited:
			continue
		default:
		}
		out = append(out, Allocation{Container: c.view(), AM: c.am, Launched: c.launched})
	}
	return out
}

// killedByRMExit is ContainerExitStatus.KILLED_BY_RESOURCEMANAGER.
const killedByRMExit = -106

// KillByRM ends a container as the NodeManager does when the
// ResourceManager's heartbeat response lists it to clean up (a
// preemption, an over-commit's kill): its processes are killed and it
// ends CONTAINER_CLEANEDUP_AFTER_KILL with exit code -106
// (KILLED_BY_RESOURCEMANAGER), "Container Killed by ResourceManager"; the
// application's AM is told PREEMPTED (-102) by the RM.
func (nm *NM) KillByRM(id string) {
	c := nm.get(id)
	if c == nil {
		return
	}
	select {
	case <-c.exited:
		return // ended already: nothing to kill, its exit stays its own
	default:
	}
	nm.mu.Lock()
	c.byRM = true
	started := c.cmd != nil
	nm.mu.Unlock()
	if started {
		nm.kill(c)
	} // else start kills it as soon as it runs
}

// Exited returns a channel closed when the container has exited.
func (nm *NM) Exited(id string) <-chan struct{} {
	if c := nm.get(id); c != nil {
		return c.exited
	}
	ch := make(chan struct{})
	close(ch)
	return ch
}

// Get returns a copy of a container's REST view.
func (nm *NM) Get(id string) (Container, bool) {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	c, ok := nm.byID[id]
	if !ok {
		return Container{}, false
	}
	return c.view(), true
}

// Pid returns the container's pid as the NM knows it (0 before it runs):
// the process that runs the container's command — with the
// DefaultContainerExecutor the one its pid file names (the launch's
// session, which exec'd the command), not the wrapper (WrapperPid).
func (nm *NM) Pid(id string) int {
	nm.mu.Lock()
	c, ok := nm.byID[id]
	var pid int
	var dir string
	if ok && c.cmd != nil && c.cmd.Process != nil {
		pid, dir = c.cmd.Process.Pid, c.workDir
	}
	nm.mu.Unlock()
	if dir != "" {
		return dcePid(dir)
	}
	return pid
}

// WrapperPid returns the pid of a DefaultContainerExecutor container's
// wrapper (default_container_executor.sh, the NM's child), 0 for others or
// before it runs.
func (nm *NM) WrapperPid(id string) int {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	if c, ok := nm.byID[id]; ok && c.workDir != "" && c.cmd != nil && c.cmd.Process != nil {
		return c.cmd.Process.Pid
	}
	return 0
}

// CgroupDir returns the container's cgroup directory in controller ctrl.
func (nm *NM) CgroupDir(ctrl, id string) string {
	return filepath.Join(nm.cfg.CgroupRoot, ctrl, nm.cfg.Hierarchy, id)
}

func (nm *NM) get(id string) *Container {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	return nm.byID[id]
}

func (nm *NM) kill(c *Container) {
	if c == nil {
		return
	}
	nm.mu.Lock()
	cmd, workDir := c.cmd, c.workDir
	nm.mu.Unlock()
	if workDir != "" {
		dceKill(workDir)
	}
	if cmd != nil && cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		for _, ctrl := range nm.cfg.Controllers {
			cgtree.Kill(filepath.Join(nm.cfg.CgroupRoot, ctrl, nm.cfg.Hierarchy, c.ID))
		}
	}
}

func (nm *NM) setState(c *Container, s string) {
	nm.mu.Lock()
	c.State = s
	nm.mu.Unlock()
}

func (c *Container) view() Container {
	v := *c
	v.cmd, v.exited = nil, nil
	return v
}

// ServeHTTP serves the NM REST API.
func (nm *NM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	nm.mu.Lock()
	mode := nm.mode
	nm.mu.Unlock()
	switch mode {
	case ModeSlow:
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
		return
	case ModeGarbage:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("<html><body>HTTP ERROR 503 \x00\x01{{{"))
		return
	case ModeError:
		http.Error(w, "emulated NodeManager failure", http.StatusInternalServerError)
		return
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case path == "/ws/v1/node/containers":
		nm.mu.Lock()
		views := make([]Container, 0, len(nm.list))
		for _, c := range nm.list {
			views = append(views, c.view())
		}
		nm.mu.Unlock()
		sort.Slice(views, func(i, j int) bool { return views[i].ID < views[j].ID })
		writeJSON(w, map[string]any{"containers": map[string]any{"container": views}})
	case strings.HasPrefix(path, "/ws/v1/node/containers/"):
		c, ok := nm.Get(strings.TrimPrefix(path, "/ws/v1/node/containers/"))
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			writeJSON(w, map[string]any{"RemoteException": map[string]string{
				"exception": "NotFoundException", "message": "java.lang.Exception: container not found",
				"javaClassName": "org.apache.hadoop.yarn.webapp.NotFoundException"}})
			return
		}
		writeJSON(w, map[string]any{"container": c})
	case path == "/ws/v1/node/info" || path == "/ws/v1/node":
		writeJSON(w, map[string]any{"nodeInfo": map[string]any{
			"nodeHostName": "localhost", "id": nm.cfg.NodeID, "nodeManagerVersion": "3.3.6-emulated",
			"nodeHealthy": true}})
	default:
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// shellQuote quotes s for sh as one word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// killedDiagnostics is what Hadoop 3.5.0's NodeManager reports for a
// container whose process a signal from outside YARN ended (seen against
// the real NM in TestRealYARN): three time-stamped lines.
func killedDiagnostics(at time.Time, code int) string {
	ts := "[" + at.Format("2006-01-02 15:04:05.000") + "]"
	var b strings.Builder
	if code == 143 || code == 137 {
		fmt.Fprintf(&b, "%sContainer killed on request. Exit code is %d\n", ts, code)
	}
	fmt.Fprintf(&b, "%sContainer exited with a non-zero exit code %d. \n%sKilled by external signal\n", ts, code, ts)
	return b.String()
}

// unifiedPodCgroup opens the NM pod's cgroup directory when it is on a real
// cgroup2 hierarchy (nil otherwise: cgroup v1, a fake root, no pod).
func (nm *NM) unifiedPodCgroup() *os.File {
	if nm.cfg.PodCgroup == "" || nm.cfg.FakeFiles != nil || len(nm.cfg.PodControllers) != 1 || nm.cfg.PodControllers[0] != "" {
		return nil
	}
	dir := filepath.Join(nm.cfg.CgroupRoot, nm.cfg.PodCgroup)
	var fs unix.Statfs_t
	if unix.Statfs(dir, &fs) != nil || fs.Type != unix.CGROUP2_SUPER_MAGIC {
		return nil
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil
	}
	return f
}
