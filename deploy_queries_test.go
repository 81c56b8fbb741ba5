package koordletyarn

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder is a Registerer that keeps what is registered with it.
type recorder struct{ collectors []prometheus.Collector }

func (r *recorder) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	r.collectors = append(r.collectors, cs...)
}

func (r *recorder) Unregister(prometheus.Collector) bool { return false }

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// exportedSeries installs the plugin set with a recording registerer and
// returns the name of every series its collectors describe: what koordlet
// exports on /metrics, from the code's own descriptors.
func exportedSeries(t *testing.T) map[string]bool {
	t.Helper()
	rec := &recorder{}
	_, err := install(flag.NewFlagSet("koordlet", flag.ContinueOnError), rec)
	require.NoError(t, err)
	names := map[string]bool{}
	for _, c := range rec.collectors {
		ch := make(chan *prometheus.Desc, 16)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := fqName.FindStringSubmatch(d.String())
			require.NotNil(t, m, "descriptor %s", d)
			names[m[1]] = true
		}
	}
	return names
}

// grafanaVariables are Grafana's built-in range variables, replaced by a
// duration so that the queries parse as PromQL.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

// queriedSeries parses a PromQL expression and returns the series names its
// selectors name.
func queriedSeries(expr string) ([]string, error) {
	e, err := parser.ParseExpr(grafanaVariables.Replace(expr))
	if err != nil {
		return nil, err
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			names = append(names, vs.Name)
		}
		return nil
	})
	return names, nil
}

func TestQueriedSeries(t *testing.T) {
	got, err := queriedSeries(`sum by (reason) (increase(a_total{node=~"$node"}[$__rate_interval])) / sum(b)`)
	require.NoError(t, err)
	assert.Equal(t, []string{"a_total", "b"}, got)
	_, err = queriedSeries(`sum(`)
	assert.Error(t, err)
}

// checkQueried asserts every series of exprs is one koordlet exports.
func checkQueried(t *testing.T, exported map[string]bool, where string, exprs []string) map[string]bool {
	t.Helper()
	used := map[string]bool{}
	for _, expr := range exprs {
		names, err := queriedSeries(expr)
		if !assert.NoError(t, err, "%s: %s", where, expr) {
			continue
		}
		assert.NotEmpty(t, names, "%s: %s selects no series", where, expr)
		for _, n := range names {
			assert.True(t, exported[n], "%s queries %s, which koordlet does not export", where, n)
			used[n] = true
		}
	}
	return used
}

// TestExportedSeries: the descriptor listing is real.
func TestExportedSeries(t *testing.T) {
	exported := exportedSeries(t)
	for _, n := range []string{"koordlet_yarn_containers", "koordlet_yarn_container_evictions_total", "koordlet_yarn_qos_writes_total", "koordlet_yarn_discovery_source"} {
		assert.True(t, exported[n], n)
	}
	for n := range exported {
		assert.True(t, strings.HasPrefix(n, "koordlet_yarn_"), "%s: every series of the plugin set is koordlet_yarn_*", n)
	}
}

var (
	constLabels    = regexp.MustCompile(`constLabels: \{([^}]*)\}`)
	variableLabels = regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
)

// TestSeriesCarryNodeAndBaseUnits: every series of the plugin set has the
// node label (a variable one, or the constant the installer adds), no name
// carries a scaled unit (milli-cores), and the series with a resource label
// say its unit.
func TestSeriesCarryNodeAndBaseUnits(t *testing.T) {
	rec := &recorder{}
	_, err := install(flag.NewFlagSet("koordlet", flag.ContinueOnError), rec)
	require.NoError(t, err)
	n := 0
	for _, c := range rec.collectors {
		ch := make(chan *prometheus.Desc, 16)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			n++
			desc := d.String()
			name := fqName.FindStringSubmatch(desc)[1]
			var labels []string
			for _, re := range []*regexp.Regexp{constLabels, variableLabels} {
				if m := re.FindStringSubmatch(desc); m != nil && m[1] != "" {
					for _, l := range strings.Split(m[1], ",") {
						l, _, _ = strings.Cut(l, "=")
						labels = append(labels, strings.TrimSpace(l))
					}
				}
			}
			assert.Contains(t, labels, "node", "%s has the node label", name)
			assert.NotContains(t, name, "milli", "%s: base units (cores, bytes, seconds)", name)
			if slices.Contains(labels, "resource") && !strings.HasSuffix(name, "_writes_total") {
				assert.Contains(t, labels, "unit", "%s: a resource label says its unit", name)
			}
		}
	}
	assert.Greater(t, n, 20)
}

