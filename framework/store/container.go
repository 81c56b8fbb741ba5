// Package store holds the live model of the node's YARN containers: the
// container entity, a thread-safe store with snapshots and subscriptions,
// and the resync that merges cgroup scans with the NodeManager's view.
package store

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// Source records where a container was seen.
type Source uint8

// Sources; SourceBoth is SourceCgroup|SourceNM.
const (
	SourceCgroup Source = 1 << iota
	SourceNM
	SourceBoth = SourceCgroup | SourceNM
)

// String returns "cgroup", "nm" or "both".
func (s Source) String() string {
	switch s {
	case SourceCgroup:
		return "cgroup"
	case SourceNM:
		return "nm"
	case SourceBoth:
		return "both"
	}
	return "none"
}

// MarshalJSON renders the source as its name.
func (s Source) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// UnmarshalJSON reads a source name.
func (s *Source) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err != nil {
		return err
	}
	for _, v := range []Source{SourceCgroup, SourceNM, SourceBoth} {
		if v.String() == name {
			*s = v
			return nil
		}
	}
	return fmt.Errorf("unknown container source %q", name)
}

// Container is a YARN container as the store knows it. Values handed out by
// the store are shared and must be treated as read-only.
type Container struct {
	// Name is the canonical container id, the store key.
	Name          string           `json:"id"`
	ID            yarn.ContainerID `json:"-"`
	ApplicationID string           `json:"applicationId"`
	// IsAM marks the ApplicationMaster of its attempt; AMSource says what
	// decided it.
	IsAM     bool     `json:"applicationMaster"`
	AMSource AMSource `json:"amSource"`
	// User, State, ExecutionType and the requests come from the NM; they
	// are empty (zero) until the NM has listed the container.
	User               string `json:"user,omitempty"`
	State              string `json:"state,omitempty"`
	ExecutionType      string `json:"executionType,omitempty"`
	RequestMilliCPU    int64  `json:"requestMilliCPU"`
	RequestMemoryBytes int64  `json:"requestMemoryBytes"`
	// Cgroups is the container's cgroup per controller; Pids its processes.
	Cgroups cgroups.Cgroups `json:"cgroups"`
	Pids    []int           `json:"pids"`
	// FirstSeen is when the store first learned of the container.
	FirstSeen time.Time `json:"firstSeen"`
	// Started is when the container started: the start time of its oldest
	// process seen by a cgroup scan (zero until one was read). Unlike
	// FirstSeen it does not move when koordlet restarts.
	Started time.Time `json:"started,omitzero"`
	// Source is where the container was seen at the latest observation of
	// each source.
	Source Source `json:"source"`
}

// HasCgroup reports whether the container's own cgroup exists.
func (c *Container) HasCgroup() bool { return c.Source&SourceCgroup != 0 }

// Cgroup returns the container's cgroup in controller ctrl.
func (c *Container) Cgroup(ctrl cgroups.Controller) cgroups.Ref { return c.Cgroups[ctrl] }

// equal reports whether two containers carry the same observable data.
func (c *Container) equal(o *Container) bool {
	return c.Name == o.Name && c.User == o.User && c.State == o.State &&
		c.ExecutionType == o.ExecutionType && c.RequestMilliCPU == o.RequestMilliCPU &&
		c.RequestMemoryBytes == o.RequestMemoryBytes && c.Cgroups == o.Cgroups &&
		c.Source == o.Source && slices.Equal(c.Pids, o.Pids) && c.Started.Equal(o.Started) &&
		c.IsAM == o.IsAM && c.AMSource == o.AMSource
}

// AMSource says what decided Container.IsAM.
type AMSource string

// AM sources.
const (
	// AMFromSequence: the id's rule, container sequence 1 (the fallback:
	// it misses the AM of an attempt whose ids carry an RM epoch, and takes
	// such an attempt's executor 000001 for one).
	AMFromSequence AMSource = "sequence"
	// AMFromEnvironment: the environment of a process verified to be in
	// the container (the AM markers the ResourceManager's AMLauncher adds,
	// or the container's CONTAINER_ID without them).
	AMFromEnvironment AMSource = "environment"
)

// noteAM records what a scan read from the container's process
// environment; an undecided scan keeps what the store knew.
func (c *Container) noteAM(ev cgroups.AMEvidence) {
	switch ev {
	case cgroups.AMByEnvironment:
		c.IsAM, c.AMSource = true, AMFromEnvironment
	case cgroups.NotAMByEnvironment:
		c.IsAM, c.AMSource = false, AMFromEnvironment
	}
}

// StartedOrFirstSeen returns Started, or FirstSeen when no process start
// time was read.
func (c *Container) StartedOrFirstSeen() time.Time {
	if c.Started.IsZero() {
		return c.FirstSeen
	}
	return c.Started
}

// noteStarted records a scanned start time: the earliest known wins (the
// oldest process may have exited since it was first read).
func (c *Container) noteStarted(t time.Time) {
	if !t.IsZero() && (c.Started.IsZero() || t.Before(c.Started)) {
		c.Started = t
	}
}

// newContainer returns a container for id first seen at now.
func newContainer(name string, id yarn.ContainerID, now time.Time) Container {
	return Container{
		Name:          name,
		ID:            id,
		ApplicationID: id.ApplicationID(),
		IsAM:          id.IsApplicationMaster(),
		AMSource:      AMFromSequence,
		FirstSeen:     now,
	}
}

// enrich copies the NM's view of the container into c.
func (c *Container) enrich(nm *yarn.NMContainer) {
	c.User = nm.User
	c.State = nm.State
	c.ExecutionType = nm.ExecutionType
	c.RequestMilliCPU = nm.TotalVCoresNeeded * 1000
	c.RequestMemoryBytes = nm.TotalMemoryNeededMB << 20
}

// copyNM copies the NM-derived fields of prev into c.
func (c *Container) copyNM(prev *Container) {
	c.User = prev.User
	c.State = prev.State
	c.ExecutionType = prev.ExecutionType
	c.RequestMilliCPU = prev.RequestMilliCPU
	c.RequestMemoryBytes = prev.RequestMemoryBytes
}
