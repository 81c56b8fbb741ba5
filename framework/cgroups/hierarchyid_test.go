package cgroups

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestHierarchyIDParsers: /proc/cgroups gives a v1 hierarchy's id (0: bound
// to v2, no id); a v2-only /proc/self/cgroup names no controller.
func TestHierarchyIDParsers(t *testing.T) {
	procCgroups := "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpuset\t3\t10\t1\ncpu\t1\t16\t1\nmemory\t0\t50\t1\n"
	id, ok := idFromProcCgroups([]byte(procCgroups), "cpu")
	assert.True(t, ok)
	assert.Equal(t, uint32(1), id)
	_, ok = idFromProcCgroups([]byte(procCgroups), "memory") // bound to v2
	assert.False(t, ok)
	_, ok = idFromSelfCgroup([]byte("0::/\n"), "cpu")
	assert.False(t, ok)
}
