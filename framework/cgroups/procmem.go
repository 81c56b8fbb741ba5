package cgroups

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// MemoryAccounting is how a container's memory is measured.
type MemoryAccounting string

// Memory accountings.
const (
	// MemoryByCgroup: the container's own memory cgroup (memory.stat).
	MemoryByCgroup MemoryAccounting = "cgroup"
	// MemoryByProcesses: YARN made no memory cgroup for the container
	// (its CPU-only cgroups handler, yarn.nodemanager.resource.memory.enabled
	// =false), so its memory is charged to the NodeManager pod's memory
	// cgroup; the container's memory is the sum over the processes in its
	// own cpu cgroup (see ProcessMemoryReader).
	MemoryByProcesses MemoryAccounting = "processes"
	// MemoryNotMeasured: the container has no cgroup of its own to read
	// (seen by the NodeManager only).
	MemoryNotMeasured MemoryAccounting = "none"
)

// MemoryAccounting returns how the memory of a container with these
// cgroups is measured: its own memory cgroup when it has one (always on
// cgroup v2, where the unified directory is every controller's), else the
// sum over the processes of its own cpu cgroup.
func (c Cgroups) MemoryAccounting() MemoryAccounting {
	switch {
	case c[Memory].Owned:
		return MemoryByCgroup
	case c[CPU].Owned:
		return MemoryByProcesses
	}
	return MemoryNotMeasured
}

// ProcessMemory is the memory of a container's processes: the sum, over the
// processes proven to be in the container's own cgroup, of the resident
// set counters of /proc/<pid>/status, in bytes.
//
// RSS, not PSS: the counters are kept by the kernel per address space, so
// reading them costs the same for a 100 MiB and a 30 GiB JVM, while
// /proc/<pid>/smaps_rollup (PSS) walks every page table of the process
// under its mmap lock on each read (see BenchmarkProcessMemoryFiles). The
// two differ only for pages shared between processes: a YARN container is a
// launcher shell that execs a JVM (or a few forked workers), whose anonymous
// memory is private, so for the anonymous part they agree; the shared part
// is file pages (the JDK's libraries, mapped by the NodeManager too), which
// RSS counts in full in every process that maps them and which only the
// page-cache figure includes.
type ProcessMemory struct {
	// Anon is RssAnon: anonymous pages mapped (heap, stacks, private
	// mappings), the JVM heap.
	Anon int64
	// File is RssFile: file pages mapped (binaries, libraries, mmapped
	// jars and files).
	File int64
	// Shmem is RssShmem: shared memory mapped (tmpfs, SysV and POSIX shared
	// memory, shared anonymous mappings); counted in every process mapping it.
	Shmem int64
	// Processes were counted; Gone were listed but exited before they
	// could be read; Elsewhere were listed but /proc/<pid>/cgroup put them
	// in another cgroup by the time they were checked (moved, or the
	// number reused), or could not be placed through koordlet's cgroup
	// namespace.
	Processes, Gone, Elsewhere int
	// Truncated is true when the cgroup listed more than
	// MaxMemoryProcesses processes; only the first were read.
	Truncated bool
}

// Usage is the memory without page cache, koordlet's container memory
// usage: RssAnon + RssShmem. The memory cgroup's figure is anon LRU +
// unevictable, and shmem pages sit on the anon LRU (they are swap-backed),
// so shmem belongs here; mlocked pages (unevictable) are in RssAnon or
// RssFile already.
func (m ProcessMemory) Usage() int64 { return m.Anon + m.Shmem }

// UsageWithPageCache adds RssFile, the file pages the processes map. It is
// not the memory cgroup's page cache: that holds the file pages first
// touched from the cgroup, mapped or not (files read and written through
// read/write, e.g. shuffle data, are invisible per process), while RssFile
// counts every page a process maps, whoever it was charged to (the JDK's
// libraries, the NodeManager's or another container's), in every process
// that maps it. A rough figure either way; koordlet's decisions use Usage.
func (m ProcessMemory) UsageWithPageCache() int64 { return m.Anon + m.Shmem + m.File }

// MaxMemoryProcesses bounds how many processes of one container are read
// per measurement (a YARN container is a launcher and a JVM, or a few
// dozen Python workers).
const MaxMemoryProcesses = 1024

// statusReadBytes bounds the read of /proc/<pid>/status: the Rss* lines
// are within its first kilobyte.
const statusReadBytes = 4096

