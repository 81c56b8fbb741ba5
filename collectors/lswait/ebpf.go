package lswait

import (
	"fmt"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"

	"github.com/koordlet-yarn/koordlet-yarn/framework/bpfmap"
	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
)

// MaxSlots is how many pods the eBPF source measures at once (the
// program's MAX_SLOTS).
const MaxSlots = 256

// CgroupKey names a cgroup on the node (see cgroups.Key).
type CgroupKey = cgroups.Key

// Probe is the loaded eBPF wait probe: programs on the sched_wakeup,
// sched_wakeup_new and sched_switch BTF tracepoints that time the waits of
// the tasks in the watched cgroups, into one histogram per slot, telling
// the waits behind batch tasks apart.
type Probe struct {
	objs  lswaitObjects
	links []link.Link
}

// OpenProbe loads and attaches the probe; it watches no cgroup until
// Watch. v2 says where tasks' cgroups are: the unified hierarchy (v2) or
// the cpu controller's v1 hierarchy. It fails (and cleans up) on a kernel
// without BTF or the BTF tracepoints (before 5.5), or without the
// privileges; it needs neither task storage nor sched_switch's prev_state
// (make test-kernel-510 loads it on Debian bullseye's 5.10).
func OpenProbe(v2 bool) (*Probe, error) {
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("remove memlock limit: %w", err)
	}
	spec, err := loadLswait()
	if err != nil {
		return nil, err
	}
	hierarchies := uint32(2)
	if v2 {
		hierarchies = 1
	}
	if err := spec.Variables["hierarchies"].Set(hierarchies); err != nil {
		return nil, fmt.Errorf("configure the CPU wait probe: %w", err)
	}
	p := &Probe{}
	if err := spec.LoadAndAssign(&p.objs, nil); err != nil {
		// One line (%v of a verifier error is its last line); the whole
		// log is in the wrapped *ebpf.VerifierError (%+v).
		return nil, fmt.Errorf("load the CPU wait probe: %w", err)
	}
	for _, prog := range []*ebpf.Program{p.objs.OnWakeup, p.objs.OnWakeupNew, p.objs.OnSwitch} {
		l, err := link.AttachTracing(link.TracingOptions{Program: prog})
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("attach the CPU wait probe (%s): %w", prog, err)
		}
		p.links = append(p.links, l)
	}
	return p, nil
}

// Watch counts the waits of the tasks in cgroup k into slot.
func (p *Probe) Watch(k CgroupKey, slot uint32) error {
	if err := p.objs.Watched.Put(k, slot); err != nil {
		return fmt.Errorf("watch CPU waits in cgroup %s: %w", k, err)
	}
	return nil
}

// MarkBatch makes the tasks in cgroup k and below it batch: a watched
// task's wait behind one of them is interference.
func (p *Probe) MarkBatch(k CgroupKey) error {
	if err := p.objs.Batch.Put(k, uint8(1)); err != nil {
		return fmt.Errorf("mark cgroup %s as batch: %w", k, err)
	}
	return nil
}

// UnmarkBatch undoes MarkBatch.
func (p *Probe) UnmarkBatch(k CgroupKey) error {
	if err := bpfmap.Delete(p.objs.Batch, k); err != nil {
		return fmt.Errorf("unmark batch cgroup %s: %w", k, err)
	}
	return nil
}

// Unwatch stops counting the waits in cgroup k.
func (p *Probe) Unwatch(k CgroupKey) error {
	if err := bpfmap.Delete(p.objs.Watched, k); err != nil {
		return fmt.Errorf("unwatch cgroup %s: %w", k, err)
	}
	return nil
}

// Waits are a pod's cumulative waits: All of them, and Others, the same
// waits counting only those behind a batch task (below a cgroup given to
// MarkBatch; the others as 0).
type Waits struct {
	All, Others Hist
}

// Sub returns w − prev (see Hist.Sub).
func (w Waits) Sub(prev Waits) Waits {
	return Waits{All: w.All.Sub(prev.All), Others: w.Others.Sub(prev.Others)}
}

// Add adds o to w.
func (w *Waits) Add(o Waits) {
	w.All.Add(o.All)
	w.Others.Add(o.Others)
}

// Read returns slot's cumulative waits.
func (p *Probe) Read(slot uint32) (Waits, error) {
	var c lswaitHist
	if err := p.objs.Hists.Lookup(slot, &c); err != nil {
		return Waits{}, fmt.Errorf("read the CPU wait histogram of slot %d: %w", slot, err)
	}
	var w Waits
	copy(w.All.Buckets[:], c.Buckets[:])
	copy(w.Others.Buckets[:], c.Others[:])
	w.All.Sum, w.Others.Sum = time.Duration(c.SumNs), time.Duration(c.OthersSumNs)
	return w, nil
}

// Close detaches and unloads the probe.
func (p *Probe) Close() {
	for _, l := range p.links {
		_ = l.Close()
	}
	p.links = nil
	_ = p.objs.Close()
}
