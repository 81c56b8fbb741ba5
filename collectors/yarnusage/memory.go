package yarnusage

import (
	"maps"
	"slices"
	"strings"
	"sync"

	"k8s.io/klog/v2"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

// MemoryAccountingStatus says how the YARN containers' memory was measured
// at the last cycle.
type MemoryAccountingStatus struct {
	// Cgroup counts the containers measured by their own memory cgroup.
	Cgroup int `json:"cgroup"`
	// Processes counts the containers without a memory cgroup of their own
	// (YARN's CPU-only cgroups handler), measured as the sum of their
	// processes' RSS.
	Processes int `json:"processes"`
	// ChargedTo lists the memory cgroups the memory of the containers
	// measured by their processes is charged to: the NodeManager pod's,
	// which upstream koordlet sees as one BE pod holding all of it.
	ChargedTo []string `json:"chargedTo,omitempty"`
	// ChargedToNodeManager lists, by id, the containers koordlet moved
	// into a memory cgroup of their own while they held memory
	// (YARNContainerCgroups adopting a running container) whose charge is
	// not their own yet: cgroup v2 and kernels from 6.8 move no charges,
	// so what they held stays charged to the cgroup they left (the
	// NodeManager pod's) until they free it. Their memory is their
	// cgroup's charge plus that (cgroups.TrueMemory).
	ChargedToNodeManager map[string]ChargeSplit `json:"chargedToNodeManager,omitempty"`
	// ChargedToNodeManagerBytes sums their ElsewhereBytes.
	ChargedToNodeManagerBytes int64 `json:"chargedToNodeManagerBytes,omitempty"`
}

// ChargeSplit is where a moved container's memory is charged.
type ChargeSplit struct {
	// UsageBytes is its memory (without page cache) as reported.
	UsageBytes int64 `json:"usageBytes"`
	// ChargeBytes is what its own memory cgroup is charged.
	ChargeBytes int64 `json:"chargeBytes"`
	// ElsewhereBytes is what stays charged to the cgroup it left.
	ElsewhereBytes int64 `json:"elsewhereBytes"`
}

// maxChargedTo bounds MemoryAccountingStatus.ChargedTo (normally one: the
// NodeManager pod's memory cgroup).
const maxChargedTo = 8

// memoryAccounting is the collector's record of the accountings it used.
type memoryAccounting struct {
	mu     sync.Mutex
	last   MemoryAccountingStatus
	logged bool

	// cur is filled during a cycle, then published as last.
	cur MemoryAccountingStatus
	// seen are the accountings and charged-to cgroups already logged.
	seen        map[cgroups.MemoryAccounting]bool
	seenCharged map[string]bool
	truncated   bool
	// origins caches, for one cycle, what the memory cgroups that moved
	// containers came from are charged (-1: unreadable).
	origins map[string]int64
}

// LastMemoryAccounting returns how memory was measured at the last cycle;
// ok is false before the first cycle.
func (c *Collector) LastMemoryAccounting() (MemoryAccountingStatus, bool) {
	c.mem.mu.Lock()
	defer c.mem.mu.Unlock()
	st := c.mem.last
	st.ChargedTo = slices.Clone(st.ChargedTo)
	st.ChargedToNodeManager = maps.Clone(st.ChargedToNodeManager)
	return st, c.mem.logged
}

// noteMemoryAccounting records that ct's memory was measured by acc, and
// says once in the log which accounting is used and, for containers without
// a memory cgroup, where their memory is charged.
func (c *Collector) noteMemoryAccounting(ct *store.Container, acc cgroups.MemoryAccounting) {
	m := &c.mem
	if m.seen == nil {
		m.seen, m.seenCharged = map[cgroups.MemoryAccounting]bool{}, map[string]bool{}
	}
	if !m.seen[acc] {
		m.seen[acc] = true
		switch acc {
		case cgroups.MemoryByCgroup:
			klog.Infof("yarn: memory of YARN containers with their own memory cgroup (e.g. %s) is read from its memory.stat: without page cache anon + unevictable, with page cache + the file LRU lists", ct.Name)
		case cgroups.MemoryByProcesses:
			klog.Infof("yarn: memory of YARN containers without a memory cgroup (e.g. %s) is the sum of their processes' RSS from /proc/<pid>/status: without page cache RssAnon + RssShmem, with page cache + RssFile (mapped files only); processes counted only while proven in the container's own cpu cgroup", ct.Name)
		}
	}
	switch acc {
	case cgroups.MemoryByCgroup:
		m.cur.Cgroup++
	case cgroups.MemoryByProcesses:
		m.cur.Processes++
		dir := ct.Cgroups[cgroups.Memory].Dir
		if dir == "" {
			return // not resolved yet (found by an event before a scan)
		}
		if !slices.Contains(m.cur.ChargedTo, dir) && len(m.cur.ChargedTo) < maxChargedTo {
			m.cur.ChargedTo = append(m.cur.ChargedTo, dir)
		}
		if !m.seenCharged[dir] && len(m.seenCharged) < maxChargedTo {
			m.seenCharged[dir] = true
			klog.Warningf("yarn: YARN container %s has no memory cgroup of its own (YARN's CPU-only cgroups handler, yarn.nodemanager.resource.memory.enabled=false): "+
				"its memory is charged to memory cgroup %s (the NodeManager pod's), which upstream koordlet sees as one BE pod holding all YARN memory; "+
				"koordlet-yarn measures each such container by its processes' RSS (/yarn/containers: memoryAccounting)", ct.Name, dir)
		}
	}
}

// publishMemoryAccounting makes the cycle's record the last one.
func (c *Collector) publishMemoryAccounting() {
	m := &c.mem
	m.mu.Lock()
	m.last, m.logged = m.cur, true
	m.mu.Unlock()
	m.cur = MemoryAccountingStatus{} // last keeps the ChargedTo it had
	clear(m.origins)
}

// processMemory sums the memory of the processes of ct's own cpu cgroup;
// ok is false when no process could be proven the container's (its memory
// is then unknown, not zero).
func (c *Collector) processMemory(ct *store.Container) (cgroups.ProcessMemory, bool) {
	r := c.processReader()
	if r == nil {
		return cgroups.ProcessMemory{}, false
	}
	pm, err := r.Read(cgroups.CPU, ct.Cgroups[cgroups.CPU].Dir)
	if err != nil {
		c.readFailed(ct, "process memory", err)
		return pm, false
	}
	if pm.Truncated && !c.mem.truncated {
		c.mem.truncated = true
		klog.Warningf("yarn: container %s has more than %d processes; its memory counts the first %d only", ct.Name, cgroups.MaxMemoryProcesses, cgroups.MaxMemoryProcesses)
	}
	if pm.Processes == 0 && pm.Gone+pm.Elsewhere > 0 {
		klog.V(4).Infof("yarn: no process of container %s could be proven in its cgroup (%d gone, %d elsewhere)", ct.Name, pm.Gone, pm.Elsewhere)
		return pm, false
	}
	return pm, true
}

// processReader returns the reader of containers' processes, made once the
// hierarchy is known.
func (c *Collector) processReader() *cgroups.ProcessMemoryReader {
	if c.procMem != nil {
		return c.procMem
	}
	var h cgroups.Hierarchy
	if c.opts.CgroupHierarchy != nil {
		var ok bool
		if h, ok = c.opts.CgroupHierarchy(); !ok {
			return nil
		}
	} else {
		v2 := system.GetCurrentCgroupVersion() == system.CgroupVersionV2
		h = cgroups.Hierarchy{CgroupRoot: system.Conf.CgroupRootDir, ProcRoot: system.Conf.ProcRootDir, V2: v2,
			NS: cgroups.NewNamespace(system.Conf.ProcRootDir, system.Conf.CgroupRootDir, v2)}
	}
	c.procMem = cgroups.NewProcessMemoryReader(h)
	return c.procMem
}

// chargedElsewhere measures a container whose processes were moved into its
// memory cgroup holding memory that stayed charged to the cgroup they left
// (recorded in Options.Charges), charge being its cgroup's usage now: by
// its processes until its charge is its own (cgroups.TrueMemory), what is
// left elsewhere bounded by the record and by what the cgroup they left is
// charged now (originCharge), then the record goes and later cycles read
// the cgroup alone. ok is false for a
// container not recorded, or whose processes cannot be read now (the
// charge alone is reported).
func (c *Collector) chargedElsewhere(ct *store.Container, charge int64) (cgroups.ChargeTruth, bool) {
	left, ok := c.opts.Charges.Get(ct.Name)
	if !ok {
		return cgroups.ChargeTruth{}, false
	}
	// No more can stay behind than the cgroup it was left in holds now.
	bound := left
	if oc := c.originCharge(ct); oc >= 0 && oc < bound {
		bound = oc
	}
	var tr cgroups.ChargeTruth
	if bound <= cgroups.OwnChargeSlack {
		tr = cgroups.TrueMemory(charge, 0, bound)
	} else {
		pm, ok := c.processMemory(ct)
		if !ok {
			return tr, false
		}
		tr = cgroups.TrueMemory(charge, pm.Usage(), bound)
	}
	if tr.Own {
		c.opts.Charges.Settle(ct.Name, left)
		if c.procMem != nil {
			c.procMem.Forget(ct.Cgroups[cgroups.CPU].Dir)
		}
		klog.V(2).Infof("yarn: the memory YARN container %s held when koordlet moved it (%dKi) is no longer charged elsewhere: its memory cgroup's charge is its own", ct.Name, left>>10)
		return tr, true
	}
	m := &c.mem
	if m.cur.ChargedToNodeManager == nil {
		m.cur.ChargedToNodeManager = map[string]ChargeSplit{}
	}
	m.cur.ChargedToNodeManager[ct.Name] = ChargeSplit{UsageBytes: tr.Usage, ChargeBytes: charge, ElsewhereBytes: tr.Elsewhere}
	m.cur.ChargedToNodeManagerBytes += tr.Elsewhere
	return tr, true
}

// recheckMoved runs once per own memory cgroup of a container (its first
// sight, or a memory cgroup made for it since) while a gate that moves
// processes into memory cgroups is on (YARNContainerCgroups,
// YARNMemoryCgroup): a container koordlet moved before this koordlet started
// (a restart; Charges lives in memory), or moved by YARNMemoryCgroup (which
// records nothing, and moves containers holding up to 64 MiB), may hold
// memory still charged to the cgroup it left. Only a memory cgroup koordlet
// made can (madeByKoordlet); one YARN made had the container's processes
// from their birth, and what their RSS sums beyond its charge is pages
// counted once per process that maps them (copy-on-write after fork, shared
// memory), not memory charged elsewhere. For one koordlet made, one read of
// its processes tells; what they hold beyond the charge, up to what the
// cgroup they came from is charged (originCharge: the per-process sum
// counts shared pages more than once there too), is recorded, and the
// container is then measured as one just moved.
func (c *Collector) recheckMoved(ct *store.Container, charge int64) {
	if _, ok := c.opts.Charges.Get(ct.Name); ok {
		return
	}
	if !c.madeByKoordlet(ct) {
		return
	}
	pm, ok := c.processMemory(ct)
	if !ok {
		return
	}
	if tr := cgroups.TrueMemory(charge, pm.Usage(), c.originCharge(ct)); !tr.Own {
		c.opts.Charges.Add(ct.Name, tr.Elsewhere)
		klog.V(2).Infof("yarn: YARN container %s holds %dKi more than its memory cgroup is charged (moved in holding it, before this koordlet started): measured by its processes until its charge is its own", ct.Name, tr.Elsewhere>>10)
		return
	}
	if c.procMem != nil {
		c.procMem.Forget(ct.Cgroups[cgroups.CPU].Dir)
	}
}

// madeByKoordlet reports whether ct's own memory cgroup is one koordlet
// made: it carries the marker of the hook that made it (cgroups.ContainerCgroupMarker:
// YARNContainerCgroups; cgroups.MemcgMarker: YARNMemoryCgroup). The markers
// are the record that outlives a koordlet (Charges and the adopter's
// records live in its memory).
func (c *Collector) madeByKoordlet(ct *store.Container) bool {
	abs, ok := c.memoryAbsDir(ct)
	if !ok {
		return false
	}
	return cgroups.MadeByKoordlet(abs)
}

// memoryAbsDir returns ct's own memory cgroup's absolute directory; false
// while the hierarchy is not known.
func (c *Collector) memoryAbsDir(ct *store.Container) (string, bool) {
	r := c.processReader()
	if r == nil {
		return "", false
	}
	return r.Hierarchy().AbsDir(cgroups.Memory, ct.Cgroups[cgroups.Memory].Dir), true
}

// originCharge is what the memory cgroup the processes of ct (moved by
// koordlet into the memory cgroup it made) came from is charged now, anon +
// unevictable like a container's charge: no more of its memory can be left
// there. The origin is the one YARNMemoryCgroup recorded on the cgroup
// (cgroups.MemcgFromMarker), else the NodeManager pod's cgroup
// (Options.NMPodCgroup), which the adopter takes processes from. -1 when
// neither is known or it cannot be read. Read once per cycle per origin.
func (c *Collector) originCharge(ct *store.Container) int64 {
	origin, ok := c.recordedOrigin(ct)
	if !ok && c.opts.NMPodCgroup != nil {
		origin, _, ok = c.opts.NMPodCgroup()
	}
	if !ok || origin == "" {
		return -1
	}
	m := &c.mem
	if v, ok := m.origins[origin]; ok {
		return v
	}
	v := int64(-1)
	if stat, err := c.opts.Reader.MemoryStat(origin); err != nil {
		klog.V(4).Infof("yarn: read the memory cgroup %s that YARN container %s was moved from: %v", origin, ct.Name, err)
	} else {
		v = stat.Usage()
	}
	if m.origins == nil {
		m.origins = map[string]int64{}
	}
	m.origins[origin] = v
	return v
}

// recordedOrigin returns the memory cgroup YARNMemoryCgroup recorded on
// ct's memory cgroup as where its processes came from, when valid.
func (c *Collector) recordedOrigin(ct *store.Container) (string, bool) {
	abs, ok := c.memoryAbsDir(ct)
	if !ok {
		return "", false
	}
	from, ok := cgroups.RecordedOrigin(abs)
	if !ok || !cgroups.ValidOrigin(from, c.procMem.Hierarchy().Dir) {
		return "", false
	}
	return strings.Trim(from, "/"), true
}
