package yarninformer

import (
	"net"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"

	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// nmPodAt is a running host-network NodeManager pod at ip.
func nmPodAt(name, ip string) []*statesinformer.PodMeta {
	return []*statesinformer.PodMeta{{Pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "yarn", Name: name, Labels: map[string]string{"app.kubernetes.io/component": "node-manager"}},
		Spec:       corev1.PodSpec{HostNetwork: true},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, HostIP: ip, PodIP: ip},
	}}}
}

// podList is a pod lister whose pods a test changes.
type podList struct{ v atomic.Value }

func (l *podList) set(pods []*statesinformer.PodMeta) { l.v.Store(pods) }

func (l *podList) get() []*statesinformer.PodMeta {
	pods, _ := l.v.Load().([]*statesinformer.PodMeta)
	return pods
}

// moveNM serves nm also on ip, at nm's port (the NM pod rescheduled to
// another address).
func moveNM(t *testing.T, nm *fakeNM, ip string) {
	_, port, err := net.SplitHostPort(nm.srv.Listener.Addr().String())
	require.NoError(t, err)
	l, err := net.Listen("tcp", net.JoinHostPort(ip, port))
	if err != nil {
		kerneltest.Skipf(t, "cannot listen on %s:%s: %v", ip, port, err)
	}
	srv := httptest.NewUnstartedServer(nm.srv.Config.Handler)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
}

// startWithPods starts the plugin with a 10 s resync against a pod list
// without the NM pod, as after a koordlet restart.
func startWithPods(t *testing.T, nm *fakeNM) (*Plugin, *store.Store, *podList) {
	_, port, err := net.SplitHostPort(nm.srv.Listener.Addr().String())
	require.NoError(t, err)
	cfg := testConfig("")
	cfg.NMPort, _ = strconv.Atoi(port)
	cfg.ResyncInterval = 10 * time.Second
	pods := &podList{}
	st := store.New()
	p := New(cfg, st, pods.get)
	p.Setup(nil, nil)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { p.Start(stop); close(done) }()
	t.Cleanup(func() { close(stop); <-done })
	require.Eventually(t, p.HasSynced, 5*time.Second, 5*time.Millisecond)
	return p, st, pods
}

func nmFieldsOf(st *store.Store, name string) bool {
	c, ok := st.Get(name)
	return ok && c.User != "" && c.Source == store.SourceBoth
}

// TestNMAskedAtOnceWhenItsPodAppears: after a koordlet restart the first
// resync runs before koordlet's pod list has the NM pod; when the pod
// appears the NM is asked within 200 ms, not at the next 10 s resync; when
// the pod moves to another address the new NM is asked at once too.
func TestNMAskedAtOnceWhenItsPodAppears(t *testing.T) {
	root := newFakeRoot(t)
	root.addContainer(t, amName, "11\n")
	nm := newFakeNM(t)
	nm.body.Store(nmBytes(nmEntry(amName, "RUNNING", 1024, 1)))
	p, st, pods := startWithPods(t, nm)
	assert.False(t, nmFieldsOf(st, amName), "no NM pod yet: cgroup view only")
	assert.Zero(t, nm.calls.Load())

	appeared := time.Now()
	pods.set(nmPodAt("nm-0", "127.0.0.1"))
	require.Eventually(t, func() bool { return nmFieldsOf(st, amName) }, 200*time.Millisecond, time.Millisecond,
		"the NM is asked as soon as its pod is in the pod list")
	t.Logf("pod appeared → NM fields in the store: %v", time.Since(appeared))
	require.Eventually(t, func() bool { return p.Status().NMPod == "yarn/nm-0" }, time.Second, time.Millisecond)
	assert.Equal(t, int64(1), nm.calls.Load(), "asked once, not polled")

	// Rescheduled: the pod is now at another address, where the NM
	// lists a new container.
	moveNM(t, nm, "127.0.0.2")
	nm.body.Store(nmBytes(nmEntry(amName, "RUNNING", 1024, 1), nmEntry(execName, "LOCALIZING", 2048, 1)))
	pods.set(nmPodAt("nm-1", "127.0.0.2"))
	require.Eventually(t, func() bool { _, ok := st.Get(execName); return ok }, 200*time.Millisecond, time.Millisecond)
	require.Eventually(t, func() bool { return p.Status().NMPod == "yarn/nm-1" }, time.Second, time.Millisecond)

	// The pod list going on without a change asks nothing more.
	time.Sleep(300 * time.Millisecond)
	assert.Equal(t, int64(2), nm.calls.Load())
}

// TestNMRetriedQuicklyAtANewEndpoint: an NM pod found before its web server
// answers is asked again after 200 ms, 400 ms, ... rather than at the next
// 10 s resync; once the NM answers the quick retries stop.
func TestNMRetriedQuicklyAtANewEndpoint(t *testing.T) {
	root := newFakeRoot(t)
	root.addContainer(t, amName, "11\n")
	nm := newFakeNM(t)
	nm.body.Store(nmBytes(nmEntry(amName, "RUNNING", 1024, 1)))
	nm.mode.Store("500")
	_, st, pods := startWithPods(t, nm)

	pods.set(nmPodAt("nm-0", "127.0.0.1"))
	require.Eventually(t, func() bool { return nm.calls.Load() >= 2 }, 1*time.Second, time.Millisecond, "asked at once, then again soon")
	nm.mode.Store("ok")
	require.Eventually(t, func() bool { return nmFieldsOf(st, amName) }, 2*time.Second, 5*time.Millisecond)
	calls := nm.calls.Load()
	time.Sleep(time.Second)
	assert.Equal(t, calls, nm.calls.Load(), "no retries once the NM answers")
}

// TestNMRetryBackoff: the quick retries double from nmRetryMin and stop
// once they would be as late as the periodic resync.
func TestNMRetryBackoff(t *testing.T) {
	p := New(testConfig("http://nm:8042"), store.New(), nil)
	p.cfg.ResyncInterval = time.Second
	p.lastEndpoint, p.newEndpoint, p.nmOK = "http://nm:8042", true, false
	var got []time.Duration
	for i := 0; i < 8; i++ {
		if p.nmRetry() == nil {
			break
		}
		got = append(got, p.nmBackoff.Delay())
		p.newEndpoint = false
	}
	require.Len(t, got, 3, "%v", got)
	for i, want := range []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond} {
		assert.GreaterOrEqual(t, got[i], want)
		assert.LessOrEqual(t, got[i], want+want/5, "at most 20%% jitter")
	}

	p.newEndpoint, p.nmOK = true, true
	assert.Nil(t, p.nmRetry(), "the NM answered")
	p.newEndpoint, p.nmOK = false, false
	p.nmBackoff.Reset()
	assert.Nil(t, p.nmRetry(), "an NM failing at a known endpoint waits for the periodic resync")
}

// TestNMRetryStopsWithLongResync: with a resync interval above the
// retries' usual reach, they still stop once as late as the resync.
func TestNMRetryStopsWithLongResync(t *testing.T) {
	p := New(testConfig("http://nm:8042"), store.New(), nil)
	p.cfg.ResyncInterval = 2 * time.Minute
	p.lastEndpoint, p.newEndpoint, p.nmOK = "http://nm:8042", true, false
	n := 0
	for ; n < 50 && p.nmRetry() != nil; n++ {
		p.newEndpoint = false
	}
	assert.Less(t, n, 50, "the retries end")
	assert.GreaterOrEqual(t, n, 8, "200ms doubling up to 2 min")
}
