package config

import (
	"flag"
	"fmt"
	"strings"
	"time"
)

// Ledger holds the batch ledger and RM node resource sync flags.
type Ledger struct {
	// PatchInterval: at most one patch of the Node's thirdPartyAllocations
	// per interval (changes in between are coalesced).
	PatchInterval time.Duration
	// Hysteresis (percent of the origin batch allocatable) is the growth
	// written as soon as PatchInterval allows; MaxAge bounds how long any
	// smaller change or decrease waits.
	Hysteresis int64
	MaxAge     time.Duration
	// Expiry is how long the NodeManager may be gone (not answering, no
	// YARN container left) before the hadoop-yarn entry is withdrawn.
	Expiry time.Duration
	// RMSyncInterval is how often YARN's capacity is compared with what
	// was last pushed to the ResourceManager (pushed only on a change).
	RMSyncInterval time.Duration
	// RMReadBack is how often what the ResourceManager holds for the node
	// is read back while nothing changed here (also after any RM error).
	RMReadBack time.Duration
	// RMPreemptionTimeout is the over-commit timeout pushed with a
	// capacity below YARN's allocation on the node (YARNRMPreemption): the
	// ResourceManager asks the AMs to give containers back at once and
	// preempts them when it has passed.
	RMPreemptionTimeout time.Duration
	// RMNodeID is the YARN node id (host:port) of this node's NodeManager;
	// empty: the NodeManager pod's annotation yarn.hadoop.apache.org/node-id,
	// else the NM's /ws/v1/node/info.
	RMNodeID string
	// RMPreemptionGrace is the least time after the over-commit timeout
	// that koordlet's allocatable evict still waits for the RM's
	// preemption; the grace is derived from the RM's node heartbeat
	// interval where its /conf answers, and is this value where not.
	RMPreemptionGrace time.Duration
	// RMCapacityRecord is the file that records YARN's own capacity (what
	// the RM held for the node before koordlet's first push), so that it is
	// given back after a crash once the gate is off.
	RMCapacityRecord string
}

// Ledger defaults.
const (
	DefaultLedgerPatchInterval = 5 * time.Second
	DefaultLedgerHysteresis    = 10
	DefaultLedgerMaxAge        = 2 * time.Minute
	DefaultRMSyncInterval      = 10 * time.Second
	DefaultRMReadBack          = 2 * time.Minute
	DefaultLedgerExpiry        = 10 * time.Minute
	DefaultRMPreemptionTimeout = 10 * time.Second
	DefaultRMPreemptionGrace   = 5 * time.Second
	// DefaultRMCapacityRecord is on the host's /var/run/koordlet (the
	// DaemonSet's host-var-run-koordlet mount), which outlives the pod.
	DefaultRMCapacityRecord = "/host-var-run-koordlet/yarn-rm-node-resource.json"
)

