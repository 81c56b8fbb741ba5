package features

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/component-base/featuregate"
)

// TestActingGatesAreAlphaAndOff: a gate that kills, writes or changes what
// others do is Alpha and off by default; every other gate only observes
// and is on. A new gate must be put on one side or the other.
func TestActingGatesAreAlphaAndOff(t *testing.T) {
	for f, spec := range Specs {
		if _, acts := Acts[f]; acts {
			assert.Equal(t, featuregate.Alpha, spec.PreRelease, "%s acts: Alpha", f)
			assert.False(t, spec.Default, "%s acts: off by default", f)
			continue
		}
		assert.True(t, spec.Default, "%s is not in Acts, so it only observes and is on by default; if it acts, say what in Acts", f)
	}
	for f := range Acts {
		assert.Contains(t, Specs, f, "%s in Acts is a koordlet-yarn gate", f)
	}
}
