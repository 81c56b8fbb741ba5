package cgroups

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestKeyLayout: Key is struct cgroup_key of bpf/include/yarn_cgroup.h
// ({__u32 hierarchy_id; __u32 pad; __u64 kn_id}), so the BPF maps take it
// as it is.
func TestKeyLayout(t *testing.T) {
	var k Key
	assert.Equal(t, uintptr(16), unsafe.Sizeof(k))
	assert.Equal(t, uintptr(0), unsafe.Offsetof(k.HierarchyID))
	assert.Equal(t, uintptr(8), unsafe.Offsetof(k.ID))
	assert.Equal(t, "3/42", Key{HierarchyID: 3, ID: 42}.String())
}
