package yarnadopt

// Proc is a process of the NodeManager pod as a scan or an exec event saw
// it.
type Proc struct {
	Pid, PPid int
	// EnvID is the CONTAINER_ID of its environment ("" when none).
	EnvID string
}

// Assign decides which processes belong to a YARN container: a process
// whose environment names a container the NodeManager lists belongs to it;
// a process without one belongs to the container of its nearest ancestor
// among procs that has one (a child that cleared its environment). A
// process whose environment names a container the NM does not list, and
// everything below it, belongs to none: it is not proven to be a
// container's. The NodeManager itself and anything else stay unassigned.
// It returns pid → container id.
func Assign(procs map[int]Proc, listed func(id string) bool) map[int]string {
	out := make(map[int]string)
	decided := make(map[int]string, len(procs)) // "" = none
	var resolve func(pid int, depth int) string
	resolve = func(pid int, depth int) string {
		if v, ok := decided[pid]; ok {
			return v
		}
		p, ok := procs[pid]
		if !ok || depth > len(procs) {
			return ""
		}
		decided[pid] = "" // cycles (a pid reused as its own ancestor) end here
		v := ""
		switch {
		case p.EnvID != "":
			if listed(p.EnvID) {
				v = p.EnvID
			}
		case p.PPid != pid:
			v = resolve(p.PPid, depth+1)
		}
		decided[pid] = v
		return v
	}
	for pid := range procs {
		if id := resolve(pid, 0); id != "" {
			out[pid] = id
		}
	}
	return out
}
