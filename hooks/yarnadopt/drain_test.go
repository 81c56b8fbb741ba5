package yarnadopt

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

// Before a scan the loop handles every exec event already queued (they
// carry the exec time a scan's move would lose); a closed watch ends it.
func TestDrainExecHandlesQueuedEvents(t *testing.T) {
	a := New(Options{Store: store.New(), Hierarchy: func() (cgroups.Hierarchy, bool) { return cgroups.Hierarchy{}, false }})
	events := make(chan ExecEvent, 4)
	for pid := 1; pid <= 3; pid++ {
		events <- ExecEvent{Pid: 1000 + pid}
	}
	assert.Equal(t, events, a.drainExec(events), "open: kept")
	assert.Empty(t, events, "every queued event handled")
	close(events)
	assert.Nil(t, a.drainExec(events), "closed: nil, as the loop's own receive does")
}
