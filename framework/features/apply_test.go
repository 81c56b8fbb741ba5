package features

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/component-base/featuregate"
)

// newGate is a fresh feature gate with koordlet-yarn's gates and an alpha
// gate of someone else's (as Koordinator's own alpha features are).
func newGate(t *testing.T) featuregate.MutableFeatureGate {
	t.Helper()
	g := featuregate.NewFeatureGate()
	require.NoError(t, g.Add(Specs))
	require.NoError(t, g.Add(map[featuregate.Feature]featuregate.FeatureSpec{
		"KoordAlpha": {Default: false, PreRelease: featuregate.Alpha},
		"KoordBeta":  {Default: false, PreRelease: featuregate.Beta},
	}))
	return g
}

// TestApplyAllAlphaHoldsActingGates: AllAlpha=true turns on other alpha
// gates but no acting YARN gate unless it is named; a named one is on; an
// acting gate named off stays off; without AllAlpha nothing is held.
func TestApplyAllAlphaHoldsActingGates(t *testing.T) {
	cases := []struct {
		name     string
		flags    map[string]bool
		on       []featuregate.Feature
		heldLen  int
		koordOn  bool
		betaOn   bool
		nameHeld featuregate.Feature
	}{
		{name: "AllAlpha alone", flags: map[string]bool{"AllAlpha": true}, heldLen: len(Acts), koordOn: true, nameHeld: YARNBEMemoryEvict},
		{name: "AllAlpha with one named", flags: map[string]bool{"AllAlpha": true, string(YARNCPUQoS): true},
			on: []featuregate.Feature{YARNCPUQoS}, heldLen: len(Acts) - 1, koordOn: true, nameHeld: YARNMemoryRelief},
		{name: "AllAlpha with one named off", flags: map[string]bool{"AllAlpha": true, string(YARNCPUQoS): false},
			heldLen: len(Acts) - 1, koordOn: true, nameHeld: YARNBatchLedger},
		{name: "AllBeta", flags: map[string]bool{"AllBeta": true}, betaOn: true},
		{name: "named without AllAlpha", flags: map[string]bool{string(YARNBEMemoryEvict): true},
			on: []featuregate.Feature{YARNBEMemoryEvict}},
		{name: "AllAlpha=false", flags: map[string]bool{"AllAlpha": false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newGate(t)
			held, err := apply(g, tc.flags)
			require.NoError(t, err)
			assert.Len(t, held, tc.heldLen)
			if tc.nameHeld != "" {
				assert.Contains(t, held, tc.nameHeld)
			}
			for f := range Acts {
				want := false
				for _, o := range tc.on {
					want = want || o == f
				}
				assert.Equal(t, want, g.Enabled(f), "%s", f)
			}
			assert.Equal(t, tc.koordOn, g.Enabled("KoordAlpha"), "other alpha gates follow AllAlpha")
			assert.Equal(t, tc.betaOn, g.Enabled("KoordBeta"), "other beta gates follow AllBeta")
			assert.True(t, g.Enabled(YARNContainerInformer), "observing gates keep their default")
		})
	}
}

// TestHoldActingKeepsInput: the caller's map is not changed.
func TestHoldActingKeepsInput(t *testing.T) {
	in := map[string]bool{"AllAlpha": true}
	out, held := HoldActing(in)
	assert.Equal(t, map[string]bool{"AllAlpha": true}, in)
	assert.Len(t, out, len(Acts)+1)
	assert.Len(t, held, len(Acts))
}

// TestApplyRefusesUnknown: an unknown gate is an error, as koordlet's own.
func TestApplyRefusesUnknown(t *testing.T) {
	_, err := apply(newGate(t), map[string]bool{"NoSuchGate": true})
	assert.ErrorContains(t, err, "unrecognized feature gate: NoSuchGate")
}
