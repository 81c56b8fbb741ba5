package yarnadopt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/koordlet-yarn/koordlet-yarn/framework/bpfmap"
	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
)

// CgroupKey names a cgroup on the node (see cgroups.Key).
type CgroupKey = cgroups.Key

// ExecEvent is one exec in a watched cgroup.
type ExecEvent struct {
	Pid    int
	Cgroup CgroupKey
	// KtimeNs is the kernel's monotonic clock at the exec (CLOCK_MONOTONIC).
	KtimeNs uint64
}

// ExecWatch is the loaded eBPF exec watch: a program on the
// sched_process_exec BTF tracepoint, filtered in the kernel to the watched
// cgroups.
type ExecWatch struct {
	objs execwatchObjects
	lnk  link.Link
	rd   *ringbuf.Reader

	mu     sync.Mutex
	closed bool
}

// OpenExecWatch loads and attaches the exec watch; it watches no cgroup
// until Watch. It fails (and cleans up) on a kernel without BTF, without
// the tracepoint or without the privileges.
func OpenExecWatch() (*ExecWatch, error) {
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("remove memlock limit: %w", err)
	}
	spec, err := loadExecwatch()
	if err != nil {
		return nil, err
	}
	w := &ExecWatch{}
	if err := spec.LoadAndAssign(&w.objs, nil); err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("load the exec watch: verifier: %+v", ve)
		}
		return nil, fmt.Errorf("load the exec watch: %w", err)
	}
	l, err := link.AttachTracing(link.TracingOptions{Program: w.objs.OnExec})
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("attach the exec watch to sched_process_exec: %w", err)
	}
	w.lnk = l
	if w.rd, err = ringbuf.NewReader(w.objs.Execs); err != nil {
		w.Close()
		return nil, fmt.Errorf("open the exec ring buffer: %w", err)
	}
	return w, nil
}

// Watch reports execs in cgroup k.
func (w *ExecWatch) Watch(k CgroupKey) error {
	if err := w.objs.Watched.Put(k, uint8(1)); err != nil {
		return fmt.Errorf("watch execs in cgroup %s: %w", k, err)
	}
	return nil
}

// Unwatch stops reporting execs in cgroup k.
func (w *ExecWatch) Unwatch(k CgroupKey) error {
	if err := bpfmap.Delete(w.objs.Watched, k); err != nil {
		return fmt.Errorf("unwatch cgroup %s: %w", k, err)
	}
	return nil
}

// Lost returns the exec events dropped because the ring buffer was full.
func (w *ExecWatch) Lost() (uint64, error) {
	n, err := bpfmap.Counter(w.objs.Lost)
	if err != nil {
		return 0, fmt.Errorf("read the lost-exec counter: %w", err)
	}
	return n, nil
}

// Read blocks for the next exec; an error wrapping os.ErrClosed after Close.
func (w *ExecWatch) Read() (ExecEvent, error) {
	rec, err := w.rd.Read()
	if err != nil {
		return ExecEvent{}, err
	}
	return decodeExec(rec.RawSample)
}

func decodeExec(b []byte) (ExecEvent, error) {
	var raw execwatchExecEvent
	if len(b) < binary.Size(raw) {
		return ExecEvent{}, fmt.Errorf("exec record of %d bytes, want %d", len(b), binary.Size(raw))
	}
	if err := binary.Read(bytes.NewReader(b), binary.LittleEndian, &raw); err != nil {
		return ExecEvent{}, fmt.Errorf("decode exec record: %w", err)
	}
	return ExecEvent{Pid: int(raw.Pid), Cgroup: CgroupKey{HierarchyID: raw.HierarchyId, ID: raw.CgroupId}, KtimeNs: raw.KtimeNs}, nil
}

// Close detaches and unloads everything; a blocked Read returns.
func (w *ExecWatch) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.closed = true
	if w.rd != nil {
		_ = w.rd.Close()
	}
	if w.lnk != nil {
		_ = w.lnk.Close()
	}
	_ = w.objs.Close()
}
