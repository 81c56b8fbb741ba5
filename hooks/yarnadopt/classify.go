package yarnadopt

// Proc is a process of the NodeManager pod as a scan or an exec event saw
// it.
type Proc struct {
	Pid, PPid int
	// EnvID is the CONTAINER_ID of its environment ("" when none).
	EnvID string
	// UID is its real uid (-1: not read).
	UID int
	// Unread: its environment could not be read now (a process mid-exec, a
	// read that timed out): what it claims is not known, so nothing below
	// it is decided this time.
	Unread bool
	// ParentIn is the container whose cgroup koordlet made its parent
	// (outside the NodeManager pod's cgroups) is in: the process descends
	// from that container's launch.
	ParentIn string
}

// Claims is what Assign checks a process's CONTAINER_ID against: data
// gathered before it runs (the store, the NodeManager's list, the users).
type Claims struct {
	// Listed holds the containers the NodeManager lists as not finished,
	// each with its user as the NM names it.
	Listed map[string]string
	// UIDs holds the uid of each user name the NodeManager pod resolves
	// (its /etc/passwd); a name absent here is not checked.
	UIDs map[string]int
}

// nonsecureLocalUser is the user a non-secure LinuxContainerExecutor runs
// every container as (yarn.nodemanager.linux-container-executor.
// nonsecure-mode.local-user, Hadoop's default).
const nonsecureLocalUser = "nobody"

// Assign decides which processes belong to a YARN container. A process
// belongs to the container whose launch it descends from: following its
// parents within procs, the topmost process whose environment names a
// container is that container's launch, and everything below it is the
// container's, whatever CONTAINER_ID a descendant puts in its own
// environment (the kernel's ancestry, not an environment variable any
// process may set, decides). A process whose parent is in a cgroup
// koordlet made for container X descends from X. The launch's claim holds
// only when the NodeManager lists the container and the launch runs as a
// user that may run it: the container's user (the LCE's secure mode), the
// user the NodeManager itself runs as (the DefaultContainerExecutor, or an
// LCE run as the NM's user) or the non-secure LCE's local user; a name
// the NM pod cannot resolve is not checked. Where the NM runs every
// container as one user the check proves nothing: the kernel then gives
// no container a user of its own (each can signal the others), and the
// ancestry alone decides. A process whose claim does not hold, everything
// below it, a process below one whose environment is not known yet, the
// NodeManager itself and anything else stay unassigned: where they are.
// It returns pid → container id.
func Assign(procs map[int]Proc, c Claims) map[int]string {
	out := make(map[int]string)
	type verdict struct {
		id    string // the container it descends from ("" none)
		known bool   // false: a process above it is unread
		top   int    // the uid of the topmost process of its chain in procs
	}
	decided := make(map[int]verdict, len(procs))
	var resolve func(pid int, depth int) verdict
	resolve = func(pid int, depth int) verdict {
		if v, ok := decided[pid]; ok {
			return v
		}
		p, ok := procs[pid]
		if !ok || depth > len(procs) {
			return verdict{known: true, top: -1}
		}
		decided[pid] = verdict{known: true, top: -1} // cycles (a pid reused as its own ancestor) end here
		v := verdict{known: true, top: -1}
		switch {
		case p.ParentIn != "":
			v.id = p.ParentIn
		case p.PPid != pid:
			v = resolve(p.PPid, depth+1)
		}
		above := v.top // the launcher's side: never the claiming process itself
		if v.top < 0 {
			v.top = p.UID
		}
		switch {
		case p.Unread:
			v.id, v.known = "", false
		case v.known && v.id == "" && p.EnvID != "":
			// The topmost claim of the chain: the container's launch.
			if c.holds(p, above) {
				v.id = p.EnvID
			} else {
				// Not proven: this process and everything below it stay.
				v.known = false
			}
		}
		decided[pid] = v
		return v
	}
	for pid := range procs {
		if v := resolve(pid, 0); v.known && v.id != "" {
			if _, listed := c.Listed[v.id]; listed {
				out[pid] = v.id
			}
		}
	}
	return out
}

// holds reports whether launch p's claim holds: its container is listed
// and p runs as a user that may run it (nmUID: the uid of the topmost
// process of its chain in the pod, the NodeManager or the pod's init).
func (c Claims) holds(p Proc, nmUID int) bool {
	user, ok := c.Listed[p.EnvID]
	if !ok {
		return false
	}
	want, ok := c.UIDs[user]
	if !ok || p.UID < 0 {
		return true // not resolvable here: not checked
	}
	if p.UID == want || (nmUID >= 0 && p.UID == nmUID) {
		return true
	}
	if local, ok := c.UIDs[nonsecureLocalUser]; ok && p.UID == local {
		return true
	}
	return false
}
