package yarninformer

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/config"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

func TestMain(m *testing.M) {
	if err := features.Register(); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

const (
	amName   = "container_e17_1700000000000_0042_01_000001"
	execName = "container_e17_1700000000000_0042_01_000002"
	newName  = "container_e17_1700000000000_0042_01_000003"
)

func nmBody(entries ...string) string {
	return `{"containers":{"container":[` + strings.Join(entries, ",") + `]}}`
}

func nmBytes(entries ...string) []byte { return []byte(nmBody(entries...)) }

func nmEntry(id, state string, mb, vcores int) string {
	return fmt.Sprintf(`{"id":%q,"state":%q,"user":"alice","totalMemoryNeededMB":%d,"totalVCoresNeeded":%d,"executionType":"GUARANTEED","exitCode":-1000}`, id, state, mb, vcores)
}

// fakeNM serves a settable body; mode "down" closes connections, "slow" hangs.
type fakeNM struct {
	srv   *httptest.Server
	body  atomic.Value
	mode  atomic.Value
	calls atomic.Int64
	// infoCalls counts node info requests (not in calls).
	infoCalls atomic.Int64
}

func newFakeNM(t *testing.T) *fakeNM {
	f := &fakeNM{}
	f.body.Store([]byte(nmBody()))
	f.mode.Store("ok")
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ws/v1/node/info" && f.mode.Load().(string) == "ok" {
			f.infoCalls.Add(1)
			_, _ = w.Write([]byte(`{"nodeInfo":{"id":"nm-host:45454","nodeHostName":"nm-host"}}`))
			return
		}
		f.calls.Add(1)
		switch f.mode.Load().(string) {
		case "slow":
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
			return
		case "garbage":
			_, _ = w.Write([]byte("<html>oops"))
			return
		case "500":
			http.Error(w, "internal", http.StatusInternalServerError)
			return
		}
		if r.URL.Path != "/ws/v1/node/containers" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(f.body.Load().([]byte))
	}))
	t.Cleanup(f.srv.Close)
	return f
}

type fakeRoot struct {
	helper *system.FileTestUtil
	yarn   string // YARN hierarchy relative dir
}

func newFakeRoot(t *testing.T) *fakeRoot {
	helper := system.NewFileTestUtil(t)
	t.Cleanup(helper.Cleanup)
	old := system.CgroupPathFormatter
	system.SetupCgroupPathFormatter(system.Cgroupfs)
	t.Cleanup(func() { system.CgroupPathFormatter = old })
	return &fakeRoot{helper: helper, yarn: "kubepods/besteffort/hadoop-yarn"}
}

func (r *fakeRoot) addContainer(t *testing.T, name string, pids string) {
	for _, ctrl := range []string{"cpu", "memory"} {
		dir := filepath.Join(r.helper.TempDir, ctrl, r.yarn, name)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(pids), 0o644))
	}
}

func (r *fakeRoot) removeContainer(t *testing.T, name string) {
	for _, ctrl := range []string{"cpu", "memory"} {
		require.NoError(t, os.RemoveAll(filepath.Join(r.helper.TempDir, ctrl, r.yarn, name)))
	}
}

func testConfig(endpoint string) *config.Config {
	cfg := config.NewDefault()
	cfg.NMEndpoint = endpoint
	cfg.NMTimeout = 300 * time.Millisecond
	cfg.ResyncInterval = 100 * time.Millisecond
	return cfg
}