// ProcessMemoryReader sums the memory of a container's processes from /proc.
//
// A process is counted only while it is proven to be in the container's own
// cgroup. The first time it is seen it is pinned (a pidfd, or its start
// time before Linux 5.3), Hierarchy.Contains checks that its
// /proc/<pid>/cgroup, read through koordlet's cgroup namespace, puts it in
// the cgroup, its status is read from a descriptor opened then, and the
// pinned process must still be alive after the read: both reads were that
// process's, never those of a process that got its number since. The
// status descriptor is then kept (like UsageReader's cgroup files) and
// re-read with pread at later measurements: a procfs file opened for a
// process reads that process or fails (ESRCH) once it has exited, so a
// successful re-read of a pid listed again in the cgroup proves it is the
// same process, still in the cgroup, at the cost of one read. A pid no
// longer listed has its descriptor closed. At most maxOpenFiles
// descriptors (or a quarter of the process's limit) are kept; past that,
// every measurement takes the first-sight path.
//
// It reuses buffers and is not safe for concurrent use; Forget and Close
// release the descriptors.
type ProcessMemoryReader struct {
	h      Hierarchy
	buf    []byte
	status []byte
	// kept holds, per container cgroup dir, the status descriptor of each
	// process proven in it; gen marks the entries listed by the current
	// read.
	kept    map[string]map[int]keptStatus
	open    int
	maxOpen int
	gen     uint64
	// pidfd_open and pidfd_send_signal; tests replace them.
	pidfdOpen func(pid int) (int, error)
	pidfdLive func(fd int) bool
}

type keptStatus struct {
	fd  int
	gen uint64
}

// NewProcessMemoryReader returns a reader of the processes of containers
// under h (its ProcRoot, cgroup root and cgroup namespace).
func NewProcessMemoryReader(h Hierarchy) *ProcessMemoryReader {
	maxOpen := maxOpenFiles
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur/4 < uint64(maxOpen) {
		maxOpen = int(lim.Cur / 4)
	}
	return &ProcessMemoryReader{h: h, buf: make([]byte, 4096), status: make([]byte, statusReadBytes),
		kept: map[string]map[int]keptStatus{}, maxOpen: maxOpen,
		pidfdOpen: func(pid int) (int, error) { return unix.PidfdOpen(pid, 0) },
		pidfdLive: func(fd int) bool { return unix.PidfdSendSignal(fd, 0, nil, 0) == nil }}
}

// Hierarchy is the hierarchy the reader reads.
func (r *ProcessMemoryReader) Hierarchy() Hierarchy { return r.h }

// NoKeep makes the reader keep no descriptor: every process takes the
// first-sight path (for occasional readers that cannot tell when a
// container goes away).
func (r *ProcessMemoryReader) NoKeep() *ProcessMemoryReader {
	r.Close()
	r.maxOpen = 0
	return r
}

// Forget closes the descriptors kept for the processes of cgroup dir.
func (r *ProcessMemoryReader) Forget(dir string) {
	for _, k := range r.kept[dir] {
		_ = syscall.Close(k.fd)
		r.open--
	}
	delete(r.kept, dir)
}

// Close closes every descriptor kept.
func (r *ProcessMemoryReader) Close() {
	for dir := range r.kept {
		r.Forget(dir)
	}
}

// OpenFiles returns how many descriptors are kept.
func (r *ProcessMemoryReader) OpenFiles() int { return r.open }

// Read sums the memory of the processes in cgroup dir (relative to the
// mount root) of controller ctrl: the container's own cpu cgroup. It lists
// the cgroup's processes now (children forked since the last scan count
// too) and reads each as the type's comment says; a process that exits or
// leaves on the way is not counted. The error is the cgroup's (gone:
// IsGone).
func (r *ProcessMemoryReader) Read(ctrl Controller, dir string) (ProcessMemory, error) {
	var m ProcessMemory
	var err error
	r.gen++
	defer r.dropUnlisted(dir)
	r.buf, err = readInto(filepath.Join(r.h.AbsDir(ctrl, dir), "cgroup.procs"), r.buf)
	if err != nil {
		return m, fmt.Errorf("list processes of %s: %w", dir, err)
	}
	for rest := r.buf; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		pid, err := strconv.Atoi(string(bytes.TrimSpace(line)))
		if err != nil || pid <= 0 {
			continue
		}
		if m.Processes+m.Gone+m.Elsewhere == MaxMemoryProcesses {
			m.Truncated = true
			break
		}
		if !r.reread(&m, dir, pid) {
			r.readProcess(&m, pid, ctrl, dir)
		}
	}
	return m, nil
}

// reread re-reads the kept status descriptor of pid, listed again in dir;
// false when none is kept.
func (r *ProcessMemoryReader) reread(m *ProcessMemory, dir string, pid int) bool {
	k, ok := r.kept[dir][pid]
	if !ok {
		return false
	}
	anon, file, shmem, err := r.preadStatus(k.fd)
	if err != nil {
		// Exited (ESRCH), or a zombie's status without Rss lines.
		r.drop(dir, pid, k.fd)
		m.Gone++
		return true
	}
	k.gen = r.gen
	r.kept[dir][pid] = k
	m.add(anon, file, shmem)
	return true
}

