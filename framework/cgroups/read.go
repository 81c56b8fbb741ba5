package cgroups

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// readInto reads the whole file at path into buf (grown as needed) and
// returns the filled slice. It allocates nothing beyond the path conversion
// and buffer growth, which keeps a 1,000-container scan cheap.
func readInto(path string, buf []byte) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return buf[:0], err
	}
	defer syscall.Close(fd)
	buf = buf[:cap(buf)]
	if len(buf) == 0 {
		buf = make([]byte, 4096)
	}
	n := 0
	for {
		if n == len(buf) {
			grown := make([]byte, 2*len(buf))
			copy(grown, buf)
			buf = grown
		}
		m, err := syscall.Read(fd, buf[n:])
		if err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			return buf[:0], err
		}
		if m == 0 {
			return buf[:n], nil
		}
		n += m
		// A read that did not fill the buffer returned the whole file:
		// cgroupfs and procfs hand out the whole (small) content in one
		// read, and so do regular files of the fake roots. This saves the
		// EOF read, a quarter of the syscalls of a scan or collection.
		if n < len(buf) {
			return buf[:n], nil
		}
	}
}

// isGone reports whether err means the file or its cgroup vanished
// (container exited mid-read, or a process exited).
func isGone(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENODEV) || errors.Is(err, syscall.ESRCH)
}

// parsePids parses cgroup.procs content: one decimal pid per line.
func parsePids(b []byte) []int {
	count := 0
	for _, c := range b {
		if c == '\n' {
			count++
		}
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		count++
	}
	if count == 0 {
		return nil
	}
	pids := make([]int, 0, count)
	v, digits := 0, 0
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			v = v*10 + int(c-'0')
			digits++
		case c == '\n':
			if digits > 0 && v > 0 {
				pids = append(pids, v)
			}
			v, digits = 0, 0
		default:
			// Not a pid line: skip to the end of the line.
			v, digits = 0, -1<<30
		}
	}
	if digits > 0 && v > 0 {
		pids = append(pids, v)
	}
	return pids
}

// ReadThreads lists the threads in cgroup directory dir (an absolute path):
// cgroup.threads on v2, tasks on v1. Unlike cgroup.procs, which stops
// listing a process once its leader has exited and no thread of it is
// alive, the thread list holds every thread until it leaves the cgroup in
// exit (cgroup_exit), which comes after it dropped its address space
// (exit_mm): a cgroup whose thread list is empty holds no address space of
// its processes any more, while one whose cgroup.procs is empty may still
// have a thread of a killed multi-threaded process (a JVM) freeing it.
func ReadThreads(dir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.threads"))
	if os.IsNotExist(err) {
		b, err = os.ReadFile(filepath.Join(dir, "tasks"))
	}
	if err != nil {
		return nil, err
	}
	return parsePids(b), nil
}

// ReadPids lists the processes in cgroup directory dir (its cgroup.procs;
// an absolute path).
func ReadPids(dir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	return parsePids(b), nil
}
