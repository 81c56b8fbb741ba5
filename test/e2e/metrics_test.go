package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/koordinator-sh/koordinator/apis/extension"
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

// scrape parses koordlet's /metrics.
func scrape(t *testing.T, b *nodebox.Box) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := tryScrape(b)
	require.NoError(t, err)
	return fams
}

// tryScrape parses koordlet's /metrics and returns the error instead of
// failing the test: for conditions polled by Eventually, where a FailNow
// would end the polling goroutine and leave Eventually waiting its whole
// time.
func tryScrape(b *nodebox.Box) (map[string]*dto.MetricFamily, error) {
	text, err := b.Metrics()
	if err != nil {
		return nil, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(strings.NewReader(text))
}

// polled returns the gauge of family name whose labels include want, for
// conditions polled by Eventually: a scrape that fails (koordlet slow to
// answer on a loaded node) is logged and reads as not yet, and the next
// poll tries again.
func polled(t *testing.T, b *nodebox.Box, name string, want map[string]string) (float64, bool) {
	t.Helper()
	fams, err := tryScrape(b)
	if err != nil {
		t.Logf("scrape /metrics: %v (polling again)", err)
		return 0, false
	}
	return value(fams, name, want)
}

// value returns the gauge (or counter) of the first series of family name
// whose labels include want.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	ms := series(fams, name, want)
	if len(ms) == 0 {
		return 0, false
	}
	return sampleValue(ms[0]), true
}

// series returns the series of family name whose labels include want.
func series(fams map[string]*dto.MetricFamily, name string, want map[string]string) []*dto.Metric {
	f, ok := fams[name]
	if !ok {
		return nil
	}
	var out []*dto.Metric
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		out = append(out, m)
	}
	return out
}

// sampleValue is a counter's or a gauge's value.
func sampleValue(m *dto.Metric) float64 {
	if m.Counter != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

// TestMetrics: Prometheus on koordlet's endpoint shows per-container usage
// of real burners and allocators, requests, states and the BE accounting;
// series go when containers go.
func TestMetrics(t *testing.T) {
	b := startBox(t, nodebox.Options{})
	burner, err := b.NM.Launch(nmemu.Spec{AppID: 9, Attempt: 1, Sequence: 2, User: "spark", MemoryMB: 2048, VCores: 1, Script: kerneltest.HelperScript("burn")})
	require.NoError(t, err)
	alloc, err := b.NM.Launch(nmemu.Spec{AppID: 9, Attempt: 1, Sequence: 3, User: "spark", MemoryMB: 1024, VCores: 1, Script: kerneltest.HelperScript("alloc=128")})
	require.NoError(t, err)

	var fams map[string]*dto.MetricFamily
	require.Eventually(t, func() bool {
		var err error
		if fams, err = tryScrape(b); err != nil {
			t.Logf("scrape /metrics: %v (polling again)", err)
			return false
		}
		cpu, ok1 := value(fams, "koordlet_yarn_container_cpu_usage_cores", map[string]string{"container_id": burner})
		mem, ok2 := value(fams, "koordlet_yarn_container_memory_usage_bytes", map[string]string{"container_id": alloc})
		return ok1 && ok2 && cpu > 0.5 && mem > 120<<20
	}, 30*time.Second, 500*time.Millisecond, "the burner's CPU and the allocator's memory show on /metrics")

	labels := map[string]string{"container_id": alloc, "application_id": "application_1700000000000_0009", "user": "spark", "am": "false", "node": nodebox.NodeName}
	req, ok := value(fams, "koordlet_yarn_container_memory_request_bytes", labels)
	require.True(t, ok)
	assert.Equal(t, float64(1024<<20), req)
	running, _ := value(fams, "koordlet_yarn_containers", map[string]string{"state": "RUNNING"})
	assert.Equal(t, 2.0, running)
	asBE, ok := value(fams, "koordlet_yarn_usage_accounted_as_be", nil)
	require.True(t, ok)
	assert.Equal(t, 0.0, asBE, "the box's NodeSLO declares no host application yet")
	resp, err := b.Containers()
	require.NoError(t, err)
	require.NotNil(t, resp.Accounting)
	assert.False(t, resp.Accounting.AsBE)

	// The operator declares YARN as a BE host application.
	slo, err := b.Koord.SloV1alpha1().NodeSLOs().Get(context.Background(), nodebox.NodeName, metav1.GetOptions{})
	require.NoError(t, err)
	slo.Spec.HostApplications = []slov1alpha1.HostApplicationSpec{{Name: "hadoop-yarn", QoS: extension.QoSBE,
		CgroupPath: &slov1alpha1.CgroupPath{Base: slov1alpha1.CgroupBaseTypeKubeBesteffort, RelativePath: "hadoop-yarn/"}}}
	_, err = b.Koord.SloV1alpha1().NodeSLOs().Update(context.Background(), slo, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		v, _ := polled(t, b, "koordlet_yarn_usage_accounted_as_be", nil)
		return v == 1
	}, 30*time.Second, 500*time.Millisecond, "YARN usage is accounted as BE once the host application is declared")

	// The burner exits: its series are deleted.
	b.NM.Exit(burner)
	<-b.NM.Exited(burner)
	require.Eventually(t, func() bool {
		_, ok := polled(t, b, "koordlet_yarn_container_cpu_usage_cores", map[string]string{"container_id": burner})
		return !ok
	}, 20*time.Second, 500*time.Millisecond, "a removed container's series are deleted")
}