// TestGrafanaDashboard checks every query of deploy/grafana's dashboards
// names only series koordlet exports, and that the dashboard covers what it
// is for: containers by state, usage vs requests, evictions, QoS applied,
// discovery, collector cost.
func TestGrafanaDashboard(t *testing.T) {
	exported := exportedSeries(t)
	files, err := filepath.Glob(filepath.Join("deploy", "grafana", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		var dash struct {
			UID    string `json:"uid"`
			Panels []struct {
				Title   string `json:"title"`
				Type    string `json:"type"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
			Templating struct {
				List []struct {
					Name       string `json:"name"`
					Definition string `json:"definition"`
				} `json:"list"`
			} `json:"templating"`
		}
		require.NoError(t, json.Unmarshal(b, &dash), file)
		assert.NotEmpty(t, dash.UID)
		var exprs []string
		for _, p := range dash.Panels {
			if p.Type == "row" {
				continue
			}
			assert.NotEmpty(t, p.Targets, "panel %q queries nothing", p.Title)
			for _, tg := range p.Targets {
				exprs = append(exprs, tg.Expr)
			}
		}
		used := checkQueried(t, exported, file, exprs)
		// Variables: label_values(<selector>, label).
		for _, v := range dash.Templating.List {
			if m := regexp.MustCompile(`^label_values\((.+), *\w+\)$`).FindStringSubmatch(v.Definition); m != nil {
				checkQueried(t, exported, file+" variable "+v.Name, []string{m[1]})
			}
		}
		for _, n := range []string{"koordlet_yarn_containers", "koordlet_yarn_container_cpu_usage_cores", "koordlet_yarn_container_cpu_request_cores",
			"koordlet_yarn_container_memory_usage_bytes", "koordlet_yarn_container_memory_request_bytes", "koordlet_yarn_container_evictions_total",
			"koordlet_yarn_qos_writes_total", "koordlet_yarn_discovery_source", "koordlet_yarn_collect_duration_seconds",
			// The application mode's series (the per-application panels
			// must not go empty with --yarn-container-metrics=application).
			"koordlet_yarn_application_cpu_usage_cores", "koordlet_yarn_application_cpu_request_cores",
			"koordlet_yarn_application_memory_usage_bytes", "koordlet_yarn_application_memory_request_bytes",
			"koordlet_yarn_ls_cpu_wait_node_p99_seconds", "koordlet_yarn_ls_cpu_interference_wait_node_p99_seconds",
			"koordlet_yarn_interference_budget_cores", "koordlet_yarn_build_info", "koordlet_yarn_containers_without_cgroup",
			"koordlet_yarn_restore_pending"} {
			assert.True(t, used[n], "%s does not show %s", file, n)
		}
		for _, p := range dash.Panels {
			if p.Type == "row" {
				continue
			}
			var exprs []string
			for _, tg := range p.Targets {
				exprs = append(exprs, tg.Expr)
			}
			checkPanelUnits(t, file+" panel "+p.Title, exprs)
		}
		var unused []string
		for n := range exported {
			if !used[n] {
				unused = append(unused, n)
			}
		}
		sort.Strings(unused)
		t.Logf("%s: series not on the dashboard: %v", file, unused)
	}
}

// TestAlertRules parses deploy/prometheus/alerts.yaml with Prometheus' own
// rule-file parser (which also parses each expression) and checks every
// series it queries is one koordlet exports.
func TestAlertRules(t *testing.T) {
	exported := exportedSeries(t)
	groups, errs := rulefmt.ParseFile(filepath.Join("deploy", "prometheus", "alerts.yaml"))
	require.Empty(t, errs)
	anchors := markdownAnchors(t, filepath.Join("docs", "troubleshooting.md"))
	var exprs []string
	alerts := map[string]bool{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Alert.Value, "group %s: only alerting rules", g.Name)
			assert.False(t, alerts[r.Alert.Value], "alert %s twice", r.Alert.Value)
			alerts[r.Alert.Value] = true
			assert.Contains(t, []string{"info", "warning", "critical"}, r.Labels["severity"], r.Alert.Value)
			assert.NotEmpty(t, r.Annotations["summary"], r.Alert.Value)
			url, anchor, ok := strings.Cut(r.Annotations["runbook_url"], "#")
			if assert.True(t, ok, "%s: a runbook_url with an anchor", r.Alert.Value) {
				assert.Equal(t, runbookBase, url, r.Alert.Value)
				assert.True(t, anchors[anchor], "%s: runbook_url anchor #%s is no heading of docs/troubleshooting.md", r.Alert.Value, anchor)
			}
			exprs = append(exprs, r.Expr.Value)
		}
	}
	used := checkQueried(t, exported, "alerts.yaml", exprs)
	for _, n := range []string{"koordlet_yarn_container_evictions_total", "koordlet_yarn_usage_accounted_as_be", "koordlet_yarn_discovery_source",
		"koordlet_yarn_build_info", "koordlet_yarn_containers_without_cgroup", "koordlet_yarn_restore_pending"} {
		assert.True(t, used[n], "no alert on %s", n)
	}
}

// runbookBase is where every alert's runbook_url points (an anchor added).
const runbookBase = "https://github.com/koordlet-yarn/koordlet-yarn/blob/main/docs/troubleshooting.md"

// markdownAnchors returns the anchors GitHub gives the headings of a
// markdown file: lower case, spaces to hyphens, punctuation other than
// hyphens and underscores dropped; a heading twice is an error here (GitHub
// would number the second).
func markdownAnchors(t *testing.T, file string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	out := map[string]bool{}
	inFence := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		a := githubAnchor(strings.TrimLeft(line, "# "))
		require.False(t, out[a], "%s: heading anchor #%s twice", file, a)
		out[a] = true
	}
	return out
}

// githubAnchor is GitHub's anchor of a heading's text.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestGithubAnchor(t *testing.T) {
	assert.Equal(t, "yarncontainers-is-empty", githubAnchor("`/yarn/containers` is empty"))
	assert.Equal(t, "processes-stay-in-the-nodemanager-pods-cgroup", githubAnchor("Processes stay in the NodeManager pod's cgroup"))
	assert.Equal(t, "koordlet-yarn-is-absent-on-a-node", githubAnchor("koordlet-yarn is absent on a node"))
}

// checkPanelUnits asserts one panel's queries put one unit on its axis
// (panelUnitProblems).
func checkPanelUnits(t *testing.T, where string, exprs []string) {
	t.Helper()
	assert.Empty(t, panelUnitProblems(exprs), where)
}

// panelUnitProblems says where one panel's queries put more than one unit
// on its axis: the base-unit suffixes of the series they select (_cores,
// _bytes, _seconds) differ, or a batch ledger series (cores or bytes by its
// resource label) is not pinned to one resource.
func panelUnitProblems(exprs []string) []string {
	var problems []string
	units := map[string]bool{}
	for _, expr := range exprs {
		e, err := parser.ParseExpr(grafanaVariables.Replace(expr))
		if err != nil {
			continue // checkQueried reports it
		}
		parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
			vs, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			for _, u := range []string{"_cores", "_bytes", "_seconds"} {
				if strings.HasSuffix(vs.Name, u) {
					units[u] = true
				}
			}
			if strings.HasPrefix(vs.Name, "koordlet_yarn_batch_") && !strings.HasSuffix(vs.Name, "_total") && !strings.HasSuffix(vs.Name, "_seconds") {
				pinned := false
				for _, m := range vs.LabelMatchers {
					if m.Name == "resource" && m.Type == labels.MatchEqual {
						pinned = true
					}
				}
				if !pinned {
					problems = append(problems, vs.Name+" mixes cores and bytes unless resource= pins one")
				}
			}
			return nil
		})
	}
	if len(units) > 1 {
		var us []string
		for u := range units {
			us = append(us, u)
		}
		sort.Strings(us)
		problems = append(problems, "several units on one axis: "+strings.Join(us, ", "))
	}
	return problems
}

func TestPanelUnitProblems(t *testing.T) {
	assert.Empty(t, panelUnitProblems([]string{`sum(koordlet_yarn_container_cpu_usage_cores)`, `sum(koordlet_yarn_application_cpu_request_cores)`}))
	assert.Empty(t, panelUnitProblems([]string{`koordlet_yarn_batch_overcommit{resource="batch-cpu"}`}))
	assert.Equal(t, []string{"several units on one axis: _bytes, _cores"},
		panelUnitProblems([]string{`sum(koordlet_yarn_container_cpu_usage_cores)`, `sum(koordlet_yarn_container_memory_usage_bytes)`}))
	assert.Equal(t, []string{"koordlet_yarn_batch_overcommit mixes cores and bytes unless resource= pins one"},
		panelUnitProblems([]string{`koordlet_yarn_batch_overcommit{node=~"$node"}`}))
}
