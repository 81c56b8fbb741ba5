package features

import (
	"fmt"
	"sort"

	"k8s.io/component-base/featuregate"

	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
)

// The component-base gates that turn on every gate of a maturity at once.
const (
	allAlpha = "AllAlpha"
	allBeta  = "AllBeta"
)

// Apply sets koordlet's feature gate from the --feature-gates map, as
// koordlet's main does with SetFromMap, with one rule of koordlet-yarn's: a
// gate that acts (Acts) is on only when it is named. AllAlpha=true (or
// AllBeta=true), which a customised Koordinator release may set to try
// Koordinator's own alpha features, turns on every other gate of that
// maturity as usual but none of koordlet-yarn's acting gates: an
// observe-only DaemonSet stays observe-only. Apply returns the acting gates
// that were held off this way (sorted), for the caller to say so once.
func Apply(m map[string]bool) ([]featuregate.Feature, error) {
	return apply(koordfeatures.DefaultMutableKoordletFeatureGate, m)
}

// apply is Apply on gate g.
func apply(g featuregate.MutableFeatureGate, m map[string]bool) ([]featuregate.Feature, error) {
	set, held := HoldActing(m)
	if err := g.SetFromMap(set); err != nil {
		return nil, fmt.Errorf("set the feature gates: %w", err)
	}
	return held, nil
}

// HoldActing returns m with every acting gate that AllAlpha=true or
// AllBeta=true would turn on, and that m does not name, set to its default
// (off), and the list of those gates, sorted. An explicit name always
// wins, on or off. m itself is not changed.
func HoldActing(m map[string]bool) (map[string]bool, []featuregate.Feature) {
	out := make(map[string]bool, len(m)+len(Acts))
	for k, v := range m {
		out[k] = v
	}
	var held []featuregate.Feature
	for f := range Acts {
		spec, ok := Specs[f]
		if !ok || spec.Default {
			continue
		}
		if _, named := m[string(f)]; named {
			continue
		}
		if (spec.PreRelease == featuregate.Alpha && m[allAlpha]) || (spec.PreRelease == featuregate.Beta && m[allBeta]) {
			out[string(f)] = false
			held = append(held, f)
		}
	}
	sort.Slice(held, func(i, j int) bool { return held[i] < held[j] })
	return out, held
}
