package cgroups

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"
)

// UsageReader reads the usage files of container cgroups: CPU time, CPU
// throttling and memory.stat, for cgroup v1 and v2, with koordlet's
// semantics (the same fields and units as koordlet's CgroupReader) but
// without its per-read stat, string copies and maps, so that a collection
// over 1,000 containers stays cheap.
//
// It keeps each file open between reads and re-reads it with pread at
// offset 0 (cgroupfs regenerates the content on every read from the start),
// one syscall per file per cycle instead of three. A file of a removed
// cgroup answers ENODEV and is closed; Forget closes the files of a dir the
// caller no longer reads. At most maxOpenFiles stay open; past that, files
// are opened and closed per read (also past a quarter of the process's
// descriptor limit). It reuses one buffer and is not safe for concurrent
// use; Close releases the descriptors.
type UsageReader struct {
	root string
	v2   bool
	buf  []byte
	fds  map[fileKey]int
	// maxOpen bounds the kept descriptors: maxOpenFiles, or a quarter of
	// the process's descriptor limit when that is lower.
	maxOpen int
}

type fileKey struct{ subsystem, dir, file string }

// maxOpenFiles bounds the descriptors a UsageReader keeps open.
const maxOpenFiles = 16384

// NewUsageReader returns a reader of the cgroups under root (koordlet's
// --cgroup-root-dir); v2 selects the unified hierarchy's files.
func NewUsageReader(root string, v2 bool) *UsageReader {
	maxOpen := maxOpenFiles
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur/4 < uint64(maxOpen) {
		maxOpen = int(lim.Cur / 4)
	}
	return &UsageReader{root: root, v2: v2, buf: make([]byte, 8192), fds: map[fileKey]int{}, maxOpen: maxOpen}
}

// NoKeep makes the reader open and close files on every read (for
// occasional readers that cannot tell when a cgroup goes away).
func (r *UsageReader) NoKeep() *UsageReader {
	r.Close()
	r.maxOpen = 0
	return r
}

// Forget closes the files kept open for dir.
func (r *UsageReader) Forget(dir string) {
	for k, fd := range r.fds {
		if k.dir == dir {
			_ = syscall.Close(fd)
			delete(r.fds, k)
		}
	}
}

// Close closes every file kept open.
func (r *UsageReader) Close() {
	for k, fd := range r.fds {
		_ = syscall.Close(fd)
		delete(r.fds, k)
	}
}

// OpenFiles returns how many files are kept open.
func (r *UsageReader) OpenFiles() int { return len(r.fds) }

// IsGone reports whether err means the cgroup vanished during the read.
func IsGone(err error) bool { return isGone(err) }

func (r *UsageReader) read(subsystem, dir, file string) error {
	if r.v2 {
		subsystem = ""
	}
	key := fileKey{subsystem, dir, file}
	if fd, ok := r.fds[key]; ok {
		err := r.pread(fd)
		if err == nil {
			return nil
		}
		_ = syscall.Close(fd)
		delete(r.fds, key)
		if isGone(err) {
			return fmt.Errorf("read %s: %w", r.path(key), err)
		}
		// Any other error: retry once with a fresh descriptor below.
	}
	p := r.path(key)
	if len(r.fds) >= r.maxOpen {
		var err error
		if r.buf, err = readInto(p, r.buf); err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		return nil
	}
	fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("read %s: %w", p, err)
	}
	if err := r.pread(fd); err != nil {
		_ = syscall.Close(fd)
		return fmt.Errorf("read %s: %w", p, err)
	}
	r.fds[key] = fd
	return nil
}

func (r *UsageReader) path(k fileKey) string {
	return filepath.Join(r.root, k.subsystem, k.dir, k.file)
}

// pread reads the whole file behind fd from offset 0 into r.buf.
func (r *UsageReader) pread(fd int) error {
	buf := r.buf[:cap(r.buf)]
	n := 0
	for {
		m, err := syscall.Pread(fd, buf[n:], int64(n))
		if err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			return err
		}
		n += m
		if m == 0 || n < len(buf) {
			r.buf = buf[:n]
			return nil
		}
		grown := make([]byte, 2*len(buf))
		copy(grown, buf)
		buf = grown
	}
}

