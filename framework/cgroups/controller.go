// Package cgroups resolves the YARN cgroup hierarchy (cgroup v1 and v2,
// cgroupfs and systemd drivers) and scans the container cgroups below it.
package cgroups

import (
	"encoding/json"
	"fmt"
)

// Controller is a cgroup controller koordlet reads or writes for a container.
type Controller int

// Controllers tracked per YARN container.
const (
	CPU Controller = iota
	CPUAcct
	CPUSet
	Memory
	Blkio
	NumControllers
)

var controllerNames = [NumControllers]string{"cpu", "cpuacct", "cpuset", "memory", "blkio"}

// String returns the cgroup v1 subsystem name of the controller.
func (c Controller) String() string {
	if c < 0 || c >= NumControllers {
		return "unknown"
	}
	return controllerNames[c]
}

// ParseController returns the controller for a cgroup v1 subsystem name.
func ParseController(name string) (Controller, bool) {
	for i, n := range controllerNames {
		if n == name {
			return Controller(i), true
		}
	}
	return 0, false
}

// Ref is where a container's processes live in one controller.
type Ref struct {
	// Dir is the cgroup directory relative to the controller's mount root
	// (cgroup v1) or to the unified mount (v2), without a leading slash.
	Dir string `json:"dir"`
	// Owned is true only when Dir is the container's own cgroup directly
	// below the configured YARN hierarchy. Writers act only on owned refs;
	// an unowned ref is where YARN left the processes (the NM pod's cgroup
	// for controllers YARN does not manage) and is shared with others.
	Owned bool `json:"owned"`
}

// Cgroups holds a container's Ref per controller; a zero Ref is unknown.
type Cgroups [NumControllers]Ref

// MarshalJSON renders the known refs as an object keyed by controller name.
func (c Cgroups) MarshalJSON() ([]byte, error) {
	m := make(map[string]Ref, len(c))
	for i, r := range c {
		if r.Dir != "" {
			m[Controller(i).String()] = r
		}
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the object MarshalJSON writes; unknown controller
// names are an error.
func (c *Cgroups) UnmarshalJSON(b []byte) error {
	var m map[string]Ref
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*c = Cgroups{}
	for name, r := range m {
		ctrl, ok := ParseController(name)
		if !ok {
			return fmt.Errorf("unknown cgroup controller %q", name)
		}
		c[ctrl] = r
	}
	return nil
}
