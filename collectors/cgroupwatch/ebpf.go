package cgroupwatch

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

// EventType is what happened to a watched cgroup.
type EventType uint32

// Event types, as the BPF program reports them.
const (
	Mkdir  EventType = 1
	Attach EventType = 2
	Rmdir  EventType = 3
)

func (t EventType) String() string {
	switch t {
	case Mkdir:
		return "mkdir"
	case Attach:
		return "attach"
	case Rmdir:
		return "rmdir"
	}
	return "unknown"
}

// ParentKey names a watched parent cgroup (see cgroups.Key).
type ParentKey = cgroups.Key

// Event is one cgroup event below a watched parent.
type Event struct {
	Type EventType
	// Pid is the attached process (Attach only).
	Pid int
	// Parent is the watched parent the cgroup is directly below.
	Parent ParentKey
	// CgroupID is the cgroup's kernfs id (its directory's inode number).
	CgroupID uint64
	// Name is the cgroup's directory name.
	Name string
}

// DecodeError is a ring-buffer record that is not an event; the record is
// consumed and the next Read goes on with the next one.
type DecodeError struct{ Err error }

func (e *DecodeError) Error() string { return "decode event: " + e.Err.Error() }

func (e *DecodeError) Unwrap() error { return e.Err }

// DefaultRingSize is the ring buffer's size in bytes (about 10000 events).
const DefaultRingSize = 1 << 20

// EBPF is the loaded eBPF watch.
type EBPF struct {
	objs  cgroupwatchObjects
	links []link.Link
	rd    *ringbuf.Reader

	// mu orders Pending against Close (the reader's AvailableBytes does not
	// take the reader's lock).
	mu     sync.Mutex
	closed bool
}

// OpenEBPF loads the programs and attaches them to the cgroup_mkdir,
// cgroup_rmdir and cgroup_attach_task BTF tracepoints, with a ring buffer of
// ringSize bytes (0: DefaultRingSize; else a power of two multiple of the
// page size). It watches no parent until AddParent. It fails (and cleans up)
// on a kernel without BTF or without the privileges.
func OpenEBPF(ringSize int) (*EBPF, error) {
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("remove memlock limit: %w", err)
	}
	spec, err := loadCgroupwatch()
	if err != nil {
		return nil, err
	}
	if ringSize > 0 {
		spec.Maps["events"].MaxEntries = uint32(ringSize)
	}
	e := &EBPF{}
	if err := spec.LoadAndAssign(&e.objs, nil); err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("load BPF programs: verifier: %+v", ve)
		}
		return nil, fmt.Errorf("load BPF programs: %w", err)
	}
	for _, p := range []*ebpf.Program{e.objs.OnMkdir, e.objs.OnRmdir, e.objs.OnAttach} {
		l, err := link.AttachTracing(link.TracingOptions{Program: p})
		if err != nil {
			e.Close()
			return nil, fmt.Errorf("attach %s: %w", p, err)
		}
		e.links = append(e.links, l)
	}
	rd, err := ringbuf.NewReader(e.objs.Events)
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("open ring buffer: %w", err)
	}
	e.rd = rd
	return e, nil
}

// AddParent watches the children of the cgroup k.
func (e *EBPF) AddParent(k ParentKey) error {
	if err := e.objs.Parents.Put(k, uint8(1)); err != nil {
		return fmt.Errorf("watch cgroup %s: %w", k, err)
	}
	return nil
}

// RemoveParent stops watching the children of the cgroup k.
func (e *EBPF) RemoveParent(k ParentKey) error {
	if err := bpfmap.Delete(e.objs.Parents, k); err != nil {
		return fmt.Errorf("unwatch cgroup %s: %w", k, err)
	}
	return nil
}

// Lost returns how many events of watched parents the kernel dropped
// because the ring buffer was full, since OpenEBPF.
func (e *EBPF) Lost() (uint64, error) {
	n, err := bpfmap.Counter(e.objs.Lost)
	if err != nil {
		return 0, fmt.Errorf("read the lost-event counter: %w", err)
	}
	return n, nil
}

// Pending returns the bytes in the ring buffer not read yet (0 once
// closed).
func (e *EBPF) Pending() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || e.rd == nil {
		return 0
	}
	return e.rd.AvailableBytes()
}

// Read blocks for the next event. It returns an error wrapping
// os.ErrClosed once Close was called, a *DecodeError for a record that is
// not an event (Read may be called again), any other error when the ring
// buffer cannot be read.
func (e *EBPF) Read() (Event, error) {
	rec, err := e.rd.Read()
	if err != nil {
		return Event{}, err
	}
	return decodeEvent(rec.RawSample)
}

func decodeEvent(b []byte) (Event, error) {
	var raw cgroupwatchEvent
	if len(b) < binary.Size(raw) {
		return Event{}, &DecodeError{fmt.Errorf("record of %d bytes, want %d", len(b), binary.Size(raw))}
	}
	if err := binary.Read(bytes.NewReader(b), binary.LittleEndian, &raw); err != nil {
		return Event{}, &DecodeError{err}
	}
	switch t := EventType(raw.Type); t {
	case Mkdir, Attach, Rmdir:
	default:
		return Event{}, &DecodeError{fmt.Errorf("unknown event type %d", raw.Type)}
	}
	name := make([]byte, 0, len(raw.Name))
	for _, c := range raw.Name {
		if c == 0 {
			break
		}
		name = append(name, byte(c))
	}
	return Event{Type: EventType(raw.Type), Pid: int(raw.Pid), Parent: ParentKey{HierarchyID: raw.HierarchyId, ID: raw.ParentId},
		CgroupID: raw.CgroupId, Name: string(name)}, nil
}

// Close detaches and unloads everything; a blocked Read returns.
func (e *EBPF) Close() {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	if e.rd != nil {
		_ = e.rd.Close()
	}
	for _, l := range e.links {
		_ = l.Close()
	}
	_ = e.objs.Close()
}
