package rmemu

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

func TestToKill(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	am := Running{ID: "am", MemoryMB: 1024, AM: true, Created: t0}
	old := Running{ID: "old", MemoryMB: 2048, Created: t0.Add(time.Second)}
	young := Running{ID: "young", MemoryMB: 1024, Created: t0.Add(2 * time.Second)}
	opp := Running{ID: "opp", MemoryMB: 512, Opportunistic: true, Created: t0}
	tests := []struct {
		name     string
		running  []Running
		capacity int64
		want     []string
	}{
		{"fits", []Running{am, old, young}, 4096, nil},
		{"nothing running", nil, 0, nil},
		{"the newest first", []Running{am, old, young}, 3072, []string{"young"}},
		{"until it fits", []Running{am, old, young}, 2048, []string{"young", "old"}},
		{"OPPORTUNISTIC before GUARANTEED, however old", []Running{young, opp, old}, 3100, []string{"opp"}},
		{"AMs last", []Running{am, old, young}, 512, []string{"young", "old", "am"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ToKill(tt.running, tt.capacity))
		})
	}
}

// A capacity below the allocation with an over-commit timeout: nothing is
// killed before the timeout, the newest container at the first heartbeat
// after it, nothing more once it fits; the node report shows what is
// allocated; an update without a timeout (-1) leaves the deadline, a
// re-registration clears it.
func TestOverCommitTimeout(t *testing.T) {
	rm := start(t)
	const node = "n1:45454"
	rm.RegisterNode(node, yarn.NodeResource{MemoryMB: 8192, VCores: 8})
	t0 := time.Now()
	var mu sync.Mutex
	running := []Running{
		{ID: "am", MemoryMB: 1024, VCores: 1, AM: true, Created: t0},
		{ID: "old", MemoryMB: 2048, VCores: 1, Created: t0.Add(time.Second)},
		{ID: "young", MemoryMB: 2048, VCores: 2, Created: t0.Add(2 * time.Second)},
	}
	var killed []string
	rm.SetNodeContainers(node, NodeContainers{
		Running: func() []Running { mu.Lock(); defer mu.Unlock(); return append([]Running(nil), running...) },
		Preempt: func(id string) {
			mu.Lock()
			defer mu.Unlock()
			killed = append(killed, id)
			for i, c := range running {
				if c.ID == id {
					running = append(running[:i], running[i+1:]...)
					break
				}
			}
		},
	})
	rm.Stop() // heartbeats driven by the test below
	c, err := yarn.NewRMClient(yarn.RMOptions{Endpoints: []string{rm.URL}, Timeout: time.Second})
	require.NoError(t, err)
	ctx := context.Background()

	got, err := c.NodeResource(ctx, node)
	require.NoError(t, err)
	assert.Equal(t, yarn.NodeResource{MemoryMB: 8192, VCores: 8}, got)

	require.NoError(t, c.UpdateNodeResourceWithTimeout(ctx, node, yarn.NodeResource{MemoryMB: 3500, VCores: 8}, 3*time.Second))
	at := rm.Calls()[0].Time
	rm.Heartbeat(node, at.Add(2*time.Second))
	assert.Empty(t, rm.Preemptions(), "nothing killed before the timeout")
	rm.Heartbeat(node, at.Add(3*time.Second))
	require.Len(t, rm.Preemptions(), 1)
	assert.Equal(t, []string{"young"}, killed, "the newest non-AM container, enough to fit")
	rm.Heartbeat(node, at.Add(4*time.Second))
	assert.Len(t, rm.Preemptions(), 1, "it fits: nothing more")

	// -1 keeps the deadline: a capacity lowered again is enforced at once.
	require.NoError(t, c.UpdateNodeResource(ctx, node, yarn.NodeResource{MemoryMB: 1500, VCores: 8}))
	rm.Heartbeat(node, at.Add(5*time.Second))
	assert.Equal(t, []string{"young", "old"}, killed)

	// A re-registration is a new SchedulerNode: no deadline.
	rm.RegisterNode(node, yarn.NodeResource{MemoryMB: 512, VCores: 8})
	rm.Heartbeat(node, at.Add(time.Hour))
	assert.Equal(t, []string{"young", "old"}, killed, "no timeout set: the over-commit only stops new allocations")
}

