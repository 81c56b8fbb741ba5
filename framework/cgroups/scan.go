package cgroups

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// Container is one YARN container cgroup found by a scan.
type Container struct {
	// Name is the canonical container id (the directory name).
	Name    string
	ID      yarn.ContainerID
	Pids    []int
	Cgroups Cgroups
}

// ScanResult is the outcome of one scan.
type ScanResult struct {
	// Containers found, in no particular order.
	Containers []Container
	// RootFound is false when the YARN hierarchy does not exist in any
	// controller (the NM has not created it yet); Containers is then empty.
	RootFound bool
}

// maxPidsTried bounds how many of a container's pids are tried to resolve
// the controllers YARN does not manage.
const maxPidsTried = 3

// Scanner scans the YARN hierarchy. It reuses buffers between scans and is
// not safe for concurrent use.
type Scanner struct {
	h     Hierarchy
	buf   []byte
	index map[string]int
}

// NewScanner returns a scanner of h.
func NewScanner(h Hierarchy) *Scanner {
	return &Scanner{h: h, buf: make([]byte, 4096), index: map[string]int{}}
}

// Hierarchy returns the scanned hierarchy.
func (s *Scanner) Hierarchy() Hierarchy { return s.h }

// Scan lists the container_* cgroups below the YARN hierarchy in every
// tracked controller, reads each container's processes and resolves, from
// /proc/<pid>/cgroup, where its processes live in the controllers YARN does
// not manage. A container that vanishes during the scan is reported without
// pids (or not at all); only an unreadable hierarchy is an error.
func (s *Scanner) Scan() (ScanResult, error) {
	var res ScanResult
	clear(s.index)
	controllers := NumControllers
	if s.h.V2 {
		controllers = 1 // one unified directory serves every controller
	}
	for c := Controller(0); c < controllers; c++ {
		names, found, err := readDirNames(s.h.RootDir(c))
		if err != nil {
			return ScanResult{}, err
		}
		if !found {
			continue
		}
		res.RootFound = true
		for _, name := range names {
			if !strings.HasPrefix(name, "container_") {
				continue
			}
			i, seen := s.index[name]
			if !seen {
				id, err := yarn.ParseContainerID(name)
				if err != nil {
					klog.V(2).Infof("yarn: ignoring cgroup %s/%s: %v", s.h.RootDir(c), name, err)
					continue
				}
				var buf [64]byte
				if string(id.AppendTo(buf[:0])) != name {
					klog.V(2).Infof("yarn: ignoring cgroup %s/%s: not the canonical form of %s", s.h.RootDir(c), name, id)
					continue
				}
				i = len(res.Containers)
				s.index[name] = i
				res.Containers = append(res.Containers, Container{Name: name, ID: id})
			}
			res.Containers[i].Cgroups[c] = Ref{Dir: s.ownDir(&res.Containers[i]), Owned: true}
		}
	}
	if s.h.V2 {
		for i := range res.Containers {
			ref := res.Containers[i].Cgroups[0]
			for c := range res.Containers[i].Cgroups {
				res.Containers[i].Cgroups[c] = ref
			}
		}
	}
	for i := range res.Containers {
		s.fill(&res.Containers[i])
	}
	return res, nil
}

// ownDir returns the container's own relative dir, sharing the string
// between controllers.
func (s *Scanner) ownDir(c *Container) string {
	for _, r := range c.Cgroups {
		if r.Owned {
			return r.Dir
		}
	}
	return s.h.ContainerRelDir(c.Name)
}

// fill reads the pids of c and resolves its unowned controllers.
func (s *Scanner) fill(c *Container) {
	for _, ctrl := range [...]Controller{CPU, Memory, CPUAcct, CPUSet, Blkio} {
		if !c.Cgroups[ctrl].Owned {
			continue
		}
		var err error
		s.buf, err = readInto(filepath.Join(s.h.AbsDir(ctrl, c.Cgroups[ctrl].Dir), "cgroup.procs"), s.buf)
		if err != nil {
			if !isGone(err) {
				klog.V(4).Infof("yarn: read pids of %s in %s: %v", c.Name, ctrl, err)
			}
			continue
		}
		c.Pids = parsePids(s.buf)
		break
	}
	if s.h.V2 || len(c.Pids) == 0 {
		return
	}
	missing := false
	for _, r := range c.Cgroups {
		if !r.Owned {
			missing = true
			break
		}
	}
	if !missing {
		return
	}
	for i, pid := range c.Pids {
		if i == maxPidsTried {
			break
		}
		if s.resolveFromProc(c, pid) {
			return
		}
	}
}

// resolveFromProc fills c's unowned controllers from /proc/<pid>/cgroup,
// after checking that the pid is still in c's own cgroups (it may have
// exited and its number been reused).
func (s *Scanner) resolveFromProc(c *Container, pid int) bool {
	var err error
	s.buf, err = readInto(filepath.Join(s.h.ProcRoot, strconv.Itoa(pid), "cgroup"), s.buf)
	if err != nil {
		return false
	}
	resolved := c.Cgroups
	for _, line := range strings.Split(string(s.buf), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || parts[1] == "" {
			continue
		}
		dir := strings.TrimPrefix(parts[2], "/")
		for _, name := range strings.Split(parts[1], ",") {
			ctrl, ok := ParseController(name)
			if !ok {
				continue
			}
			if c.Cgroups[ctrl].Owned {
				if dir != c.Cgroups[ctrl].Dir {
					return false // the pid is no longer this container's
				}
				continue
			}
			resolved[ctrl] = Ref{Dir: dir, Owned: dir == s.h.ContainerRelDir(c.Name)}
		}
	}
	c.Cgroups = resolved
	return true
}

// readDirNames lists the names in dir; found is false when dir does not exist.
func readDirNames(dir string) (names []string, found bool, err error) {
	f, err := os.Open(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("open YARN hierarchy %s: %w", dir, err)
	}
	defer f.Close()
	names, err = f.Readdirnames(-1)
	if err != nil {
		return nil, true, fmt.Errorf("list YARN hierarchy %s: %w", dir, err)
	}
	return names, true, nil
}
