package preflight

import (
	"context"
	"fmt"
	"strings"
	"time"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/yarnusage"
	"github.com/koordlet-yarn/koordlet-yarn/framework/config"
)

// Access is one permission koordlet needs from the API server.
type Access struct {
	Verb, Group, Resource, Subresource string
	// For says what needs it.
	For string
}

// String is the permission as kubectl auth can-i spells it.
func (a Access) String() string {
	r := a.Resource
	if a.Subresource != "" {
		r += "/" + a.Subresource
	}
	if a.Group != "" {
		r += "." + a.Group
	}
	return a.Verb + " " + r
}

// AccessFact is the API server's answer for one permission.
type AccessFact struct {
	Access
	Allowed bool
	// Err is why it could not be asked.
	Err string
}

// NeededAccess lists the permissions the preflight checks: the plugin
// set's and the main ones of upstream koordlet (the chart's role grants
// them all; the list is not every verb upstream may use).
func NeededAccess() []Access {
	return []Access{
		{Verb: "list", Resource: "pods", For: "koordlet's pod list, the NodeManager pod"},
		{Verb: "watch", Resource: "pods", For: "koordlet's pod list, the NodeManager pod"},
		{Verb: "create", Resource: "pods", Subresource: "eviction", For: "upstream's evictions of BE pods"},
		{Verb: "create", Resource: "events", For: "YARNContainerEvicted Events on the NodeManager pod"},
		{Verb: "patch", Resource: "events", For: "YARNContainerEvicted Events on the NodeManager pod"},
		{Verb: "get", Resource: "nodes", For: "the Node (origin batch allocatable)"},
		{Verb: "list", Resource: "nodes", For: "koordlet's Node informer"},
		{Verb: "watch", Resource: "nodes", For: "koordlet's Node informer"},
		{Verb: "patch", Resource: "nodes", For: "the batch ledger's thirdPartyAllocations (YARNBatchLedger)"},
		{Verb: "get", Group: "slo.koordinator.sh", Resource: "nodeslos", For: "the NodeSLO (thresholds, QoS, host applications)"},
		{Verb: "watch", Group: "slo.koordinator.sh", Resource: "nodeslos", For: "the NodeSLO (thresholds, QoS, host applications)"},
		{Verb: "update", Group: "slo.koordinator.sh", Resource: "nodemetrics", Subresource: "status", For: "koordlet's NodeMetric report"},
	}
}

// ClusterFacts is what the API server and the ResourceManager said.
type ClusterFacts struct {
	// NodeSLOChecked is true when the NodeSLO was asked for; NodeSLOErr
	// why it could not be read.
	NodeSLOChecked bool
	NodeSLOErr     string
	// Accounting is whether a BE host application covers the YARN
	// hierarchy (the collector's own check).
	Accounting yarnusage.Accounting
	// Thresholds is the NodeSLO's resourceUsedThresholdWithBE (nil: none).
	Thresholds *slov1alpha1.ResourceThresholdStrategy
	// RMChecked is true when an RM was asked; RMActive the one that
	// answered as active; RMErr why none did.
	RMChecked      bool
	RMActive       string
	RMErr          string
	RMVersion      string
	RMHAState      string
	RMClusterState string
	// Access are the API server's answers (nil: not asked).
	Access []AccessFact
	// AccessErr is why the permissions could not be asked.
	AccessErr string
}

// ClusterOptions reach the API server for the preflight (each nil: that
// check is not made, and the report says so).
type ClusterOptions struct {
	// NodeSLO reads the node's NodeSLO.
	NodeSLO func(ctx context.Context) (*slov1alpha1.NodeSLO, error)
	// CanI asks the API server whether koordlet's identity may do a.
	CanI func(ctx context.Context, a Access) (bool, error)
}

// probeCluster asks the API server and the ResourceManager.
func probeCluster(ctx context.Context, opts ClusterOptions, cfg *config.Config, hierarchy string) ClusterFacts {
	var c ClusterFacts
	if opts.NodeSLO != nil {
		c.NodeSLOChecked = true
		slo, err := opts.NodeSLO(ctx)
		if err != nil {
			c.NodeSLOErr = err.Error()
		} else {
			c.Accounting = yarnusage.CheckAccounting(slo, hierarchy)
			c.Thresholds = slo.Spec.ResourceUsedThresholdWithBE
		}
	}
	if opts.CanI != nil {
		for _, a := range NeededAccess() {
			ok, err := opts.CanI(ctx, a)
			f := AccessFact{Access: a, Allowed: ok}
			if err != nil {
				f.Err = err.Error()
			}
			c.Access = append(c.Access, f)
		}
	}
	if len(cfg.RM.Endpoints) > 0 {
		c.RMChecked = true
		client, err := cfg.RM.Client()
		if err != nil {
			c.RMErr = err.Error()
			return c
		}
		rctx, cancel := context.WithTimeout(ctx, cfg.RM.Timeout*time.Duration(len(cfg.RM.Endpoints))+time.Second)
		defer cancel()
		info, err := client.ClusterInfo(rctx)
		if err != nil {
			c.RMErr = err.Error()
			return c
		}
		c.RMActive, c.RMVersion, c.RMHAState, c.RMClusterState = client.Active(), info.ResourceManagerVersion, info.HAState, info.State
	}
	return c
}

