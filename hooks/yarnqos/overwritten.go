package yarnqos

import (
	"os"
	"strconv"
	"strings"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/resourceexecutor"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"
)

// contested are the Memory QoS files YARN's own cgroup handler also writes
// on a container's cgroup: Hadoop 3.5's memory handler, with
// yarn.nodemanager.resource.memory.enforced, writes the soft limit
// (cgroup v2 memory.low: soft-limit-percentage, 90% by default, of a
// GUARANTEED container's memory; 0 for an OPPORTUNISTIC one) at the launch
// and on every container update. While the BE class's Memory QoS is on,
// memory.min, memory.low and memory.high of a YARN container are
// koordlet's (docs/isolation.md): a value YARN wrote over koordlet's is
// written back at the next apply. memory.max and cpu.weight stay YARN's:
// koordlet never writes them on a container.
var contested = map[system.ResourceType]bool{
	system.MemoryMinName: true, system.MemoryLowName: true, system.MemoryHighName: true,
}

// overwritten reports what u's file holds when it is a contested file that
// no longer holds u's value.
func overwritten(u resourceexecutor.ResourceUpdater) (string, bool) {
	if !contested[u.ResourceType()] {
		return "", false
	}
	b, err := os.ReadFile(u.Path())
	if err != nil {
		return "", false
	}
	held := strings.TrimSpace(string(b))
	if sameMemoryValue(held, u.Value()) {
		return "", false
	}
	return held, true
}

// sameMemoryValue reports whether a memory file holding held has value
// written to it: the kernel keeps memory.min/low/high in pages, so a
// value read back is the one written rounded down to a page.
func sameMemoryValue(held, written string) bool {
	if held == written {
		return true
	}
	h, err1 := strconv.ParseInt(held, 10, 64)
	w, err2 := strconv.ParseInt(written, 10, 64)
	return err1 == nil && err2 == nil && w >= 0 && h == w&^(int64(os.Getpagesize())-1)
}
