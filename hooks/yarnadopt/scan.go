package yarnadopt

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// scan adopts what the NM pod's cgroups hold (a.mu held); false when
// koordlet cannot move processes here.
func (a *Adopter) scan(h cgroups.Hierarchy) bool {
	if !a.ensureWriter(h) {
		return false
	}
	dirs := a.refreshPod(h)
	var pids []int
	for _, d := range dirs {
		ps, err := cgroups.ReadPids(h.AbsDir(scanCtrl, d))
		if err == nil {
			pids = append(pids, ps...)
		}
	}
	if a.exec != nil {
		if n, err := a.exec.Lost(); err == nil && n > a.lost {
			klog.V(2).Infof("yarn: the exec watch dropped %d exec events (ring buffer full); this scan covers them", n-a.lost)
			a.lost = n
		}
	}
	if len(pids) > 0 {
		a.adopt(h, pids, false, 0)
	}
	a.forgetExited(pids)
	return true
}

// scanCtrl is the hierarchy the pod's processes are listed in.
const scanCtrl = cgroups.CPU

// refreshPod finds the NM pod's cgroup and its subtree (relative dirs) and
// points the exec watch at them.
func (a *Adopter) refreshPod(h cgroups.Hierarchy) []string {
	var (
		dir, pod string
		ok       bool
	)
	if a.opts.NMPodCgroup != nil {
		dir, pod, ok = a.opts.NMPodCgroup()
	}
	if !ok {
		a.said.Do("no-pod", func() {
			klog.Infof("yarn: YARNContainerCgroups: no NodeManager pod known (--yarn-nm-pod-selector); container processes are looked for once it runs")
		})
		a.podDir = ""
		a.setWatched(nil)
		return nil
	}
	if dir != a.podDir {
		klog.Infof("yarn: YARNContainerCgroups: looking for YARN container processes in the NodeManager pod %s's cgroup %s", pod, dir)
		a.podDir = dir
	}
	root := h.AbsDir(scanCtrl, dir)
	var dirs []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if rel, err := filepath.Rel(h.AbsDir(scanCtrl, ""), p); err == nil {
			dirs = append(dirs, rel)
		}
		return nil
	})
	a.filterExec(h, dirs)
	return dirs
}

// inPod reports whether the relative cgroup dir is the NM pod's or below.
func (a *Adopter) inPod(dir string) bool {
	return a.podDir != "" && (dir == a.podDir || strings.HasPrefix(dir, a.podDir+"/"))
}

// procfs returns the proc file system of the hierarchy's proc root.
func (a *Adopter) procFS(h cgroups.Hierarchy) (procfs.FS, error) {
	if a.fsRoot != h.ProcRoot || a.fs == (procfs.FS{}) {
		fs, err := procfs.NewFS(h.ProcRoot)
		if err != nil {
			return procfs.FS{}, err
		}
		a.fs, a.fsRoot = fs, h.ProcRoot
	}
	return a.fs, nil
}

// observed is a process pinned and read.
type observed struct {
	p    *cgroups.Pinned
	proc Proc
	from []string // its cgroup per leaf controller (in the pod)
	rss  int64
}

// maxAncestors bounds the parents followed from an exec'd process.
const maxAncestors = 32

