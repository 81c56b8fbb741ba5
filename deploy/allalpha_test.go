package deploy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/component-base/featuregate"

	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"

	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
)

// TestOverlayUnderAllAlpha: the observe-only overlay, under a customised
// Koordinator release that adds AllAlpha=true to koordlet's
// --feature-gates, acts on nothing: koordlet's gate, set as bin/koordlet
// sets it (features.HoldActing, then SetFromMap), has no acting YARN gate
// on, while Koordinator's own alpha gates follow AllAlpha.
func TestOverlayUnderAllAlpha(t *testing.T) {
	require.NoError(t, features.Register())
	ds := daemonSet(t, render(t, operatorOverlay(t, testRegistry)))
	gates := gatesOf(t, ds.Spec.Template.Spec.Containers[0])
	gates["AllAlpha"] = true

	// A fresh gate that knows every gate koordlet's does (Koordinator's and ours).
	g := featuregate.NewFeatureGate()
	known := koordfeatures.DefaultMutableKoordletFeatureGate.GetAll()
	delete(known, "AllAlpha")
	delete(known, "AllBeta")
	require.NoError(t, g.Add(known))
	set, held := features.HoldActing(gates)
	require.NoError(t, g.SetFromMap(set))
	for f, what := range features.Acts {
		assert.False(t, g.Enabled(f), "AllAlpha=true over the observe-only overlay turned on %s (%s)", f, what)
	}
	assert.Len(t, held, len(features.Acts), "every acting gate is held off and said so")
	assert.True(t, g.Enabled(featuregate.Feature("CgroupReconcile")), "the chart's gates are kept")
	assert.True(t, g.Enabled(koordfeatures.BEMemoryEvict))
}
