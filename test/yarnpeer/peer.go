// Package yarnpeer runs the real-YARN test peer (the Maven module in
// test/yarn: Hadoop's MiniYARNCluster, 3.5.0 or 3.3.6, with one
// ResourceManager and one NodeManager on the LinuxContainerExecutor or the
// DefaultContainerExecutor, and a small ApplicationMaster) for the e2e
// tests, and speaks its line protocol.
//
// The peer is built by `make deps-yarn` (test/yarn/build.sh) into
// build/yarn/<version>; nothing is fetched at test time. Built reports a missing or
// stale build, naming the command that makes it.
package yarnpeer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Stamp is the hash of the peer's sources (pom.xml and src/, and the
// engines' mr/pom.xml, spark/pom.xml and spark/src/), as
// test/yarn/build.sh writes it into build/yarn/<version>/.stamp after a
// build.
func Stamp(top string) (string, error) {
	dir := filepath.Join(top, "test", "yarn")
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if !d.IsDir() && stamped(rel) {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// stamped: a file of test/yarn the peer's build depends on.
func stamped(rel string) bool {
	sep := string(filepath.Separator)
	switch {
	case rel == "pom.xml", rel == filepath.Join("mr", "pom.xml"), rel == filepath.Join("spark", "pom.xml"):
		return true
	case strings.HasPrefix(rel, "src"+sep), strings.HasPrefix(rel, filepath.Join("spark", "src")+sep):
		return true
	}
	return false
}

// Hadoop versions the peer is built for (test/yarn/build.sh builds each
// into build/yarn/<version>): 3.5.0, the newest (its own cgroup v2
// handler), and 3.3.6, the line most clusters run (Koordinator's
// hadoop-yarn chart ships 3.3.x; no cgroup v2 handler).
const (
	Hadoop35 = "3.5.0"
	Hadoop33 = "3.3.6"
)

// Versions are the Hadoop versions the peer is built for.
var Versions = []string{Hadoop35, Hadoop33}

// BuildDir is where the peer for a Hadoop version is built.
func BuildDir(top, version string) string {
	return filepath.Join(top, "build", "yarn", version)
}

// Built checks that the peer for a Hadoop version is built from the
// sources as they are, and that java runs.
func Built(top, version string) error {
	want, err := Stamp(top)
	if err != nil {
		return fmt.Errorf("real-YARN peer sources: %w", err)
	}
	got, _ := os.ReadFile(filepath.Join(BuildDir(top, version), ".stamp"))
	if strings.TrimSpace(string(got)) != want {
		return fmt.Errorf("the real-YARN peer (Hadoop %s MiniYARNCluster, test/yarn) is not built from these sources: run make deps-yarn (needs Java 17, Maven and Maven Central)", version)
	}
	if _, err := exec.LookPath("java"); err != nil {
		return fmt.Errorf("the real-YARN peer needs java (17): %w", err)
	}
	return nil
}

// ClassPath is the class path of the peer for a Hadoop version (its jar
// and every dependency).
func ClassPath(top, version string) string {
	b := BuildDir(top, version)
	return filepath.Join(b, "target", "peer.jar") + ":" + filepath.Join(b, "lib", "*")
}

// JVMOpens are the module opens Hadoop needs on Java 17 (3.3.x reflects
// into java.base, e.g. for its shell and NIO helpers): given to the
// peer's JVM, which passes them on to the containers' JVMs it launches.
var JVMOpens = []string{
	"--add-opens=java.base/java.lang=ALL-UNNAMED",
	"--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
	"--add-opens=java.base/java.io=ALL-UNNAMED",
	"--add-opens=java.base/java.net=ALL-UNNAMED",
	"--add-opens=java.base/java.nio=ALL-UNNAMED",
	"--add-opens=java.base/java.util=ALL-UNNAMED",
	"--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
	"--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
	"--add-opens=java.base/sun.security.action=ALL-UNNAMED",
}

// ExecutorKind is how the NodeManager launches containers.
type ExecutorKind string

const (
	// LCECgroups is the LinuxContainerExecutor with
	// CgroupsLCEResourcesHandler: YARN makes each container's cgroups.
	LCECgroups ExecutorKind = "lce-cgroups"
	// LCE is the LinuxContainerExecutor without a resources handler:
	// containers run in the NodeManager's cgroup.
	LCE ExecutorKind = "lce"
	// DCE is the DefaultContainerExecutor (bash, setsid, no cgroups).
	DCE ExecutorKind = "dce"
)

// Options configure the peer.
type Options struct {
	// Top is the repository's top directory.
	Top string
	// Hadoop is the Hadoop version (one of Versions; "": Hadoop35).
	Hadoop string
	// Kind is the container executor ("": LCECgroups).
	Kind ExecutorKind
	// Dir is the peer's working directory (its state, the cluster's local
	// and log dirs, the AM specs); created, and removed by Stop.
	Dir string
	// Executor is the container-executor the NodeManager runs.
	Executor string
	// Hierarchy is yarn.nodemanager.linux-container-executor.cgroups.hierarchy.
	Hierarchy string
	// MountPath is ….cgroups.mount-path (the controllers' mount point).
	MountPath string
	// Memory is yarn.nodemanager.resource.memory.enabled (else CPU-only,
	// Hadoop's default).
	Memory bool
	// CgroupV2 turns on Hadoop 3.5's cgroup v2 handler (LCECgroups on a
	// unified hierarchy: yarn.nodemanager.linux-container-executor.cgroups.v2.enabled).
	CgroupV2 bool
	// NMVcores are the NodeManager's vcores (8 by default; its memory is
	// the MiniYARNCluster's fixed 4096 MB, its ports its own choice).
	NMVcores int
	// Procs are cgroup.procs files the peer's JVM is moved into at once
	// (the NodeManager pod's cgroups), before it starts the cluster.
	Procs []string
	// Env is added to the JVM's environment (passed on to containers).
	Env []string
	// OffNode runs what stands for other machines SCHED_IDLE: the job
	// clients (a gateway's) and, with SplitNM, the ResourceManager's JVM,
	// so that on a small node they do not take CPU from what is measured
	// (make measure-jobs' LS service).
	OffNode bool
	// Conf are KEY=VALUE settings of the cluster's configuration, set
	// after the peer's own (e.g. the scheduler's resource calculator).
	Conf []string
	// SplitNM runs the NodeManager in a JVM of its own (in Procs) beside
	// the ResourceManager's (outside them), as deployed; always for Hadoop
	// 3.3, whose RM serves no REST beside an NM in one JVM (see test/yarn's
	// NM).
	SplitNM bool
	// KeepLogs keeps a finished application's container logs an hour (by
	// default the NM deletes them at once: until it does, it holds the
	// application, and its stop waits 16 s for it).
	KeepLogs bool
	// AMExpiry is the RM's AM liveness expiry
	// (yarn.am.liveness-monitor.expiry-interval-ms; 0: the peer's 60 s).
	// An AM attempt that has not registered by then times out: under the
	// v2 guest's emulated CPU the LCE's localizer JVM and the MRAppMaster's
	// take longer than that.
	AMExpiry time.Duration
}

// Peer is a running peer.
type Peer struct {
	opts Options
	rm   *jvm // the ResourceManager's JVM (and the NodeManager's when nm is nil)
	nm   *jvm // the NodeManager's own JVM (SplitNM), else nil

	// RMWeb and NMWeb are the ResourceManager's and the NodeManager's web
	// addresses (host:port), NodeID the NodeManager's node id, Pid the
	// NodeManager's JVM's pid.
	RMWeb, NMWeb, NodeID string
	Pid                  int

	// am is the AMs' class-data sharing (the first AM's class list).
	am classSharing
	// nmStarts counts RestartNM's NodeManagers (their logs are nm-N.log).
	nmStarts int
}

// startNM starts the NodeManager's own JVM (SplitNM) in the options'
// Procs and waits until it runs; first also waits for the RM's "ready"
// (the peer's first start), after which the RM's web address is known.
func (p *Peer) startNM(ctx context.Context, first bool) error {
	o := p.opts
	cp := ClassPath(o.Top, o.Hadoop)
	nmCDS := newClassSharing(o.Top, o.Hadoop, "nm", cp)
	log := logName(o.Dir, "nm")
	if !first {
		p.nmStarts++
		log = logName(o.Dir, "nm-"+strconv.Itoa(p.nmStarts))
	}
	nmArgs := append([]string{"-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Dlog4j.configuration=log4j.properties"}, nmCDS.args()...)
	nmArgs = append(nmArgs, JVMOpens...)
	nmArgs = append(nmArgs, "-cp", cp, "io.koordletyarn.yarnpeer.NM", filepath.Join(o.Dir, "conf", "yarn-site.xml"))
	if !first {
		// The pod's NodeManager comes back on its ports: the same node to
		// the RM (its node id) and to koordlet (its REST).
		_, nmPort, _ := strings.Cut(p.NodeID, ":")
		nmArgs = append(nmArgs, "--set", "yarn.nodemanager.address=127.0.0.1:"+nmPort,
			"--set", "yarn.nodemanager.webapp.address="+p.NMWeb)
	}
	nm, err := startJVM(o.Dir, log, o.Env, nmArgs, o.Procs, nmCDS, false)
	if err != nil {
		p.rm.kill()
		return fmt.Errorf("start the real-YARN NodeManager: %w", err)
	}
	p.nm, p.Pid = nm, nm.pid()
	if first {
		kv, err := p.rm.ready(ctx, "peer")
		if err != nil {
			nm.kill()
			return err
		}
		p.RMWeb = kv["rm-web"]
	}
	kv, err := nm.ready(ctx, "NodeManager")
	if err != nil {
		if first {
			p.rm.kill()
		} else {
			nm.kill()
		}
		return err
	}
	p.NMWeb, p.NodeID = kv["nm-web"], kv["node-id"]
	return nil
}

// RestartNM stops the NodeManager (SplitNM only) as the kubelet stops its
// pod — asked to stop, it kills its containers and unregisters; after 60 s
// its JVM's process group is killed — and starts a new one in the same
// cgroups on the same ports (the same node id and REST address), as the
// DaemonSet's controller and the kubelet would; it returns once the new one
// registered with the RM.
// stopped, if not nil, runs between the old JVM's end and the new one's
// start (the kubelet's cleanup of the pod).
func (p *Peer) RestartNM(ctx context.Context, stopped func()) error {
	if p.nm == nil {
		return errors.New("restart the NodeManager: the peer's NodeManager runs in the RM's JVM (Options.SplitNM)")
	}
	p.nm.stop()
	if stopped != nil {
		stopped()
	}
	if err := p.startNM(ctx, false); err != nil {
		return fmt.Errorf("restart the NodeManager: %w", err)
	}
	if _, err := p.rm.do(ctx, "wait-node"); err != nil {
		return fmt.Errorf("the restarted NodeManager did not register: %w (log: %s)", err, p.LogTail(20))
	}
	return nil
}

func (p *Peer) nmCDS() classSharing {
	if p.nm == nil {
		return classSharing{}
	}
	return p.nm.cds
}

// Start starts the peer and waits until its NodeManager registered. The
// RM's ports are chosen here and bound by the JVM later: when one was
// taken in between (the JVM's BindException), the peer is started again on
// new ports, up to three times.
func Start(ctx context.Context, o Options) (*Peer, error) {
	for try := 1; ; try++ {
		p, err := startOnce(ctx, o)
		if err == nil || try == 3 || !(strings.Contains(err.Error(), "BindException") || strings.Contains(err.Error(), "Address already in use")) {
			return p, err
		}
	}
}

func startOnce(ctx context.Context, o Options) (*Peer, error) {
	if o.NMVcores == 0 {
		o.NMVcores = 8
	}
	if o.Hadoop == "" {
		o.Hadoop = Hadoop35
	}
	if o.Kind == "" {
		o.Kind = LCECgroups
	}
	o.SplitNM = o.SplitNM || o.Hadoop == Hadoop33
	if o.CgroupV2 && (o.Kind != LCECgroups || o.Hadoop == Hadoop33) {
		return nil, fmt.Errorf("the cgroup v2 handler is Hadoop 3.5's LCE cgroups handler; not %s on Hadoop %s", o.Kind, o.Hadoop)
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	ports, err := freePorts(5)
	if err != nil {
		return nil, err
	}
	addr := func(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }
	var sets []string
	if o.AMExpiry > 0 {
		sets = append(sets, "yarn.am.liveness-monitor.expiry-interval-ms="+strconv.FormatInt(o.AMExpiry.Milliseconds(), 10))
	}
	sets = append(sets,
		"yarn.resourcemanager.address="+addr(ports[0]),
		"yarn.resourcemanager.scheduler.address="+addr(ports[1]),
		"yarn.resourcemanager.resource-tracker.address="+addr(ports[2]),
		"yarn.resourcemanager.admin.address="+addr(ports[3]),
		"yarn.resourcemanager.webapp.address="+addr(ports[4]),
	)
	sets = append(sets, o.Conf...)
	cp := ClassPath(o.Top, o.Hadoop)
	// The class path first, the configuration after it: the AM's
	// class-data sharing archive names the class path it was made from as
	// a prefix of the AM's.
	amCP := cp + ":" + filepath.Join(o.Dir, "conf")
	amCDS := newClassSharing(o.Top, o.Hadoop, "am", cp)
	// C1 only: the peer's JVMs idle more than they compute, and under the
	// v2 guest's emulated CPU the optimizing compiler's work is a start's
	// cost.
	rmCDS := newClassSharing(o.Top, o.Hadoop, "peer", cp)
	args := append([]string{"-Xmx768m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Dlog4j.configuration=log4j.properties"}, rmCDS.args()...)
	args = append(args, JVMOpens...)
	args = append(args, "-cp", cp, "io.koordletyarn.yarnpeer.Peer", "--kind", string(o.Kind),
		"--executor", o.Executor, "--hierarchy", o.Hierarchy, "--mount-path", o.MountPath,
		"--memory", strconv.FormatBool(o.Memory), "--cgroups-v2", strconv.FormatBool(o.CgroupV2), "--nm-vcores", strconv.Itoa(o.NMVcores), "--classpath", amCP)
	if a := amCDS.args(); len(a) > 0 && amCDS.listTmp != "" {
		args = append(args, "--first-am-java-opts", strings.Join(a, " "))
	} else if len(a) > 0 {
		args = append(args, "--am-java-opts", strings.Join(a, " "))
	}
	if o.KeepLogs {
		args = append(args, "--log-retain-seconds", "3600")
	}
	for _, kv := range sets {
		args = append(args, "--set", kv)
	}
	if o.SplitNM {
		args = append(args, "--role", "rm")
	}
	procs := o.Procs
	if o.SplitNM {
		procs = nil // the RM's JVM runs outside the NodeManager pod
	}
	rm, err := startJVM(o.Dir, logName(o.Dir, "peer"), o.Env, args, procs, rmCDS, o.OffNode && o.SplitNM)
	if err != nil {
		return nil, fmt.Errorf("start the real-YARN peer: %w", err)
	}
	p := &Peer{opts: o, rm: rm, Pid: rm.pid(), am: amCDS}
	if !o.SplitNM {
		kv, err := rm.ready(ctx, "peer")
		if err != nil {
			return nil, err
		}
		p.RMWeb, p.NMWeb, p.NodeID = kv["rm-web"], kv["nm-web"], kv["node-id"]
		return p, nil
	}
	// The NodeManager's JVM starts once the RM's configuration is written,
	// beside the RM's start.
	if line, err := rm.readLine(ctx); err != nil || line != "configured" {
		rm.kill()
		return nil, fmt.Errorf("the real-YARN peer did not configure: %q %v (log: %s)", line, err, rm.logTail(20))
	}
	if err := p.startNM(ctx, true); err != nil {
		return nil, err
	}
	if _, err := rm.do(ctx, "wait-node"); err != nil {
		p.kill()
		return nil, fmt.Errorf("the real-YARN NodeManager did not register: %w (log: %s)", err, p.LogTail(20))
	}
	return p, nil
}

func fields(s string) map[string]string {
	m := map[string]string{}
	for _, f := range strings.Fields(s) {
		if k, v, ok := strings.Cut(f, "="); ok {
			m[k] = v
		}
	}
	return m
}

// Do sends one command to the ResourceManager's JVM and returns the
// answer after "ok ".
func (p *Peer) Do(ctx context.Context, command string) (string, error) {
	return p.rm.do(ctx, command)
}

// Container is one container an application's AM asks for.
type Container struct {
	MB, Vcores int
	// Replace: asked for again when it completes with a non-zero exit.
	Replace bool
	// Command is the shell command the container runs.
	Command string
}

// App is an application to submit.
type App struct {
	Name, Queue, Type, User string
	Tags                    []string
	Containers              []Container
}

// Submitted is a submitted application.
type Submitted struct {
	ID   string
	spec string
}

// Submit submits app with the peer's AM; it returns at once.
func (p *Peer) Submit(ctx context.Context, app App) (Submitted, error) {
	spec := filepath.Join(p.opts.Dir, fmt.Sprintf("spec-%s-%d", app.Name, time.Now().UnixNano()))
	var b strings.Builder
	for _, c := range app.Containers {
		fmt.Fprintf(&b, "%d %d %t %s\n", c.MB, c.Vcores, c.Replace, c.Command)
	}
	if err := os.WriteFile(spec, []byte(b.String()), 0o644); err != nil {
		return Submitted{}, err
	}
	tags := strings.Join(app.Tags, ",")
	if tags == "" {
		tags = "-"
	}
	id, err := p.Do(ctx, strings.Join([]string{"submit", app.Name, app.Queue, app.Type, tags, app.User, spec}, " "))
	return Submitted{ID: id, spec: spec}, err
}

// Event is a line of an AM's event log.
type Event struct {
	Kind, Container string
	// Rest: the spec index, or for "completed" the state, exit status and
	// diagnostics.
	Rest string
}

// Events reads what the application's AM logged so far.
func (s Submitted) Events() []Event {
	b, _ := os.ReadFile(s.spec + ".events")
	var evs []Event
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.SplitN(l, " ", 3)
		if len(f) == 0 || f[0] == "" {
			continue
		}
		e := Event{Kind: f[0]}
		if len(f) > 1 {
			e.Container = f[1]
		}
		if len(f) > 2 {
			e.Rest = f[2]
		}
		evs = append(evs, e)
	}
	return evs
}

// Finish tells the application's AM to unregister.
func (s Submitted) Finish() error { return os.WriteFile(s.spec+".finish", nil, 0o644) }

// LogTail returns the last n lines of the peer's log.
func (p *Peer) LogTail(n int) string {
	if p.nm == nil {
		return p.rm.logTail(n)
	}
	return "ResourceManager:\n" + p.rm.logTail(n) + "\nNodeManager:\n" + p.nm.logTail(n)
}

func (p *Peer) kill() {
	if p.nm != nil {
		p.nm.kill()
	}
	p.rm.kill()
}

// Stop stops the NodeManager (it kills its containers) and the cluster,
// and their JVMs; after 60 s a JVM's process group is killed.
// The class lists they wrote are kept and their class-data sharing
// archives dumped then (the first run of a kind on the host).
func (p *Peer) Stop() {
	if p.nm != nil {
		p.nm.stop()
	}
	p.rm.stop()
	for _, c := range []classSharing{p.rm.cds, p.nmCDS(), p.am} {
		if err := c.finish(); err != nil {
			fmt.Fprintln(os.Stderr, "yarnpeer:", err)
		}
	}
}

// freePorts returns n free TCP ports on loopback (held together while
// chosen, so they differ).
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
