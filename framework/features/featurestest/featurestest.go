// Package featurestest sets koordlet's feature gates in tests.
package featurestest

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/component-base/featuregate"

	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
)

// Set sets koordlet's feature gates for the test and restores the values
// they had when the test ends.
func Set(t testing.TB, gates map[string]bool) {
	t.Helper()
	prev := map[string]bool{}
	for g := range gates {
		prev[g] = koordfeatures.DefaultKoordletFeatureGate.Enabled(featuregate.Feature(g))
	}
	require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(gates))
	t.Cleanup(func() { _ = koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(prev) })
}