// CPUUsage returns the cgroup's cumulative CPU time in nanoseconds:
// cpuacct.usage (v1) or cpu.stat usage_usec × 1000 (v2).
func (r *UsageReader) CPUUsage(dir string) (uint64, error) {
	if r.v2 {
		if err := r.read("", dir, "cpu.stat"); err != nil {
			return 0, err
		}
		v, ok := field(r.buf, "usage_usec")
		if !ok || v < 0 {
			return 0, fmt.Errorf("cpu.stat of %s has no usage_usec", dir)
		}
		return uint64(v) * 1000, nil
	}
	if err := r.read("cpuacct", dir, "cpuacct.usage"); err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(string(bytes.TrimSpace(r.buf)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse cpuacct.usage of %s: %w", dir, err)
	}
	return v, nil
}

// CPUStat returns the cgroup's CFS throttling counters from cpu.stat
// (throttled time in nanoseconds on both versions).
func (r *UsageReader) CPUStat(dir string) (system.CPUStatRaw, error) {
	if err := r.read("cpu", dir, "cpu.stat"); err != nil {
		return system.CPUStatRaw{}, err
	}
	var st system.CPUStatRaw
	var ok1, ok2, ok3 bool
	st.NrPeriods, ok1 = field(r.buf, "nr_periods")
	st.NrThrottled, ok2 = field(r.buf, "nr_throttled")
	if r.v2 {
		var us int64
		us, ok3 = field(r.buf, "throttled_usec")
		st.ThrottledNanoSeconds = us * 1000
	} else {
		st.ThrottledNanoSeconds, ok3 = field(r.buf, "throttled_time")
	}
	if !ok1 || !ok2 || !ok3 {
		return system.CPUStatRaw{}, fmt.Errorf("cpu.stat of %s lacks throttling fields", dir)
	}
	return st, nil
}

// MemoryStat returns the cgroup's memory.stat fields koordlet uses:
// hierarchical total_* fields on v1, the plain fields on v2.
func (r *UsageReader) MemoryStat(dir string) (system.MemoryStatRaw, error) {
	if err := r.read("memory", dir, "memory.stat"); err != nil {
		return system.MemoryStatRaw{}, err
	}
	keys := [...]string{"total_cache", "total_rss", "total_inactive_file", "total_active_file", "total_inactive_anon", "total_active_anon", "total_unevictable"}
	if r.v2 {
		keys = [...]string{"file", "anon", "inactive_file", "active_file", "inactive_anon", "active_anon", "unevictable"}
	}
	var m system.MemoryStatRaw
	dst := [...]*int64{&m.Cache, &m.RSS, &m.InactiveFile, &m.ActiveFile, &m.InactiveAnon, &m.ActiveAnon, &m.Unevictable}
	for i, k := range keys {
		v, ok := field(r.buf, k)
		if !ok {
			return system.MemoryStatRaw{}, fmt.Errorf("memory.stat of %s lacks %s", dir, k)
		}
		*dst[i] = v
	}
	return m, nil
}

// PageFaults returns the page faults of the cgroup's tasks so far,
// hierarchical: memory.stat's total_pgfault on v1, pgfault on v2.
func (r *UsageReader) PageFaults(dir string) (int64, error) {
	return r.memoryStatField(dir, "total_pgfault", "pgfault")
}

// MajorFaults returns the major page faults of the cgroup's tasks so far
// (pages read back from a file or swap), hierarchical: memory.stat's
// total_pgmajfault on v1, pgmajfault on v2.
func (r *UsageReader) MajorFaults(dir string) (int64, error) {
	return r.memoryStatField(dir, "total_pgmajfault", "pgmajfault")
}

// memoryStatField is one counter of the cgroup's memory.stat: key v1 on
// cgroup v1, v2 on v2.
func (r *UsageReader) memoryStatField(dir, v1, v2 string) (int64, error) {
	if err := r.read("memory", dir, "memory.stat"); err != nil {
		return 0, err
	}
	key := v1
	if r.v2 {
		key = v2
	}
	v, ok := field(r.buf, key)
	if !ok {
		return 0, fmt.Errorf("memory.stat of %s lacks %s", dir, key)
	}
	return v, nil
}

// MemoryHighEvents returns how often the cgroup (or a descendant) went over
// its memory.high and was throttled: memory.events' high (cgroup v2; v1
// has no memory.high, an error there).
func (r *UsageReader) MemoryHighEvents(dir string) (int64, error) {
	if !r.v2 {
		return 0, fmt.Errorf("memory.events of %s: cgroup v1 has no memory.high", dir)
	}
	if err := r.read("memory", dir, "memory.events"); err != nil {
		return 0, err
	}
	v, ok := field(r.buf, "high")
	if !ok {
		return 0, fmt.Errorf("memory.events of %s lacks high", dir)
	}
	return v, nil
}

// field finds "key value" at the start of a line in b.
func field(b []byte, key string) (int64, bool) {
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if len(line) > len(key) && line[len(key)] == ' ' && string(line[:len(key)]) == key {
			v, err := strconv.ParseInt(string(bytes.TrimSpace(line[len(key)+1:])), 10, 64)
			return v, err == nil
		}
	}
	return 0, false
}