// cpuOverSpan measures a container's CPU both ways over the same span:
// koordlet's koordlet_yarn_container_cpu_usage_cores sampled once a
// collect interval (1 s in the box) and averaged, and the kernel's counter
// (usage, read by the caller) over the span. koordlet's figure is a rate
// over its last interval; in a starved guest one interval swings far from
// a 5 s average, their mean does not.
func cpuOverSpan(t *testing.T, b *nodebox.Box, id string, span time.Duration, usage func() time.Duration) (koordlet, kernel float64) {
	t.Helper()
	u0, t0 := usage(), time.Now()
	var sum float64
	n := 0
	for time.Since(t0) < span {
		time.Sleep(time.Second)
		if v, ok := polled(t, b, "koordlet_yarn_container_cpu_usage_cores", map[string]string{"container_id": id}); ok {
			sum += v
			n++
		}
	}
	kernel = float64(usage()-u0) / float64(time.Since(t0))
	if n == 0 {
		return 0, kernel
	}
	return sum / float64(n), kernel
}

// memoryShown waits until /metrics gives container id more than min bytes of
// memory (koordlet_yarn_container_memory_usage_bytes). On failure it prints
// what koordlet says of the container (its accounting, cgroups, processes,
// the charge split of a container moved while holding memory) and what the
// kernel says (the processes' resident set, the memory cgroup's
// memory.stat), then fails the test.
func memoryShown(t *testing.T, b *nodebox.Box, id string, min float64, wait time.Duration, msg string) {
	t.Helper()
	// A plain loop, not assert.Eventually: its condition runs in a
	// goroutine that may still run after it gave up.
	last, seen := 0.0, false
	for end := time.Now().Add(wait); ; time.Sleep(500 * time.Millisecond) {
		v, ok := polled(t, b, "koordlet_yarn_container_memory_usage_bytes", map[string]string{"container_id": id})
		if ok {
			last, seen = v, true
		}
		if ok && v > min {
			return
		}
		if time.Now().After(end) {
			break
		}
	}
	t.Errorf("%s (%v): %s on /metrics last %.0f bytes (present %t), wanted more than %.0f", msg, wait, id, last, seen, min)
	resp, err := b.Containers()
	if err != nil {
		t.Fatalf("/yarn/containers: %v", err)
	}
	if resp.MemoryAccounting != nil {
		t.Logf("memory accounting: %+v", *resp.MemoryAccounting)
	}
	c := find(resp, id)
	if c == nil {
		t.Fatalf("koordlet does not list %s", id)
	}
	t.Logf("koordlet has %s: accounting %s, cgroups %+v, pids %v", id, c.MemoryAccounting(), c.Cgroups, c.Pids)
	for _, pid := range c.Pids {
		status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		var rss []string
		for _, l := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(l, "Rss") || strings.HasPrefix(l, "VmRSS") {
				rss = append(rss, strings.Join(strings.Fields(l), " "))
			}
		}
		cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		t.Logf("process %d: %s; cgroups %q", pid, strings.Join(rss, ", "), strings.TrimSpace(string(cg)))
	}
	if ref := c.Cgroups[cgroups.Memory]; ref.Owned {
		dir := filepath.Join(b.CgroupRoot(), "memory", ref.Dir)
		if _, err := os.Stat(filepath.Join(b.CgroupRoot(), "cgroup.controllers")); err == nil {
			dir = filepath.Join(b.CgroupRoot(), ref.Dir) // cgroup v2
		}
		stat, err := os.ReadFile(filepath.Join(dir, "memory.stat"))
		t.Logf("%s/memory.stat (%v):\n%s", dir, err, stat)
	}
	t.FailNow()
}
