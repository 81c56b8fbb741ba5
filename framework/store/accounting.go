package store

import (
	"encoding/json"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
)

// MemoryAccounting returns how the container's memory is measured: by its
// own memory cgroup, by the sum of its processes when YARN made it none
// (CPU-only YARN: its memory is charged to the NodeManager pod's memory
// cgroup, which upstream koordlet sees as one BE pod), or not at all (no
// cgroup of its own).
func (c *Container) MemoryAccounting() cgroups.MemoryAccounting { return c.Cgroups.MemoryAccounting() }

// MarshalJSON renders the container with its memory accounting
// ("memoryAccounting": "cgroup", "processes" or "none"), as /yarn/containers
// shows it. The field is derived from the cgroups, so a decoded Container
// answers MemoryAccounting without it.
func (c Container) MarshalJSON() ([]byte, error) {
	type plain Container
	return json.Marshal(struct {
		*plain
		MemoryAccounting cgroups.MemoryAccounting `json:"memoryAccounting"`
	}{(*plain)(&c), c.Cgroups.MemoryAccounting()})
}