func TestResyncWithNM(t *testing.T) {
	root := newFakeRoot(t)
	nm := newFakeNM(t)
	root.addContainer(t, amName, "11\n")
	root.addContainer(t, execName, "22\n23\n")
	nm.body.Store(nmBytes(nmEntry(amName, "RUNNING", 1024, 1), nmEntry(execName, "RUNNING", 4096, 2), nmEntry(newName, "LOCALIZING", 2048, 1)))

	st := store.New()
	p := New(testConfig(nm.srv.URL), st, nil)
	p.Setup(nil, nil)
	stats := p.Resync(context.Background())
	assert.Equal(t, store.Stats{Added: 3}, stats)

	exec, ok := st.Get(execName)
	require.True(t, ok)
	assert.Equal(t, []int{22, 23}, exec.Pids)
	assert.Equal(t, int64(4096)<<20, exec.RequestMemoryBytes)
	assert.Equal(t, int64(2000), exec.RequestMilliCPU)
	assert.Equal(t, store.SourceBoth, exec.Source)
	assert.Equal(t, root.yarn+"/"+execName, exec.Cgroups[0].Dir)
	am, _ := st.Get(amName)
	assert.True(t, am.IsAM)
	pending, _ := st.Get(newName)
	assert.Equal(t, store.SourceNM, pending.Source)
	assert.Equal(t, "LOCALIZING", pending.State)

	status := p.Status()
	assert.True(t, status.Enabled)
	assert.True(t, status.HierarchyFound)
	assert.Empty(t, status.NMError)
	assert.Equal(t, nm.srv.URL, status.NMEndpoint)
	assert.Equal(t, 3, status.Containers)
	assert.Equal(t, "nm-host:45454", p.NodeID(), "the node id is asked of the NM's node info")
	assert.Equal(t, NodeIDFromNMInfo, status.NMNodeIDSource)
	assert.EqualValues(t, 1, nm.infoCalls.Load())

	// The executor exits: its cgroup goes, the NM reports it finished.
	root.removeContainer(t, execName)
	nm.body.Store(nmBytes(nmEntry(amName, "RUNNING", 1024, 1), nmEntry(execName, "EXITED_WITH_FAILURE", 4096, 2), nmEntry(newName, "LOCALIZING", 2048, 1)))
	stats = p.Resync(context.Background())
	assert.Equal(t, store.Stats{Removed: 1}, stats)
	assert.EqualValues(t, 1, nm.infoCalls.Load(), "node info is asked once per endpoint")
}

func TestResyncNMFaults(t *testing.T) {
	for _, mode := range []string{"slow", "garbage", "500"} {
		t.Run(mode, func(t *testing.T) {
			root := newFakeRoot(t)
			nm := newFakeNM(t)
			root.addContainer(t, amName, "11\n")
			nm.body.Store(nmBytes(nmEntry(amName, "RUNNING", 1024, 1)))
			st := store.New()
			p := New(testConfig(nm.srv.URL), st, nil)
			p.Setup(nil, nil)
			p.Resync(context.Background())

			nm.mode.Store(mode)
			root.addContainer(t, execName, "22\n")
			start := time.Now()
			stats := p.Resync(context.Background())
			assert.Less(t, time.Since(start), 3*time.Second)
			assert.Equal(t, store.Stats{Added: 1}, stats, "the cgroup view moves on without the NM")
			am, _ := st.Get(amName)
			assert.Equal(t, "RUNNING", am.State, "NM data is kept while the NM is unavailable")
			assert.NotEmpty(t, p.Status().NMError)
		})
	}
}

func TestStartSyncsWhenNMDown(t *testing.T) {
	root := newFakeRoot(t)
	root.addContainer(t, amName, "11\n")
	nm := newFakeNM(t)
	url := nm.srv.URL
	nm.srv.Close()

	st := store.New()
	p := New(testConfig(url), st, nil)
	p.Setup(nil, nil)
	assert.False(t, p.HasSynced())
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { p.Start(stop); close(done) }()
	require.Eventually(t, p.HasSynced, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, 1, st.Len())

	// Later resyncs pick up new containers.
	root.addContainer(t, execName, "22\n")
	require.Eventually(t, func() bool { return st.Len() == 2 }, 5*time.Second, 20*time.Millisecond)
	close(stop)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Start did not return after stop")
	}
}

func TestDisabledByGate(t *testing.T) {
	require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.Set(string(features.YARNContainerInformer)+"=false"))
	t.Cleanup(func() {
		require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.Set(string(features.YARNContainerInformer)+"=true"))
	})
	p := New(testConfig(""), store.New(), nil)
	p.Setup(nil, nil)
	p.Start(make(chan struct{})) // returns at once when disabled
	assert.True(t, p.HasSynced())
	assert.False(t, p.Status().Enabled)
}

