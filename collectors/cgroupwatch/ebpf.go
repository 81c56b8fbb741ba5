package cgroupwatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
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

// Event is one cgroup event below a watched parent.
type Event struct {
	Type EventType
	// Pid is the attached process (Attach only).
	Pid int
	// CgroupID and ParentID are kernfs ids (the directories' inode numbers).
	CgroupID, ParentID uint64
	// Name is the cgroup's directory name.
	Name string
}

// EBPF is the loaded eBPF watch.
type EBPF struct {
	objs  cgroupwatchObjects
	links []link.Link
	rd    *ringbuf.Reader
}

// OpenEBPF loads the programs, watches the given parents and attaches to
// the cgroup_mkdir, cgroup_rmdir and cgroup_attach_task BTF tracepoints. It
// fails (and cleans up) on a kernel without BTF or without the privileges.
func OpenEBPF(parents ...uint64) (*EBPF, error) {
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("remove memlock limit: %w", err)
	}
	e := &EBPF{}
	if err := loadCgroupwatchObjects(&e.objs, nil); err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("load BPF programs: verifier: %+v", ve)
		}
		return nil, fmt.Errorf("load BPF programs: %w", err)
	}
	for _, id := range parents {
		if err := e.AddParent(id); err != nil {
			e.Close()
			return nil, err
		}
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

// AddParent watches the children of the cgroup with kernfs id id.
func (e *EBPF) AddParent(id uint64) error {
	if err := e.objs.Parents.Put(id, uint8(1)); err != nil {
		return fmt.Errorf("watch cgroup %d: %w", id, err)
	}
	return nil
}

// Read blocks for the next event; it returns an error once Close was called.
func (e *EBPF) Read() (Event, error) {
	rec, err := e.rd.Read()
	if err != nil {
		return Event{}, err
	}
	var raw cgroupwatchEvent
	if err := binary.Read(bytes.NewReader(rec.RawSample), binary.LittleEndian, &raw); err != nil {
		return Event{}, fmt.Errorf("decode event: %w", err)
	}
	name := make([]byte, 0, len(raw.Name))
	for _, c := range raw.Name {
		if c == 0 {
			break
		}
		name = append(name, byte(c))
	}
	return Event{Type: EventType(raw.Type), Pid: int(raw.Pid), CgroupID: raw.CgroupId, ParentID: raw.ParentId, Name: string(name)}, nil
}

// Close detaches and unloads everything.
func (e *EBPF) Close() {
	if e.rd != nil {
		_ = e.rd.Close()
	}
	for _, l := range e.links {
		_ = l.Close()
	}
	_ = e.objs.Close()
}
