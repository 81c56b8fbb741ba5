package koordletyarn

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/component-base/featuregate"

	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
)

// TestDocsGateTable: docs/gates.md lists every koordlet-yarn gate, and only
// those, with the stage and default the code registers.
func TestDocsGateTable(t *testing.T) {
	b, err := os.ReadFile("docs/gates.md")
	require.NoError(t, err)
	row := regexp.MustCompile("^\\| `(YARN\\w+)` \\| (Alpha|Beta|GA) \\| (on|off) \\|")
	seen := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		m := row.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		g := featuregate.Feature(m[1])
		spec, ok := features.Specs[g]
		if !assert.True(t, ok, "docs/gates.md lists %s, which is no gate", g) {
			continue
		}
		assert.False(t, seen[m[1]], "%s listed twice", g)
		seen[m[1]] = true
		assert.Equal(t, string(spec.PreRelease), strings.ToUpper(m[2]), "%s stage", g)
		assert.Equal(t, spec.Default, m[3] == "on", "%s default", g)
	}
	for g := range features.Specs {
		assert.True(t, seen[string(g)], "docs/gates.md lacks %s", g)
	}
}

// TestDocsMetricList: the series docs/metrics.md's table lists are exactly
// the series the plugin set registers.
func TestDocsMetricList(t *testing.T) {
	b, err := os.ReadFile("docs/metrics.md")
	require.NoError(t, err)
	name := regexp.MustCompile("`(koordlet_yarn_[a-z0-9_]+)`")
	listed := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "| `koordlet_yarn_") {
			continue
		}
		cells := strings.Split(l, "|")
		for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
			listed[m[1]] = true
		}
	}
	exported := exportedSeries(t)
	var missing, extra []string
	for n := range exported {
		if !listed[n] {
			missing = append(missing, n)
		}
	}
	for n := range listed {
		if !exported[n] {
			extra = append(extra, n)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	assert.Empty(t, missing, "registered but not in docs/metrics.md")
	assert.Empty(t, extra, "in docs/metrics.md but not registered")
}

// TestReadmeFirstScreen: what it is, needs, how to try and deploy it and
// its status fit the first 60 lines (before the first section).
func TestReadmeFirstScreen(t *testing.T) {
	b, err := os.ReadFile("README.md")
	require.NoError(t, err)
	lines := strings.Split(string(b), "\n")
	first := len(lines)
	for i, l := range lines {
		if strings.HasPrefix(l, "## ") {
			first = i
			break
		}
	}
	assert.LessOrEqual(t, first, 60, "the README's first screen")
	head := strings.Join(lines[:first], "\n")
	for _, want := range []string{"What it needs", "Try it", "Deploy it", "Status", "make demo", "make test", "docs/"} {
		assert.Contains(t, head, want)
	}
}
