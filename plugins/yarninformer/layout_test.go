package yarninformer

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

func TestNodeLayout(t *testing.T) {
	own := cgroups.Ref{Dir: "kubepods/besteffort/hadoop-yarn/container_1700000000000_0001_01_000001", Owned: true}
	cpuOnly := &store.Container{Source: store.SourceBoth, State: yarn.StateRunning}
	cpuOnly.Cgroups[cgroups.CPU] = own
	both := &store.Container{Source: store.SourceBoth, State: yarn.StateRunning}
	both.Cgroups[cgroups.CPU], both.Cgroups[cgroups.Memory] = own, own
	nmOnly := &store.Container{Source: store.SourceNM, State: yarn.StateRunning}
	localizing := &store.Container{Source: store.SourceNM, State: yarn.StateLocalizing}
	for _, tc := range []struct {
		name string
		cs   []*store.Container
		v2   bool
		want string
	}{
		{"nothing yet", nil, false, ""},
		{"a container still localizing says nothing", []*store.Container{localizing}, false, ""},
		{"running without cgroups", []*store.Container{nmOnly}, false, "none"},
		{"LCE cpu and memory", []*store.Container{nmOnly, both}, false, "lce"},
		{"LCE CPU-only", []*store.Container{cpuOnly}, false, "lce-cpu-only"},
		{"v2: one directory holds both", []*store.Container{cpuOnly}, true, "lce"},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, nodeLayout(tc.cs, tc.v2)) })
	}
}
