package yarnevict

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/policy"
	"github.com/koordlet-yarn/koordlet-yarn/framework/rmrelease"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/kill"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/relief"
)

// Deps are what the strategies need besides koordlet's options.
type Deps struct {
	Store *store.Store
	// Killer kills YARN containers; nil until the hierarchy is known.
	Killer func() *kill.Killer
	// IsNodeManagerPod tells the NodeManager pod among the node's pods.
	IsNodeManagerPod func(*corev1.Pod) bool
	Metrics          *Metrics
	// Audit keeps a record of every eviction (nil: none).
	Audit    *kill.Audit
	NodeName string
	// Hierarchy returns the YARN hierarchy dir ("" when unknown).
	Hierarchy func() string
	// CgroupHierarchy returns the YARN hierarchy (proc root, cgroup
	// namespace) for reading the processes of containers without a memory
	// cgroup; ok is false until it is known. nil: the killer's.
	CgroupHierarchy func() (cgroups.Hierarchy, bool)
	// Policy gives YARN containers their priority and tier from the YARN
	// QoS policy (nil: none, the NodeManager pod's priority).
	Policy *policy.Resolver
	// RMRelease is the release of YARN allocations asked of the
	// ResourceManager (YARNRMPreemption; nil: none), and RMSyncDelay how
	// long the RM sync may take to notice an over-commit and ask: the
	// allocatable triggers wait for the RM that long before they kill.
	RMRelease   *rmrelease.Window
	RMSyncDelay func() time.Duration
	// Charges records the containers whose processes koordlet moved into
	// their memory cgroup holding memory that stays charged where they came
	// from (nil: none); they are measured by cgroups.TrueMemory.
	Charges *cgroups.LeftCharges
	// Relief runs the memory relief rungs before the kill
	// (YARNMemoryRelief; nil: none).
	Relief *relief.Relief
}
