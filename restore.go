package koordletyarn

import (
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/component-base/featuregate"

	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/promreg"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnsuppress"
)

// RestorePath is the debug endpoint that says, per kind of value koordlet
// restores when its gate is off, how much of it is still on the node.
const RestorePath = "/yarn/restore"

// RestoreKind is one kind of value koordlet-yarn writes under an acting
// gate and restores with the gate off.
type RestoreKind struct {
	// Kind names it (the kind label of koordlet_yarn_restore_pending).
	Kind string `json:"kind"`
	// Gates write it; koordlet restores it while all of them are off.
	Gates []string `json:"gates"`
	// Off: every gate of the kind is off, so what is left is to be
	// restored. With a gate on the values are in use: Pending is not
	// counted (0).
	Off bool `json:"off"`
	// Pending is how many of the kind are still on the node (read from
	// the node's markers, records and files at each request); -1 while
	// it cannot be told (the YARN hierarchy not known yet).
	Pending int `json:"pending"`
	// Counts says what Pending counts.
	Counts string `json:"counts"`
}

// RestoreResponse is the body of GET /yarn/restore.
type RestoreResponse struct {
	// Complete: every kind whose gates are off has nothing left (Pending
	// 0): the node holds nothing koordlet-yarn wrote under those gates, and
	// the stock koordlet can take over.
	Complete bool          `json:"complete"`
	Kinds    []RestoreKind `json:"kinds"`
}

// restoreKind is a RestoreKind's source: its gates, whether it is off (all
// its gates off, unless off says otherwise) and how much is left.
type restoreKind struct {
	kind    string
	gates   []featuregate.Feature
	off     func() bool
	pending func() int
	counts  string
}

// restoreKinds lists what the framework's restorers give back (loops.go's
// Restorer, and the stale ledger entry's removal), each with the count of
// what is left of it on the node.
func (fw *Framework) restoreKinds() []restoreKind {
	rootQuota := func() int {
		h := fw.Informer.HierarchyDir()
		if h == "" {
			return -1
		}
		if cgroups.QuotaRecorded(h) {
			return 1
		}
		return 0
	}
	return []restoreKind{
		{kind: "cpu-qos", gates: []featuregate.Feature{features.YARNCPUQoS}, pending: fw.QoS.PendingCPUQoS,
			counts: "YARN container cgroups with tasks koordlet made SCHED_IDLE (xattr trusted.koordlet-yarn.sched-idle) or with cpu.idle=1, and the YARN root with cpu.idle=1"},
		{kind: "memory-qos", gates: []featuregate.Feature{features.YARNMemoryQoS}, pending: fw.QoS.PendingMemoryQoS,
			counts: "YARN container memory cgroups whose Memory QoS values are not back to their prior values (xattr trusted.koordlet-yarn.memory-qos-prior)"},
		{kind: "resctrl", gates: []featuregate.Feature{features.YARNResctrlQoS}, pending: fw.QoS.PendingResctrl,
			counts: "YARN containers whose tasks koordlet moved into the resctrl BE group (xattr trusted.koordlet-yarn.resctrl)"},
		{kind: "cpu-quota", gates: []featuregate.Feature{features.YARNBECPUSuppress, koordfeatures.BECPUSuppress}, off: func() bool { return !yarnsuppress.Runs() },
			pending: rootQuota, counts: "1 while the YARN root's own CFS quota is not back (xattr trusted.koordlet-yarn.prior-cfs-quota); restored unless BE suppress runs YARN-aware (both gates on)"},
		{kind: "memory-relief", gates: []featuregate.Feature{features.YARNMemoryRelief}, off: func() bool { return !fw.relief.Enabled() },
			pending: func() int { return fw.relief.Pending(fw.Informer.HierarchyDir()) },
			counts:  "the YARN root's memory.high (v2) and memory soft limit (v1) koordlet's memory relief set and did not give back (xattrs trusted.koordlet-yarn.prior-memory-high, trusted.koordlet-yarn.prior-memory-soft-limit)"},
		{kind: "memory-cgroups", gates: []featuregate.Feature{features.YARNMemoryCgroup}, pending: fw.memcg.RestorePending,
			counts: "memory cgroups koordlet made (xattr trusted.koordlet-yarn.memcg) still there"},
		{kind: "container-cgroups", gates: []featuregate.Feature{features.YARNContainerCgroups}, pending: fw.adopt.RestorePending,
			counts: "container cgroups koordlet made (xattr trusted.koordlet-yarn.container-cgroup) still there: containers still running in them, each removed once empty"},
		{kind: "rm-capacity", gates: []featuregate.Feature{features.YARNRMNodeResourceSync}, off: func() bool { return !fw.rm.sync.Enabled() }, pending: fw.rm.sync.RestorePending,
			counts: "1 while the record of YARN's own capacity (--yarn-rm-capacity-record) is on the node: a capacity pushed to the ResourceManager not given back"},
		{kind: "ledger-entry", gates: []featuregate.Feature{features.YARNBatchLedger}, off: fw.staleEntry.Enabled, pending: fw.staleEntry.RestorePending,
			counts: "1 until the Node's hadoop-yarn thirdPartyAllocations entry koordlet-yarn wrote is removed (or found to be another writer's, or absent)"},
	}
}