// adopt classifies pids (and, from an exec, their ancestors in the pod)
// and moves the processes of listed containers into their cgroups.
func (a *Adopter) adopt(h cgroups.Hierarchy, pids []int, fromExec bool, ktime uint64) {
	if a.layout == LayoutLCE || a.layout == LayoutLCECPUOnly {
		// YARN makes its containers' cgroups here: a cgroup koordlet made
		// first would make the LCE's own mkdir fail.
		return
	}
	pfs, err := a.procFS(h)
	if err != nil {
		return
	}
	ctrls := leafCtrls(h)
	seen := map[int]*observed{}
	defer func() {
		for _, o := range seen {
			if o != nil {
				o.p.Release()
			}
		}
	}()
	procs := map[int]Proc{}
	var observe func(pid, depth int)
	observe = func(pid, depth int) {
		if _, ok := seen[pid]; ok || pid <= 1 {
			return
		}
		seen[pid] = nil
		o := a.observe(h, pfs, pid, ctrls)
		if o == nil {
			return
		}
		procs[pid] = o.proc
		if o.p != nil {
			seen[pid] = o
		}
		// From an exec, the ancestors in the pod up to the NodeManager: the
		// claim is checked against the launch it descends from.
		if fromExec && depth < maxAncestors {
			observe(o.proc.PPid, depth+1)
		}
	}
	for _, pid := range pids {
		observe(pid, 0)
	}
	a.parentsIn(h, procs)
	claims := a.claims(h, procs)
	assigned := Assign(procs, claims.Claims)
	if fromExec && claims.asked {
		for _, pid := range pids {
			_, isAssigned := assigned[pid]
			_, isPending := a.pending[pid]
			if o := seen[pid]; !isAssigned && !isPending && o != nil && len(a.pending) < maxPending {
				// Adopted again when the NM's list arrives.
				id := o.proc.EnvID
				if id == "" {
					id = procs[pid].ParentIn
				}
				a.pending[pid] = pendingExec{ktime: ktime, start: o.p.Start, at: a.opts.Now(), container: id}
			}
		}
	}
	if len(assigned) == 0 {
		return
	}
	// Ordered: a parent before its children (lower pids first is a fair
	// approximation; a child forked after its parent moved is born there).
	order := make([]int, 0, len(assigned))
	for pid := range assigned {
		order = append(order, pid)
	}
	sort.Ints(order)
	for _, pid := range order {
		name := assigned[pid]
		o := seen[pid]
		if o == nil {
			continue
		}
		// The cgroup is made (and checked) once per container; later
		// processes go into what the first one made.
		dirs, _ := leafDirs(h, name)
		var err error
		if a.adoptions[name] == nil {
			dirs, err = ensureLeaf(h, name, a.sayV2)
		}
		if err != nil {
			a.said.Do(leafKey(name), func() { klog.Warningf("yarn: no cgroup for YARN container %s: %v", name, err) })
			a.lastErr = err.Error()
			continue
		}
		execAt := a.execTime(pid, o, fromExec, ktime)
		r := a.move(h, o.p, name, dirs, ctrls, o.from)
		klog.V(3).Infof("yarn: move process %d of YARN container %s from %v (found at its exec: %t): %s", pid, name, o.from, execAt > 0, r)
		a.metrics.moves.WithLabelValues(r).Inc()
		if r != ResultMoved {
			continue
		}
		delete(a.pending, pid)
		ad := a.adoptions[name]
		if ad == nil {
			// The container's launch is its first exec seen in the pod,
			// whichever of its processes is moved first.
			execAt = a.firstExec(name, execAt)
			ad = &Adoption{CgroupMadeAt: a.opts.Now(), Cgroup: h.ContainerRelDir(name)}
			ad.madeMono, _ = monoNow()
			a.adoptions[name] = ad
			if execAt > 0 && ad.madeMono >= execAt {
				d := time.Duration(ad.madeMono - execAt)
				ad.LaunchToCgroupNanos = int64(d)
				a.metrics.launch.Observe(d.Seconds())
			}
			if a.layout == LayoutUnknown {
				a.detectLayout(h)
			}
			klog.V(2).Infof("yarn: YARN container %s runs without a cgroup of YARN's: koordlet made %s and moved its process %d in", name, ad.Cgroup, pid)
		}
		if execAt == 0 {
			// Its exec event, if any, is still to come (lateexec.go).
			a.noteBlind(pid, o.p.Start, name)
		}
		ad.ProcessesMoved++
		ad.MemoryChargedToNodeManagerBytes += o.rss
		a.opts.Charges.Add(name, o.rss)
		a.metrics.charged.Add(float64(o.rss))
	}
}