// The node report counts what the node's containers hold.
func TestNodeReportUsed(t *testing.T) {
	rm := start(t)
	const node = "n1:45454"
	rm.RegisterNode(node, yarn.NodeResource{MemoryMB: 4096, VCores: 4})
	rm.SetNodeContainers(node, NodeContainers{Running: func() []Running {
		return []Running{{ID: "a", MemoryMB: 1024, VCores: 1}, {ID: "b", MemoryMB: 512, VCores: 2}}
	}, Preempt: func(string) {}})
	resp, err := (&http.Client{Timeout: time.Second}).Get(rm.URL + "/ws/v1/cluster/nodes/" + node)
	require.NoError(t, err)
	defer resp.Body.Close()
	var v struct {
		Node map[string]any `json:"node"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
	assert.EqualValues(t, 1536, v.Node["usedMemoryMB"])
	assert.EqualValues(t, 2560, v.Node["availMemoryMB"])
	assert.EqualValues(t, 3, v.Node["usedVirtualCores"])
	assert.EqualValues(t, 1, v.Node["availableVirtualCores"])
	assert.EqualValues(t, 2, v.Node["numContainers"])
}

// As AbstractYarnScheduler.updateNodeResource: an update with the node's
// own resource changes nothing, its timeout included; a timeout of 0 kills
// during the update; a container killed before but still reported by the
// NodeManager is not killed again (the RM released its allocation).
func TestOverCommitAsHadoop(t *testing.T) {
	rm := start(t)
	const node = "n1:45454"
	rm.RegisterNode(node, yarn.NodeResource{MemoryMB: 4096, VCores: 8})
	var mu sync.Mutex
	var killed []string
	running := []Running{{ID: "a", MemoryMB: 2048, Created: time.Unix(1, 0)}, {ID: "b", MemoryMB: 2048, Created: time.Unix(2, 0)}}
	rm.SetNodeContainers(node, NodeContainers{
		Running: func() []Running { return running }, // the NM still reports what was killed
		Preempt: func(id string) { mu.Lock(); killed = append(killed, id); mu.Unlock() },
	})
	rm.Stop()
	c, err := yarn.NewRMClient(yarn.RMOptions{Endpoints: []string{rm.URL}, Timeout: time.Second})
	require.NoError(t, err)
	ctx := context.Background()

	// The same resource with a timeout: ignored, no deadline.
	require.NoError(t, c.UpdateNodeResourceWithTimeout(ctx, node, yarn.NodeResource{MemoryMB: 4096, VCores: 8}, 0))
	rm.Heartbeat(node, time.Now().Add(time.Hour))
	assert.Empty(t, killed)

	// A lower capacity with timeout 0: the newest killed during the update.
	require.NoError(t, c.UpdateNodeResourceWithTimeout(ctx, node, yarn.NodeResource{MemoryMB: 3000, VCores: 8}, 0))
	mu.Lock()
	assert.Equal(t, []string{"b"}, killed)
	mu.Unlock()
	// b still reported: its allocation is released all the same.
	rm.Heartbeat(node, time.Now().Add(time.Hour))
	mu.Lock()
	assert.Equal(t, []string{"b"}, killed, "no second kill")
	mu.Unlock()
	assert.Len(t, rm.Preemptions(), 1)

	// Cleared: nothing more is preempted there.
	rm.ClearNodeContainers(node)
	require.NoError(t, c.UpdateNodeResourceWithTimeout(ctx, node, yarn.NodeResource{MemoryMB: 100, VCores: 8}, 0))
	rm.Heartbeat(node, time.Now().Add(time.Hour))
	assert.Len(t, rm.Preemptions(), 1)
}