// restoreStatus reads what is left of each kind.
func (fw *Framework) restoreStatus() RestoreResponse {
	resp := RestoreResponse{Complete: true}
	for _, k := range fw.restoreKinds() {
		rk := RestoreKind{Kind: k.kind, Counts: k.counts}
		off := true
		for _, g := range k.gates {
			rk.Gates = append(rk.Gates, string(g))
			off = off && !features.Enabled(g)
		}
		if k.off != nil {
			off = k.off()
		}
		rk.Off = off
		if off {
			rk.Pending = k.pending()
			if rk.Pending != 0 {
				resp.Complete = false
			}
		}
		resp.Kinds = append(resp.Kinds, rk)
	}
	return resp
}

func (fw *Framework) restoreHandler() http.HandlerFunc {
	return jsonGET(RestorePath, fw.restoreStatus)
}

// restorePendingHelp is koordlet_yarn_restore_pending's help.
const restorePendingHelp = "What koordlet-yarn wrote under a gate now off that is still on the node, by kind (see /yarn/restore); -1 while it cannot be told. " +
	"Only the kinds whose gates are all off; restoration is complete when every series is 0."

// restoreRefresh is how old the restore gauge's reading may be before a
// scrape starts a new one.
const restoreRefresh = 15 * time.Second

// restoreCollector exports koordlet_yarn_restore_pending. A scrape never
// reads the node itself (the readings take the hierarchy from the
// informer and walk the YARN cgroups, which must not hold up /metrics on
// a slow node): it serves the last reading and, when that is older than
// restoreRefresh, starts the next one in the background.
type restoreCollector struct {
	fw   *Framework
	desc *prometheus.Desc

	mu         sync.Mutex
	last       []RestoreKind
	at         time.Time
	refreshing bool
}

func (c *restoreCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *restoreCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	if !c.refreshing && time.Since(c.at) > restoreRefresh {
		c.refreshing = true
		go c.refresh()
	}
	last := c.last
	c.mu.Unlock()
	for _, k := range last {
		if k.Off {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(k.Pending), k.Kind)
		}
	}
}

// refresh reads the node and keeps the reading for the next scrapes.
func (c *restoreCollector) refresh() {
	kinds := c.fw.restoreStatus().Kinds
	c.mu.Lock()
	c.last, c.at, c.refreshing = kinds, time.Now(), false
	c.mu.Unlock()
}

// registerRestoreMetric registers koordlet_yarn_restore_pending, with the
// node label; a second install in one process keeps the first.
func (fw *Framework) registerRestoreMetric(reg prometheus.Registerer) error {
	c := &restoreCollector{fw: fw, desc: prometheus.NewDesc("koordlet_yarn_restore_pending", restorePendingHelp,
		[]string{"kind"}, prometheus.Labels{"node": os.Getenv("NODE_NAME")})}
	return promreg.Register(reg, &c)
}
