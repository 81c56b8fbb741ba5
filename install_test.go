package koordletyarn

import (
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordinator-sh/koordinator/cmd/koordlet/options"
	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
	qmframework "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/framework"
	qmplugins "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/plugins"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer/impl"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/version"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarninformer"
)

func TestInstall(t *testing.T) {
	fs := flag.NewFlagSet("koordlet", flag.ContinueOnError)
	fw, err := Install(fs)
	require.NoError(t, err)

	// Gates, flags and registries.
	assert.True(t, koordfeatures.DefaultKoordletFeatureGate.Enabled(features.YARNContainerInformer))
	require.NoError(t, fs.Parse([]string{"--yarn-nm-endpoint=http://127.0.0.1:18042", "--yarn-cgroup-hierarchy=/hadoop-yarn", "--yarn-resync-interval=2s",
		"--yarn-qos-reconcile-interval=3s"}))
	require.NoError(t, fw.Validate())
	assert.Equal(t, "http://127.0.0.1:18042", fw.Config.NMEndpoint)
	// The loops built before the flags were parsed run with the parsed values.
	assert.Equal(t, 3*time.Second, fw.QoS.Interval())
	assert.Equal(t, 3*time.Second, fw.memcg.Interval())
	assert.Equal(t, 2*time.Second, fw.Watch.ResyncInterval())
	assert.Same(t, fw.Informer, impl.DefaultPluginRegistry[yarninformer.Name])
	require.Contains(t, qmplugins.StrategyPlugins, StrategyName)
	require.Contains(t, options.ExtendedHTTPHandlerRegistry, ContainersPath)
	require.Contains(t, options.ExtendedHTTPHandlerRegistry, LedgerPath)

	bad := flag.NewFlagSet("koordlet", flag.ContinueOnError)
	fw2, err := Install(bad)
	require.NoError(t, err)
	require.NoError(t, bad.Parse([]string{"--yarn-cgroup-hierarchy=../etc"}))
	assert.ErrorContains(t, fw2.Validate(), "--yarn-cgroup-hierarchy")

	// The qosmanager factory records koordlet's handles.
	opts := &qmframework.Options{}
	qmplugins.StrategyPlugins[StrategyName](opts)
	assert.Nil(t, fw2.Handles.StatesInformer())

	// The statesinformer plugin runs as koordlet runs it, and the debug
	// endpoint serves the store.
	helper := system.NewFileTestUtil(t)
	defer helper.Cleanup()
	name := "container_e17_1700000000000_0042_01_000002"
	dir := filepath.Join(helper.TempDir, "cpu", "hadoop-yarn", name)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte("42\n"), 0o644))
	fw2.Config.CgroupHierarchy = "hadoop-yarn"
	fw2.Config.NMEndpoint = "http://127.0.0.1:1" // nothing listens there
	fw2.Informer.Setup(nil, nil)
	stop := make(chan struct{})
	defer close(stop)
	go fw2.Informer.Start(stop)
	require.Eventually(t, fw2.Informer.HasSynced, 10*time.Second, 10*time.Millisecond)
	fw2.Usage.Collect(time.Now())
	defer fw2.Usage.Close()

	rec := httptest.NewRecorder()
	options.ExtendedHTTPHandlerRegistry[ContainersPath]()(rec, httptest.NewRequest(http.MethodGet, ContainersPath, nil))
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var body map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	containers := body["containers"].([]any)
	require.Len(t, containers, 1)
	c := containers[0].(map[string]any)
	assert.Equal(t, name, c["id"])
	assert.Equal(t, "application_1700000000000_0042", c["applicationId"])
	assert.Equal(t, false, c["applicationMaster"])
	assert.Equal(t, "sequence", c["amSource"], "no environment read on a fake root: the sequence rule decided")
	assert.Equal(t, "cgroup", c["source"])
	assert.Equal(t, []any{float64(42)}, c["pids"])
	assert.Equal(t, map[string]any{"dir": "hadoop-yarn/" + name, "owned": true}, c["cgroups"].(map[string]any)["cpu"])
	assert.Equal(t, "processes", c["memoryAccounting"], "a cpu cgroup and no memory cgroup: CPU-only YARN")
	assert.Equal(t, map[string]any{"cgroup": float64(0), "processes": float64(1)}, body["memoryAccounting"])
	informer := body["informer"].(map[string]any)
	assert.NotEmpty(t, informer["nmError"])
	assert.NotContains(t, body, "interference", "no controller step yet: no decision shown")

	rec = httptest.NewRecorder()
	options.ExtendedHTTPHandlerRegistry[ContainersPath]()(rec, httptest.NewRequest(http.MethodPost, ContainersPath, nil))
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
}

// TestBuildInfoMetric: koordlet_yarn_build_info is 1 with the build's
// labels; a second install in one process keeps the first.
func TestBuildInfoMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	info := version.Info{Version: "v0.1.0", Koordinator: "v1.8.0", Go: "go1.26.0"}
	t.Setenv("NODE_NAME", "n1")
	require.NoError(t, registerBuildInfo(reg, info))
	require.NoError(t, registerBuildInfo(reg, info))
	n, err := testutil.GatherAndCount(reg, "koordlet_yarn_build_info")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`# HELP koordlet_yarn_build_info 1, labelled with koordlet-yarn's version, the Koordinator it is built on and the Go toolchain.
# TYPE koordlet_yarn_build_info gauge
koordlet_yarn_build_info{go="go1.26.0",koordinator="v1.8.0",node="n1",version="v0.1.0"} 1
`), "koordlet_yarn_build_info"))
}
