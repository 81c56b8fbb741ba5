package preflight

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/koordinator-sh/koordinator/apis/extension"
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"

	"github.com/koordlet-yarn/koordlet-yarn/framework/config"
	"github.com/koordlet-yarn/koordlet-yarn/test/rmemu"
)

// findingOf returns the first finding of check.
func findingOf(r Report, check string) (Finding, bool) {
	for _, f := range r.Findings {
		if f.Check == check {
			return f, true
		}
	}
	return Finding{}, false
}

func TestEvalCluster(t *testing.T) {
	covered := func() ClusterFacts {
		return ClusterFacts{NodeSLOChecked: true, Thresholds: &slov1alpha1.ResourceThresholdStrategy{Enable: ptr.To(true),
			CPUSuppressThresholdPercent: ptr.To[int64](65), MemoryEvictThresholdPercent: ptr.To[int64](70)}}
	}
	allowed := func() []AccessFact {
		var out []AccessFact
		for _, a := range NeededAccess() {
			out = append(out, AccessFact{Access: a, Allowed: true})
		}
		return out
	}
	tests := []struct {
		name   string
		gates  map[string]bool
		facts  func(c *ClusterFacts)
		check  string
		want   Severity
		detail string
	}{
		{name: "not covered", facts: func(c *ClusterFacts) { c.Accounting.Reason = "no BE host application covers x" },
			check: "NodeSLO host app", want: Warn, detail: "covers x"},
		{name: "covered", facts: func(c *ClusterFacts) { c.Accounting.AsBE, c.Accounting.HostApplication = true, "hadoop-yarn" },
			check: "NodeSLO host app", want: OK, detail: `"hadoop-yarn"`},
		{name: "unreadable NodeSLO", facts: func(c *ClusterFacts) { c.NodeSLOErr = "forbidden" }, check: "NodeSLO", want: Warn, detail: "forbidden"},
		{name: "evict on, thresholds off", gates: map[string]bool{"YARNBEMemoryEvict": true},
			facts: func(c *ClusterFacts) { c.Thresholds.Enable = ptr.To(false) }, check: "BE thresholds", want: Warn, detail: "do nothing"},
		{name: "thresholds", gates: map[string]bool{"YARNBEMemoryEvict": true}, check: "BE thresholds", want: OK, detail: "memory evict at 70%"},
		{name: "memory evict without a threshold", gates: map[string]bool{"YARNBEMemoryEvict": true},
			facts: func(c *ClusterFacts) { c.Thresholds.MemoryEvictThresholdPercent = nil }, check: "BE thresholds", want: Warn, detail: "without a memory threshold"},
		{name: "RBAC ok", facts: func(c *ClusterFacts) { c.Access = allowed() }, check: "RBAC", want: OK, detail: "all 12"},
		{name: "RBAC denied", facts: func(c *ClusterFacts) { c.Access = allowed(); c.Access[8].Allowed = false }, check: "RBAC", want: Block, detail: "patch nodes"},
		{name: "RBAC not asked", check: "RBAC", want: Info},
		{name: "RM down", facts: func(c *ClusterFacts) { c.RMChecked, c.RMErr = true, "connection refused" }, check: "ResourceManager", want: Warn, detail: "connection refused"},
		{name: "policy without RM", gates: map[string]bool{"YARNQoSPolicy": true}, check: "ResourceManager", want: Warn, detail: "never match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := covered()
			if tt.facts != nil {
				tt.facts(&c)
			}
			gates := tt.gates
			if gates == nil {
				gates = map[string]bool{}
			}
			r := Evaluate(Facts{Gates: gates, Cluster: c, Hierarchy: "kubepods/besteffort/hadoop-yarn"})
			f, ok := findingOf(r, tt.check)
			require.True(t, ok, "%+v", r.Findings)
			assert.Equal(t, tt.want, f.Severity, f.Detail)
			assert.Contains(t, f.Detail, tt.detail)
		})
	}
}

// TestProbeCluster: the NodeSLO's host application and thresholds, the
// permissions and the RM (an emulated one, active) as Probe reads them.
func TestProbeCluster(t *testing.T) {
	rm, err := rmemu.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = rm.Close() })
	cfg := config.NewDefault()
	cfg.RM.Endpoints = []string{rm.URL}
	slo := &slov1alpha1.NodeSLO{Spec: slov1alpha1.NodeSLOSpec{HostApplications: []slov1alpha1.HostApplicationSpec{{Name: "hadoop-yarn",
		QoS: extension.QoSBE, CgroupPath: &slov1alpha1.CgroupPath{Base: slov1alpha1.CgroupBaseTypeKubeBesteffort, RelativePath: "hadoop-yarn/"}}}}}
	asked := 0
	c := probeCluster(context.Background(), ClusterOptions{
		NodeSLO: func(context.Context) (*slov1alpha1.NodeSLO, error) { return slo, nil },
		CanI: func(_ context.Context, a Access) (bool, error) {
			asked++
			if a.Verb == "patch" && a.Resource == "nodes" {
				return false, nil
			}
			if a.Resource == "events" {
				return false, errors.New("timeout")
			}
			return true, nil
		},
	}, cfg, "kubepods/besteffort/hadoop-yarn")
	assert.Empty(t, c.NodeSLOErr)
	assert.Equal(t, len(NeededAccess()), asked)
	assert.Empty(t, c.RMErr)
	assert.Equal(t, rm.URL, c.RMActive)
	assert.Equal(t, "ACTIVE", c.RMHAState)
	r := Evaluate(Facts{Gates: map[string]bool{}, Cluster: c, Hierarchy: "kubepods/besteffort/hadoop-yarn"})
	f, _ := findingOf(r, "RBAC")
	assert.Equal(t, Block, f.Severity)
	assert.Contains(t, f.Detail, "patch nodes")

	// JSON: one object with the node, the exit code and every finding.
	var buf bytes.Buffer
	require.NoError(t, r.WriteJSON(&buf, "n1"))
	var out struct {
		Node     string `json:"node"`
		ExitCode int    `json:"exitCode"`
		Findings []struct {
			Check, Severity, Detail, Fix string
		} `json:"findings"`
		Gates []GateEffect `json:"gates"`
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &out), buf.String())
	assert.Equal(t, "n1", out.Node)
	assert.Equal(t, 1, out.ExitCode)
	var rbac string
	for _, f := range out.Findings {
		if f.Check == "RBAC" {
			rbac = f.Severity
		}
	}
	assert.Equal(t, "block", rbac)
	assert.NotNil(t, out.Gates)
}
