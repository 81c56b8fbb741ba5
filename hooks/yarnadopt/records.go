package yarnadopt

import (
	"maps"
	"time"
)

// Adoption is what koordlet did for one container (GET /yarn/containers).
type Adoption struct {
	// CgroupMadeAt is when koordlet made the container's cgroup.
	CgroupMadeAt time.Time `json:"cgroupMadeAt"`
	// Cgroup is its directory relative to the mount root.
	Cgroup string `json:"cgroup"`
	// ProcessesMoved counts the processes koordlet moved in.
	ProcessesMoved int `json:"processesMoved"`
	// MemoryChargedToNodeManagerBytes is the memory its processes held
	// (RssAnon + RssShmem) when they were moved: charged to the
	// NodeManager pod's cgroup, where it stays on cgroup v2 and on kernels
	// that no longer move charges.
	MemoryChargedToNodeManagerBytes int64 `json:"memoryChargedToNodeManagerBytes"`
	// LaunchToCgroupNanos is from the exec of its first process to that
	// process in the container's cgroup (exec watch only).
	LaunchToCgroupNanos int64 `json:"launchToCgroupNanos,omitempty"`

	// madeMono is when the cgroup was made, CLOCK_MONOTONIC ns (the exec
	// watch's clock; 0: not known).
	madeMono uint64
}

// Status is the adopter's state (GET /yarn/containers).
type Status struct {
	// Layout is what YARN does with container cgroups on this node.
	Layout Layout `json:"layout"`
	// Detection is how container processes are found: "ebpf" (at exec,
	// with the scan behind it) or "scan"; "" until the loop runs.
	Detection    string              `json:"detection"`
	NodeManager  string              `json:"nodeManagerCgroup,omitempty"`
	Error        string              `json:"error,omitempty"`
	Containers   map[string]Adoption `json:"containers"`
	ScanInterval time.Duration       `json:"scanIntervalNanos"`
}

// Status returns the adopter's state: the snapshot its work published
// last (it never waits for that work).
func (a *Adopter) Status() Status {
	s := *a.status.Load()
	s.Containers = maps.Clone(s.Containers)
	return s
}

// publish makes the adopter's state the one Status returns (a.mu held, or
// before the adopter runs).
func (a *Adopter) publish() {
	s := Status{Layout: a.layout, Detection: a.detection, NodeManager: a.podDir, Error: a.lastErr,
		Containers: make(map[string]Adoption, len(a.adoptions)), ScanInterval: a.opts.ScanInterval}
	for n, ad := range a.adoptions {
		s.Containers[n] = *ad
	}
	a.status.Store(&s)
}
