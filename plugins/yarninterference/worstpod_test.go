package yarninterference

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/lswait"
)

// TestControllerSteersByTheWorstPod: one harmed LS pod (3 ms behind batch
// per wake-up, above the 1 ms target) beside a busy unharmed one that
// keeps the node's mean weighted by wake-ups at 100 µs: the controller
// cuts batch's budget; when the harmed pod is well again, it grows.
func TestControllerSteersByTheWorstPod(t *testing.T) {
	n := newFakeNode(t, "-1")
	n.wait(0)
	for i := 0; i < 5; i++ {
		n.step(t)
	}
	grown := n.threshold()
	n.sig = lswait.Signal{At: time.Now(), Source: lswait.SourceEBPF, InterferenceMean: 100 * time.Microsecond,
		Worst: lswait.PodInterference{Pod: "default/harmed", Mean: 3 * time.Millisecond, Waits: 50}}
	n.step(t)
	cut := n.threshold()
	require.Less(t, cut, grown, "cut for the worst pod, though the node mean is a tenth of the target")
	n.sig.Worst.Mean = 100 * time.Microsecond
	n.step(t)
	assert.Greater(t, n.threshold(), cut, "grows again when the worst pod is unharmed")
}
