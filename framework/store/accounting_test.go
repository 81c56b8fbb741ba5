package store

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
)

// TestContainerJSONNamesMemoryAccounting: /yarn/containers says per
// container how its memory is measured, and the rest of the container
// round-trips unchanged.
func TestContainerJSONNamesMemoryAccounting(t *testing.T) {
	own := cgroups.Ref{Dir: "kubepods/besteffort/hadoop-yarn/container_x", Owned: true}
	nm := cgroups.Ref{Dir: "kubepods/besteffort/pod-nm/nodemanager"}
	for _, tc := range []struct {
		name string
		c    cgroups.Cgroups
		want cgroups.MemoryAccounting
	}{
		{"own memory cgroup", cgroups.Cgroups{cgroups.CPU: own, cgroups.Memory: own}, cgroups.MemoryByCgroup},
		{"CPU-only YARN", cgroups.Cgroups{cgroups.CPU: own, cgroups.Memory: nm}, cgroups.MemoryByProcesses},
		{"seen by the NM only", cgroups.Cgroups{}, cgroups.MemoryNotMeasured},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Container{Name: "container_x", ApplicationID: "application_1_0001", Cgroups: tc.c, Pids: []int{7},
				FirstSeen: time.Unix(1700000000, 0).UTC(), Source: SourceBoth, AMSource: AMFromSequence}
			assert.Equal(t, tc.want, c.MemoryAccounting())
			b, err := json.Marshal(c)
			require.NoError(t, err)
			assert.Contains(t, string(b), `"memoryAccounting":"`+string(tc.want)+`"`)
			var back Container
			require.NoError(t, json.Unmarshal(b, &back))
			assert.Equal(t, *c, back)
			assert.Equal(t, tc.want, back.MemoryAccounting())
		})
	}
}
