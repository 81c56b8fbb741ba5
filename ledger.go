package koordletyarn

import (
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/koordinator-sh/koordinator/cmd/koordlet/options"

	"github.com/koordlet-yarn/koordlet-yarn/framework/rmrelease"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnledger"
)

// LedgerPath is the debug endpoint of the node's batch ledger.
const LedgerPath = "/yarn/ledger"

// LedgerResponse is the body of GET /yarn/ledger.
type LedgerResponse struct {
	yarnledger.Status
	// RM is the ResourceManager push's state (YARNRMNodeResourceSync).
	RM yarnledger.RMSyncStatus `json:"rm"`
}

// installLedger builds the ledger loop and its endpoint.
func (fw *Framework) installLedger(reg prometheus.Registerer) error {
	metrics, err := yarnledger.NewMetrics(reg)
	if err != nil {
		return err
	}
	fw.Ledger = yarnledger.New(yarnledger.Options{
		Store: fw.Store,
		NM: func() (time.Time, bool) {
			s := fw.Informer.Status()
			return s.LastNMSuccess, s.NMError == "" && !s.LastNMSuccess.IsZero()
		},
		Node:          fw.Handles.Node,
		Pods:          fw.Handles.Pods,
		Client:        fw.Handles.KubeClient,
		NodeName:      os.Getenv("NODE_NAME"),
		PatchInterval: func() time.Duration { return fw.Config.Ledger.PatchInterval },
		Hysteresis:    func() int64 { return fw.Config.Ledger.Hysteresis },
		MaxAge:        func() time.Duration { return fw.Config.Ledger.MaxAge },
		Expiry:        func() time.Duration { return fw.Config.Ledger.Expiry },
		Metrics:       metrics,
		RequestResync: fw.Informer.RequestResync,
	})
	fw.rm.release = &rmrelease.Window{}
	fw.rm.sync = yarnledger.NewRMSync(yarnledger.RMSyncOptions{
		Client: fw.RMClient,
		NodeID: func() string {
			if id := fw.Config.Ledger.RMNodeID; id != "" {
				return id
			}
			return fw.Informer.NodeID()
		},
		View:              func() yarnledger.View { v, _ := fw.Ledger.View(); return v },
		Interval:          func() time.Duration { return fw.Config.Ledger.RMSyncInterval },
		ReadBack:          func() time.Duration { return fw.Config.Ledger.RMReadBack },
		Metrics:           metrics,
		NodeName:          os.Getenv("NODE_NAME"),
		PreemptionTimeout: func() time.Duration { return fw.Config.Ledger.RMPreemptionTimeout },
		Release:           fw.rm.release,
		PreemptionGrace:   func() time.Duration { return fw.Config.Ledger.RMPreemptionGrace },
		NMResync:          func() time.Duration { return fw.Config.ResyncInterval },
		Record:            func() string { return fw.Config.Ledger.RMCapacityRecord },
	})
	fw.Informer.AfterResync = fw.Ledger.Notify
	fw.staleEntry = &yarnledger.StaleEntry{Client: fw.Handles.KubeClient, NodeName: os.Getenv("NODE_NAME")}
	fw.loops = append(fw.loops, fw.Ledger, fw.rm.sync, &yarnledger.GiveBack{Sync: fw.rm.sync}, fw.staleEntry)
	options.RegisterHTTPHandler(LedgerPath, fw.ledgerHandler)
	return nil
}

func (fw *Framework) ledgerHandler() http.HandlerFunc {
	return jsonGET(LedgerPath, func() LedgerResponse {
		return LedgerResponse{Status: fw.Ledger.Status(), RM: fw.rm.sync.Status()}
	})
}