// evalCluster reports the NodeSLO, the thresholds, the RM and RBAC.
func evalCluster(f Facts, add addFunc) {
	c := f.Cluster
	const sloFix = "kubectl -n koordinator-system patch configmap slo-controller-config --patch-file deploy/yarn/slo-controller-config.patch.yaml"
	switch {
	case !c.NodeSLOChecked:
		add("NodeSLO", Info, "not read (no API server access)", "")
	case c.NodeSLOErr != "":
		add("NodeSLO", Warn, "cannot read this node's NodeSLO: "+c.NodeSLOErr,
			"koord-manager makes one NodeSLO per node (slo-controller); check that it runs and that koordlet may get nodeslos")
	default:
		if c.Accounting.AsBE {
			add("NodeSLO host app", OK, fmt.Sprintf("YARN usage counts as BE (host application %q covers %s)", c.Accounting.HostApplication, f.Hierarchy), "")
		} else {
			add("NodeSLO host app", Warn, c.Accounting.Reason, sloFix)
		}
		evalThresholds(f, c.Thresholds, add)
	}
	if c.RMChecked {
		if c.RMErr != "" {
			sev := Warn
			add("ResourceManager", sev, fmt.Sprintf("no active ResourceManager at %s: %s", strings.Join(f.RMEndpoints, ", "), c.RMErr),
				"check --yarn-rm-endpoints (every RM of an HA pair, http://host:8088) and that this node reaches them")
		} else {
			add("ResourceManager", OK, fmt.Sprintf("%s answers: %s, HA state %s, Hadoop %s", c.RMActive, c.RMClusterState, c.RMHAState, c.RMVersion), "")
		}
	} else if f.Gates["YARNQoSPolicy"] {
		// YARNRMNodeResourceSync without an RM is a gate finding.
		add("ResourceManager", Warn, "YARNQoSPolicy is on but --yarn-rm-endpoints is empty: rules on queue, application type or tags never match", "set --yarn-rm-endpoints")
	}
	switch {
	case c.AccessErr != "":
		add("RBAC", Warn, "cannot ask the API server: "+c.AccessErr, "")
	case c.Access == nil:
		add("RBAC", Info, "not checked (no API server access)", "")
	default:
		var denied, unknown []string
		for _, a := range c.Access {
			switch {
			case a.Err != "":
				unknown = append(unknown, a.String())
			case !a.Allowed:
				denied = append(denied, a.String()+" ("+a.For+")")
			}
		}
		switch {
		case len(denied) > 0:
			add("RBAC", Block, "koordlet may not: "+strings.Join(denied, "; "),
				"bind koordlet's service account to the chart's koordlet-role (deploy/koordlet/chart-v1.8.0/rbac)")
		case len(unknown) > 0:
			add("RBAC", Warn, "could not ask about: "+strings.Join(unknown, ", "), "")
		default:
			add("RBAC", OK, fmt.Sprintf("koordlet may do all %d things checked", len(c.Access)), "")
		}
	}
}

// evalThresholds checks the NodeSLO's BE thresholds against the gates on.
func evalThresholds(f Facts, t *slov1alpha1.ResourceThresholdStrategy, add addFunc) {
	enabled := t != nil && t.Enable != nil && *t.Enable
	const fix = "set resourceUsedThresholdWithBE in slo-controller-config (koord-manager's colocation and threshold configuration)"
	if anyOn(f, "YARNBEMemoryEvict", "YARNBECPUEvict", "YARNBECPUSuppress") && !enabled {
		add("BE thresholds", Warn, "YARN-aware suppress or evict is on but the NodeSLO's resourceUsedThresholdWithBE is not enabled: they do nothing on this node", fix)
		return
	}
	if !enabled {
		add("BE thresholds", Info, "resourceUsedThresholdWithBE not enabled (no BE suppress or eviction)", "")
		return
	}
	pct := func(p *int64) string {
		if p == nil {
			return "unset"
		}
		return fmt.Sprintf("%d%%", *p)
	}
	detail := fmt.Sprintf("enabled: CPU suppress at %s, memory evict at %s (down to %s)", pct(t.CPUSuppressThresholdPercent),
		pct(t.MemoryEvictThresholdPercent), pct(t.MemoryEvictLowerPercent))
	if f.Gates["YARNBEMemoryEvict"] && t.MemoryEvictThresholdPercent == nil {
		add("BE thresholds", Warn, detail+": YARNBEMemoryEvict is on without a memory threshold", fix)
		return
	}
	add("BE thresholds", OK, detail, "")
}