func (l *Ledger) initFlags(fs *flag.FlagSet) {
	fs.DurationVar(&l.PatchInterval, "yarn-ledger-patch-interval", l.PatchInterval,
		"At most one patch of the Node's thirdPartyAllocations annotation (YARNBatchLedger) per interval; changes in between are coalesced.")
	fs.Int64Var(&l.Hysteresis, "yarn-ledger-hysteresis", l.Hysteresis,
		"Growth of YARN's allocation (percent of the node's origin batch allocatable, CPU or memory) over the value on the Node that is written as soon as --yarn-ledger-patch-interval allows; smaller changes and decreases wait up to --yarn-ledger-max-age. 0: every growth at once.")
	fs.DurationVar(&l.MaxAge, "yarn-ledger-max-age", l.MaxAge,
		"The longest a change of YARN's allocation below the hysteresis (or a decrease) waits before it is written to the Node.")
	fs.DurationVar(&l.Expiry, "yarn-ledger-expiry", l.Expiry,
		"How long the NodeManager may be gone (not answering, no YARN container left on the node) before the ledger withdraws the Node's hadoop-yarn entry, so that its batch capacity comes back (YARNBatchLedger); written again when the NodeManager answers.")
	fs.DurationVar(&l.RMSyncInterval, "yarn-rm-sync-interval", l.RMSyncInterval,
		"How often YARN's capacity on the node is compared with what was last pushed to the ResourceManager (YARNRMNodeResourceSync); pushed only when it changed.")
	fs.DurationVar(&l.RMReadBack, "yarn-rm-read-back-interval", l.RMReadBack,
		"How often the node's resource is read back from the ResourceManager (GET /ws/v1/cluster/nodes/{id}) while YARN's capacity did not change (YARNRMNodeResourceSync); also after any RM error. An RM restart, a failover or the NodeManager registering again resets the node to its yarn-site capacity: the read-back finds it and pushes again.")
	fs.DurationVar(&l.RMPreemptionTimeout, "yarn-rm-preemption-timeout", l.RMPreemptionTimeout,
		"With YARNRMPreemption: the over-commit timeout pushed to the ResourceManager with a capacity below YARN's allocation on the node. The RM asks the ApplicationMasters at once to give containers back and preempts the containers above the capacity when it has passed (the AMs see PREEMPTED); koordlet's allocatable evict waits for it before it kills YARN containers itself.")
	fs.DurationVar(&l.RMPreemptionGrace, "yarn-rm-preemption-grace", l.RMPreemptionGrace,
		"With YARNRMPreemption: the least time after the over-commit timeout that koordlet's allocatable evict still waits for the ResourceManager's preemption to show. koordlet derives the grace from the RM's node heartbeat interval (GET /conf: two heartbeats, the NodeManager resync interval and a second) and takes the longer; where the RM's configuration cannot be read, this value.")
	fs.StringVar(&l.RMCapacityRecord, "yarn-rm-capacity-record", l.RMCapacityRecord,
		"File recording YARN's own capacity for the node (what the ResourceManager held before koordlet's first push; YARNRMNodeResourceSync), so that koordlet gives it back to the RM when the gate is turned off, also after a crash. Empty: kept in memory only (given back on a clean stop).")
	fs.StringVar(&l.RMNodeID, "yarn-rm-node-id", l.RMNodeID,
		"YARN node id (host:port) of this node's NodeManager for the ResourceManager. Empty: the NodeManager pod's annotation yarn.hadoop.apache.org/node-id, else the NodeManager's /ws/v1/node/info.")
}

func (l *Ledger) validate() error {
	if l.PatchInterval < 100*time.Millisecond {
		return fmt.Errorf("--yarn-ledger-patch-interval %v: must be at least 100ms", l.PatchInterval)
	}
	if l.RMSyncInterval < 100*time.Millisecond {
		return fmt.Errorf("--yarn-rm-sync-interval %v: must be at least 100ms", l.RMSyncInterval)
	}
	if l.Hysteresis < 0 || l.Hysteresis > 100 {
		return fmt.Errorf("--yarn-ledger-hysteresis %d: must be between 0 and 100", l.Hysteresis)
	}
	if l.MaxAge < l.PatchInterval {
		return fmt.Errorf("--yarn-ledger-max-age %v: must be at least --yarn-ledger-patch-interval %v", l.MaxAge, l.PatchInterval)
	}
	if l.Expiry < time.Second {
		return fmt.Errorf("--yarn-ledger-expiry %v: must be at least 1s", l.Expiry)
	}
	if l.RMReadBack < time.Second {
		return fmt.Errorf("--yarn-rm-read-back-interval %v: must be at least 1s", l.RMReadBack)
	}
	if l.RMPreemptionTimeout < 0 || l.RMPreemptionTimeout > time.Hour {
		return fmt.Errorf("--yarn-rm-preemption-timeout %v: must be between 0 and 1h", l.RMPreemptionTimeout)
	}
	if l.RMPreemptionGrace < 0 || l.RMPreemptionGrace > time.Hour {
		return fmt.Errorf("--yarn-rm-preemption-grace %v: must be between 0 and 1h", l.RMPreemptionGrace)
	}
	if strings.ContainsAny(l.RMNodeID, "/?#% ") {
		return fmt.Errorf("--yarn-rm-node-id %q: not a YARN node id (host:port)", l.RMNodeID)
	}
	return nil
}
