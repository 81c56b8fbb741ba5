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
	// RMSyncInterval is how often YARN's capacity is compared with what
	// was last pushed to the ResourceManager (pushed only on a change).
	RMSyncInterval time.Duration
	// RMNodeID is the YARN node id (host:port) of this node's NodeManager;
	// empty: the NodeManager pod's annotation yarn.hadoop.apache.org/node-id,
	// else the NM's /ws/v1/node/info.
	RMNodeID string
}

// Ledger defaults.
const (
	DefaultLedgerPatchInterval = time.Second
	DefaultRMSyncInterval      = 10 * time.Second
)

func (l *Ledger) initFlags(fs *flag.FlagSet) {
	fs.DurationVar(&l.PatchInterval, "yarn-ledger-patch-interval", l.PatchInterval,
		"At most one patch of the Node's thirdPartyAllocations annotation (YARNBatchLedger) per interval; changes in between are coalesced.")
	fs.DurationVar(&l.RMSyncInterval, "yarn-rm-sync-interval", l.RMSyncInterval,
		"How often YARN's capacity on the node is compared with what was last pushed to the ResourceManager (YARNRMNodeResourceSync); pushed only when it changed.")
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
	if strings.ContainsAny(l.RMNodeID, "/?#% ") {
		return fmt.Errorf("--yarn-rm-node-id %q: not a YARN node id (host:port)", l.RMNodeID)
	}
	return nil
}