// readProcess reads a process not seen before: it pins it, checks that it
// is in dir, reads its status and checks the pinned process is still alive.
func (r *ProcessMemoryReader) readProcess(m *ProcessMemory, pid int, ctrl Controller, dir string) {
	live, release, ok := r.pin(pid)
	if !ok {
		m.Gone++
		return
	}
	defer release()
	if !r.h.Contains(pid, ctrl, dir) {
		if live() {
			m.Elsewhere++
		} else {
			m.Gone++
		}
		return
	}
	fd, err := syscall.Open(filepath.Join(r.h.ProcRoot, strconv.Itoa(pid), "status"), syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		m.Gone++
		return
	}
	anon, file, shmem, err := r.preadStatus(fd)
	if err != nil || !live() {
		_ = syscall.Close(fd)
		m.Gone++
		return
	}
	m.add(anon, file, shmem)
	if r.open >= r.maxOpen {
		_ = syscall.Close(fd)
		return
	}
	if r.kept[dir] == nil {
		r.kept[dir] = map[int]keptStatus{}
	}
	r.kept[dir][pid] = keptStatus{fd: fd, gen: r.gen}
	r.open++
}

// preadStatus reads the Rss counters from a status descriptor: one read of
// at most statusReadBytes at offset 0 (procfs regenerates the content).
func (r *ProcessMemoryReader) preadStatus(fd int) (anon, file, shmem int64, err error) {
	var n int
	for {
		n, err = syscall.Pread(fd, r.status[:statusReadBytes], 0)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		return 0, 0, 0, err
	}
	return parseStatusRss(r.status[:n])
}

func (m *ProcessMemory) add(anon, file, shmem int64) {
	m.Anon += anon
	m.File += file
	m.Shmem += shmem
	m.Processes++
}

// drop closes the kept descriptor of pid in dir.
func (r *ProcessMemoryReader) drop(dir string, pid, fd int) {
	_ = syscall.Close(fd)
	delete(r.kept[dir], pid)
	r.open--
}

// dropUnlisted closes the descriptors of dir's processes the current read
// did not list (exited, moved, or past the bound).
func (r *ProcessMemoryReader) dropUnlisted(dir string) {
	for pid, k := range r.kept[dir] {
		if k.gen != r.gen {
			r.drop(dir, pid, k.fd)
		}
	}
	if len(r.kept[dir]) == 0 {
		delete(r.kept, dir)
	}
}

// pin pins process pid: live reports whether the pinned process still runs
// (so its number still names it), release unpins. ok is false when pid is
// gone already.
func (r *ProcessMemoryReader) pin(pid int) (live func() bool, release func(), ok bool) {
	fd, err := r.pidfdOpen(pid)
	if err == nil {
		return func() bool { return r.pidfdLive(fd) }, func() { _ = unix.Close(fd) }, true
	}
	if errors.Is(err, syscall.ESRCH) {
		return nil, nil, false
	}
	// No pidfd_open (before Linux 5.3): pin by start time.
	start, ok := TaskStartTicks(r.h.ProcRoot, pid)
	if !ok {
		return nil, nil, false
	}
	return func() bool {
		now, ok := TaskStartTicks(r.h.ProcRoot, pid)
		return ok && now == start
	}, func() {}, true
}

// errNoRss: a status without Rss lines (a zombie or a kernel thread; or a
// kernel before 4.5, which has no RssAnon).
var errNoRss = errors.New("no RssAnon/RssFile/RssShmem in status")

// parseStatusRss returns RssAnon, RssFile and RssShmem of a
// /proc/<pid>/status content, in bytes.
func parseStatusRss(b []byte) (anon, file, shmem int64, err error) {
	found := 0
	for rest := b; len(rest) > 0 && found < 3; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		if !bytes.HasPrefix(line, []byte("Rss")) {
			continue
		}
		var dst *int64
		switch {
		case bytes.HasPrefix(line, []byte("RssAnon:")):
			dst, line = &anon, line[len("RssAnon:"):]
		case bytes.HasPrefix(line, []byte("RssFile:")):
			dst, line = &file, line[len("RssFile:"):]
		case bytes.HasPrefix(line, []byte("RssShmem:")):
			dst, line = &shmem, line[len("RssShmem:"):]
		default:
			continue
		}
		v, ok := parseKB(line)
		if !ok {
			return 0, 0, 0, fmt.Errorf("malformed status line %q", line)
		}
		*dst = v
		found++
	}
	if found < 3 {
		return 0, 0, 0, errNoRss
	}
	return anon, file, shmem, nil
}

// parseKB parses "\t  1234 kB" into bytes.
func parseKB(b []byte) (int64, bool) {
	b = bytes.TrimSpace(b)
	num, ok := bytes.CutSuffix(b, []byte("kB"))
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(string(bytes.TrimSpace(num)), 10, 64)
	if err != nil || v < 0 {
		return 0, false
	}
	return v << 10, true
}