func TestResyncDiscoversNMPod(t *testing.T) {
	root := newFakeRoot(t)
	nm := newFakeNM(t)
	root.addContainer(t, amName, "11\n")
	nm.body.Store(nmBytes(nmEntry(amName, "RUNNING", 1024, 1)))
	host, port, _ := strings.Cut(strings.TrimPrefix(nm.srv.URL, "http://"), ":")
	var portN int
	_, _ = fmt.Sscan(port, &portN)

	pods := []*statesinformer.PodMeta{{Pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "yarn", Name: "nm-0", Labels: map[string]string{"app.kubernetes.io/component": "node-manager"},
			Annotations: map[string]string{NodeIDAnnotation: "annotated:8041"}},
		Spec:   corev1.PodSpec{HostNetwork: true},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, HostIP: host, PodIP: "10.9.9.9"},
	}}}
	cfg := testConfig("")
	cfg.NMPort = portN
	st := store.New()
	p := New(cfg, st, func() []*statesinformer.PodMeta { return pods })
	p.Setup(nil, nil)
	p.Resync(context.Background())
	am, ok := st.Get(amName)
	require.True(t, ok)
	assert.Equal(t, store.SourceBoth, am.Source)
	assert.Equal(t, "yarn/nm-0", p.Status().NMPod)
	assert.Equal(t, "annotated:8041", p.NodeID(), "the pod's annotation wins over the NM's node info")
	assert.Equal(t, NodeIDFromPod, p.Status().NMNodeIDSource)
}

func TestLocateNM(t *testing.T) {
	sel := labels.SelectorFromSet(labels.Set{"app.kubernetes.io/component": "node-manager"})
	nmLabels := map[string]string{"app.kubernetes.io/component": "node-manager"}
	now := metav1.Now()
	older := metav1.NewTime(now.Add(-time.Hour))
	pod := func(name string, hostNet bool, phase corev1.PodPhase, podIP string, start *metav1.Time, lbl map[string]string) *statesinformer.PodMeta {
		return &statesinformer.PodMeta{Pod: &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "yarn", Name: name, Labels: lbl},
			Spec:       corev1.PodSpec{HostNetwork: hostNet},
			Status:     corev1.PodStatus{Phase: phase, HostIP: "192.168.0.5", PodIP: podIP, StartTime: start},
		}}
	}
	tests := []struct {
		name    string
		pods    []*statesinformer.PodMeta
		want    string
		wantErr string
	}{
		{"pod network", []*statesinformer.PodMeta{pod("nm", false, corev1.PodRunning, "10.1.2.3", &now, nmLabels)}, "http://10.1.2.3:8042", ""},
		{"host network", []*statesinformer.PodMeta{pod("nm", true, corev1.PodRunning, "192.168.0.5", &now, nmLabels)}, "http://192.168.0.5:8042", ""},
		{"ipv6", []*statesinformer.PodMeta{pod("nm", false, corev1.PodRunning, "fd00::5", &now, nmLabels)}, "http://[fd00::5]:8042", ""},
		{"newest running wins", []*statesinformer.PodMeta{
			pod("old", false, corev1.PodRunning, "10.0.0.1", &older, nmLabels),
			pod("new", false, corev1.PodRunning, "10.0.0.2", &now, nmLabels),
			pod("pending", false, corev1.PodPending, "10.0.0.3", &now, nmLabels),
		}, "http://10.0.0.2:8042", ""},
		{"none", []*statesinformer.PodMeta{pod("web", false, corev1.PodRunning, "10.0.0.1", &now, map[string]string{"app": "web"})}, "", "no pod"},
		{"not running", []*statesinformer.PodMeta{pod("nm", false, corev1.PodPending, "", nil, nmLabels)}, "", "none is running"},
		{"no ip", []*statesinformer.PodMeta{pod("nm", false, corev1.PodRunning, "", &now, nmLabels)}, "", "no IP"},
		{"nil entries", []*statesinformer.PodMeta{nil, {}}, "", "no pod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := locateNM(tt.pods, sel, 8042)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got.Endpoint)
		})
	}
}
