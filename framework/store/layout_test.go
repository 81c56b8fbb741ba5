package store

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

func TestDetectLayout(t *testing.T) {
	own := cgroups.Ref{Dir: "kubepods/besteffort/hadoop-yarn/container_1700000000000_0001_01_000001", Owned: true}
	cpuOnly := &Container{Name: "cpu-only", Source: SourceBoth, State: yarn.StateRunning}
	cpuOnly.Cgroups[cgroups.CPU] = own
	both := &Container{Name: "both", Source: SourceBoth, State: yarn.StateRunning}
	both.Cgroups[cgroups.CPU], both.Cgroups[cgroups.Memory] = own, own
	nmOnly := &Container{Source: SourceNM, State: yarn.StateRunning}
	localizing := &Container{Source: SourceNM, State: yarn.StateLocalizing}
	oursBoth := func(c *Container) bool { return c.Name == "both" }
	for _, tc := range []struct {
		name string
		cs   []*Container
		v2   bool
		ours func(*Container) bool
		want Layout
	}{
		{"nothing yet", nil, false, nil, LayoutUnknown},
		{"a container still localizing says nothing", []*Container{localizing}, false, nil, LayoutUnknown},
		{"running without cgroups", []*Container{nmOnly}, false, nil, LayoutNone},
		{"LCE cpu and memory", []*Container{nmOnly, both}, false, nil, LayoutLCE},
		{"LCE CPU-only", []*Container{cpuOnly}, false, nil, LayoutLCECPUOnly},
		{"v2: one directory holds both", []*Container{cpuOnly}, true, nil, LayoutLCE},
		{"cgroups koordlet made say none", []*Container{both}, false, oursBoth, LayoutNone},
		{"one YARN made wins", []*Container{both, cpuOnly}, false, oursBoth, LayoutLCECPUOnly},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, DetectLayout(tc.cs, tc.v2, tc.ours)) })
	}
}
