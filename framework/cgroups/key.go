package cgroups

import "fmt"

// Key names a cgroup on the node the way the BPF programs do (struct
// cgroup_key of bpf/include/yarn_cgroup.h): the id of its hierarchy (0 on
// the unified hierarchy, see HierarchyID) and its kernfs id (the
// directory's inode number). On cgroup v1 every hierarchy numbers its
// kernfs nodes on its own, so a kernfs id alone names one cgroup in each
// hierarchy.
//
// Its layout is the C struct's, padding included, so a Key is put into a
// BPF map as it is.
type Key struct {
	HierarchyID uint32
	_           [4]byte
	// ID is the kernfs id (the directory's inode number).
	ID uint64
}

// String returns "<hierarchy id>/<kernfs id>".
func (k Key) String() string { return fmt.Sprintf("%d/%d", k.HierarchyID, k.ID) }