// observe pins pid, checks it is in the NM pod's cgroups, and reads its
// parent, start time, memory and CONTAINER_ID (the environment once per
// process, bounded); nil when it is gone, elsewhere or unreadable now.
func (a *Adopter) observe(h cgroups.Hierarchy, pfs procfs.FS, pid int, ctrls []cgroups.Controller) *observed {
	p, err := cgroups.Pin(h.ProcRoot, pid)
	if err != nil {
		return nil
	}
	from, ok := a.podPaths(h, pid, ctrls)
	if !ok {
		p.Release()
		return nil
	}
	st, err := readStat(h.ProcRoot, pid)
	if err != nil || st.Start != p.Start {
		p.Release()
		return nil
	}
	key := procKey{pid: pid, start: p.Start, env: st.EnvStart}
	id, ok := a.envs[key]
	if !ok {
		id, err = a.env.ContainerID(h.ProcRoot, pid)
		// An empty environment is not cached: read again at every scan.
		keep := true
		if errors.Is(err, cgroups.ErrEnvironEmpty) && a.emptyEnvironment(h.ProcRoot, pid, key, st) {
			id, err, keep = "", nil, false
		}
		if err != nil {
			if !errors.Is(err, unix.ESRCH) && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, cgroups.ErrEnvironEmpty) {
				klog.V(4).Infof("yarn: environment of %d: %v", pid, err)
			}
			p.Release()
			// Read again at the next scan or exec; what it claims is not
			// known, so nothing below it is decided now.
			return &observed{proc: Proc{Pid: pid, PPid: st.PPid, UID: -1, Unread: true}}
		}
		// The one id rule: a CONTAINER_ID that only resembles a
		// container's (more leading zeros) does not claim that container.
		if id != "" {
			if _, perr := yarn.ParseContainerID(id); perr != nil {
				klog.V(4).Infof("yarn: process %d names CONTAINER_ID %q: left alone: %v", pid, id, perr)
				id = ""
			}
		}
		if !p.Alive() {
			p.Release()
			return nil // the environment may have been another process's
		}
		if keep {
			a.envs[key] = id
		}
	}
	var rss int64
	uid := -1
	if proc, err := pfs.Proc(pid); err == nil {
		if s, err := proc.NewStatus(); err == nil {
			rss = int64(s.RssAnon + s.RssShmem)
			uid = int(s.UIDs[0])
		}
	}
	if !p.Alive() {
		p.Release()
		return nil // the status may have been another process's
	}
	return &observed{p: p, proc: Proc{Pid: pid, PPid: st.PPid, EnvID: id, UID: uid}, from: from, rss: rss}
}

// forgetExited drops the cached environments of processes no longer in
// the pod (they exited or were moved).
func (a *Adopter) forgetExited(pids []int) {
	live := make(map[int]bool, len(pids))
	for _, p := range pids {
		live[p] = true
	}
	for k := range a.envs {
		if !live[k.pid] {
			delete(a.envs, k)
		}
	}
	for k := range a.empties {
		if !live[k.pid] {
			delete(a.empties, k)
		}
	}
}

// parentsIn marks the processes whose parent is outside procs and in a
// cgroup koordlet made for a container: they descend from its launch.
func (a *Adopter) parentsIn(h cgroups.Hierarchy, procs map[int]Proc) {
	for pid, p := range procs {
		if _, ok := procs[p.PPid]; ok || p.PPid <= 1 || p.Unread {
			continue
		}
		d, ok := h.PathOf(p.PPid, scanCtrl)
		if !ok {
			continue
		}
		name := filepath.Base(d)
		if yarn.IsCanonical(name) && d == h.ContainerRelDir(name) {
			p.ParentIn = name
			procs[pid] = p
		}
	}
}

// gathered is what claims gathered; asked: a NodeManager list that may
// name more was asked for.
type gathered struct {
	Claims
	asked bool
}

// maxPending bounds the exec'd processes waiting for a NodeManager list.
const maxPending = 1024

// claims gathers what Assign checks the claims of procs against: which of
// the containers they name the NodeManager lists, with their users, and
// the uids of those users in the NodeManager pod.
func (a *Adopter) claims(h cgroups.Hierarchy, procs map[int]Proc) gathered {
	c := gathered{Claims: Claims{Listed: map[string]string{}}}
	for _, p := range procs {
		for _, id := range []string{p.EnvID, p.ParentIn} {
			if _, done := c.Listed[id]; done || id == "" {
				continue
			}
			user, ok, asked := a.listed(id)
			if ok {
				c.Listed[id] = user
			}
			c.asked = c.asked || asked
		}
	}
	if len(c.Listed) > 0 {
		c.UIDs = a.podUsers(h, procs)
	}
	return c
}

// listed reports whether the NodeManager lists container id as not
// finished, and its user: from the store, else from the NodeManager's last
// list; asked reports that a list was asked for (in the background) that
// may name it.
func (a *Adopter) listed(id string) (user string, ok, asked bool) {
	if !yarn.IsCanonical(id) {
		return "", false, false
	}
	if c, ok := a.opts.Store.Get(id); ok && c.State != "" {
		return c.User, !yarn.IsTerminalState(c.State), false
	}
	return a.nm.lookup(id)
}

// leafKey is the said key of a container whose cgroup could not be made:
// said once while the container is present, forgotten at its removal.
func leafKey(name string) string { return "leaf:" + name }
