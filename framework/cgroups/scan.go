package cgroups

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

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
	// Started is the start time of the container's oldest process seen (zero
	// when none could be read): unlike the time the store first saw the
	// container, it survives a koordlet restart.
	Started time.Time
	// AM is what the container's process environment says about whether
	// it is the ApplicationMaster (AMUnknown: the sequence rule decides).
	AM AMEvidence
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

// maxStartPids bounds how many of a container's pids are read for its start
// time (the oldest process is normally the launcher, among the first few).
const maxStartPids = 64

// Scanner scans the YARN hierarchy. It reuses buffers between scans and is
// not safe for concurrent use.
type Scanner struct {
	h     Hierarchy
	buf   []byte
	index map[string]int
	// procCache remembers, per container, the pid whose /proc/<pid>/cgroup
	// resolved the unowned controllers. While that pid is still listed in
	// the container's own cgroup it is the same live process (a pid is not
	// reused while its process lives), so /proc is not read again.
	procCache map[string]procResolution
	// started remembers each container's start time: it is a fact of the
	// container's past, read once.
	started map[string]time.Time
	// boot is the node's boot time, read once; bootTried says this scan
	// already tried and failed to read it (tried once per scan, not once
	// per container: issue 31's resync regression).
	boot      time.Time
	bootTried bool
	// am remembers each container's ApplicationMaster decision from its
	// processes' environment (see fillAM), read through env (bounded in
	// time and in stuck reads).
	am            map[string]amState
	env           *environReader
	environDenied bool
}

type procResolution struct {
	pid  int
	refs Cgroups
}

// NewScanner returns a scanner of h.
func NewScanner(h Hierarchy) *Scanner {
	return &Scanner{h: h, buf: make([]byte, 4096), index: map[string]int{}, procCache: map[string]procResolution{}, started: map[string]time.Time{}, am: map[string]amState{},
		env: newEnvironReader()}
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
	s.bootTried = false
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
		if res.Containers == nil {
			res.Containers = make([]Container, 0, len(names))
		}
		for _, name := range names {
			if !strings.HasPrefix(name, "container_") {
				continue
			}
			i, seen := s.index[name]
			if !seen {
				// The one id rule: a name that only resembles a
				// container's (more leading zeros) is not its cgroup.
				id, err := yarn.ParseContainerID(name)
				if err != nil {
					klog.V(2).Infof("yarn: ignoring cgroup %s/%s: %v", s.h.RootDir(c), name, err)
					continue
				}
				i = len(res.Containers)
				s.index[name] = i
				res.Containers = append(res.Containers, Container{Name: name, ID: id})
			}
			res.Containers[i].Cgroups[c] = Ref{Dir: s.ownDir(&res.Containers[i]), Owned: true}
		}
	}
	if s.h.V2 && len(res.Containers) > 0 {
		v2, _ := s.h.ReadV2Controllers()
		for i := range res.Containers {
			res.Containers[i].Cgroups = v2.Refs(res.Containers[i].Cgroups[0].Dir)
		}
	}
	for i := range res.Containers {
		s.fill(&res.Containers[i])
	}
	for name := range s.procCache {
		if _, ok := s.index[name]; !ok {
			delete(s.procCache, name)
		}
	}
	for name := range s.started {
		if _, ok := s.index[name]; !ok {
			delete(s.started, name)
		}
	}
	for name := range s.am {
		if _, ok := s.index[name]; !ok {
			delete(s.am, name)
		}
	}
	oneAMPerAttempt(res.Containers)
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
	s.fillStarted(c)
	s.fillAM(c)
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
	if cached, ok := s.procCache[c.Name]; ok && slices.Contains(c.Pids, cached.pid) {
		for ctrl, r := range cached.refs {
			if !c.Cgroups[ctrl].Owned && !r.Owned {
				c.Cgroups[ctrl] = r
			}
		}
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

// fillStarted sets c.Started to the start time of its oldest process, read
// once per container from /proc/<pid>/stat.
func (s *Scanner) fillStarted(c *Container) {
	if t, ok := s.started[c.Name]; ok {
		c.Started = t
		return
	}
	if len(c.Pids) == 0 {
		return
	}
	if s.boot.IsZero() {
		if s.bootTried {
			return
		}
		s.bootTried = true
		boot, err := BootTime(s.h.ProcRoot)
		if err != nil {
			klog.V(4).Infof("yarn: container start times unknown: %v", err)
			return
		}
		s.boot = boot
	}
	for i, pid := range c.Pids {
		if i == maxStartPids {
			break
		}
		var err error
		s.buf, err = readInto(filepath.Join(s.h.ProcRoot, strconv.Itoa(pid), "stat"), s.buf)
		if err != nil {
			continue // exited meanwhile
		}
		if t, ok := startTimeOf(s.buf, s.boot); ok && (c.Started.IsZero() || t.Before(c.Started)) {
			c.Started = t
		}
	}
	if !c.Started.IsZero() {
		s.started[c.Name] = c.Started
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
	own := s.ownDir(c)
	for rest := s.buf; len(rest) > 0; {
		var line []byte
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			line, rest = rest, nil
		}
		// hierarchy-id:controller[,controller...]:/path
		first := bytes.IndexByte(line, ':')
		if first < 0 {
			continue
		}
		second := bytes.IndexByte(line[first+1:], ':')
		if second <= 0 {
			continue // malformed, or the v2 line "0::/path"
		}
		names := line[first+1 : first+1+second]
		raw := line[first+second+2:]
		for len(names) > 0 {
			var name []byte
			if i := bytes.IndexByte(names, ','); i >= 0 {
				name, names = names[:i], names[i+1:]
			} else {
				name, names = names, nil
			}
			ctrl, ok := ParseController(string(name))
			if !ok {
				continue
			}
			// Through koordlet's cgroup namespace (private on many v2
			// hosts); a path that cannot be placed resolves nothing.
			path, ok := s.h.NS.Translate(ctrl, string(raw))
			if !ok {
				return false
			}
			if c.Cgroups[ctrl].Owned {
				if path != c.Cgroups[ctrl].Dir {
					return false // the pid is no longer this container's
				}
				continue
			}
			if path == own {
				resolved[ctrl] = Ref{Dir: own, Owned: true}
			} else {
				resolved[ctrl] = Ref{Dir: path}
			}
		}
	}
	c.Cgroups = resolved
	s.procCache[c.Name] = procResolution{pid: pid, refs: resolved}
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
