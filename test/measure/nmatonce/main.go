// Command nmatonce measures how soon NodeManager data (user, state,
// requests) reaches the container store after a koordlet restart. koordlet's
// pod list is empty when the YARN informer's first resync runs, so the NM is
// unknown then; this command starts the informer (10 s resync, as in
// production) on a fake cgroup root holding YARN containers, with an NM
// stand-in (httptest) and a pod list that gains the NM pod after a random
// delay, and reports the time from the pod appearing in the list to the NM
// fields in the store: p50, p90 and max over the runs. With -baseline it
// also measures the informer without its pod-list watch (LocateInterval 0:
// the NM found at the next resync only, as before). Needs neither root nor
// cgroups.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/config"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarninformer"
)

const hierarchy = "kubepods/besteffort/hadoop-yarn"

func main() {
	runs := flag.Int("runs", 10, "restarts measured")
	n := flag.Int("containers", 100, "YARN containers on the node")
	resync := flag.Duration("resync", config.DefaultResyncInterval, "the informer's resync interval")
	minDelay := flag.Duration("delay-min", 500*time.Millisecond, "earliest the NM pod appears in the pod list after the informer starts")
	maxDelay := flag.Duration("delay-max", 3*time.Second, "latest it appears")
	baseline := flag.Bool("baseline", false, "also measure without the pod-list watch (the NM found at resyncs only)")
	flag.Parse()
	if err := run(*runs, *n, *resync, *minDelay, *maxDelay, *baseline); err != nil {
		fmt.Fprintln(os.Stderr, "nmatonce:", err)
		os.Exit(1)
	}
}

func run(runs, n int, resync, minDelay, maxDelay time.Duration, baseline bool) error {
	if runs < 1 || n < 1 || maxDelay < minDelay {
		return fmt.Errorf("want -runs ≥ 1, -containers ≥ 1 and -delay-max ≥ -delay-min")
	}
	if err := features.Register(); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "koordlet-yarn-nmatonce-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	system.Conf.CgroupRootDir = filepath.Join(tmp, "cgroup") + "/"
	system.Conf.ProcRootDir = filepath.Join(tmp, "proc") + "/"
	system.UseCgroupsV2.Store(false)
	body, err := fakeNode(tmp, n)
	if err != nil {
		return err
	}
	nm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(body)
	}))
	defer nm.Close()
	_, port, _ := net.SplitHostPort(nm.Listener.Addr().String())

	modes := []struct {
		name   string
		locate time.Duration
	}{{"pod-list watch", yarninformer.DefaultLocateInterval}}
	if baseline {
		modes = append(modes, struct {
			name   string
			locate time.Duration
		}{"resync only", 0})
	}
	for _, m := range modes {
		var lat []time.Duration
		for i := 0; i < runs; i++ {
			delay := minDelay + time.Duration(rand.Int64N(int64(maxDelay-minDelay)+1))
			d, err := once(port, resync, m.locate, delay)
			if err != nil {
				return err
			}
			lat = append(lat, d)
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		q := func(p int) time.Duration { return lat[(len(lat)-1)*p/100].Round(time.Millisecond) }
		fmt.Printf("%-14s (locate every %v, resync %v, %d containers, %d runs): NM pod in koordlet's pod list → NM fields in the store p50 %v, p90 %v, max %v (min %v)\n",
			m.name, m.locate, resync, n, runs, q(50), q(90), lat[len(lat)-1].Round(time.Millisecond), lat[0].Round(time.Millisecond))
	}
	return nil
}

// fakeNode lays out n YARN containers in the cpu and memory controllers of
// a fake cgroup root and returns the NM's body listing them.
func fakeNode(tmp string, n int) ([]byte, error) {
	entries := make([]string, 0, n)
	for i := 0; i < n; i++ {
		id := yarn.ContainerID{Epoch: 1, ClusterTimestamp: 1700000000000, AppID: int64(1 + i/20), AttemptID: 1, Sequence: int64(1 + i%20)}
		for _, ctrl := range []string{"cpu", "memory"} {
			dir := filepath.Join(tmp, "cgroup", ctrl, hierarchy, id.String())
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), nil, 0o644); err != nil {
				return nil, err
			}
		}
		entries = append(entries, fmt.Sprintf(`{"id":%q,"state":"RUNNING","user":"alice","totalMemoryNeededMB":2048,"totalVCoresNeeded":1,"executionType":"GUARANTEED","exitCode":-1000}`, id))
	}
	return []byte(`{"containers":{"container":[` + strings.Join(entries, ",") + `]}}`), nil
}

// once restarts the informer with an empty pod list, adds the NM pod after
// delay and returns the time until every container has its NM fields.
func once(port string, resync, locate, delay time.Duration) (time.Duration, error) {
	cfg := config.NewDefault()
	cfg.CgroupHierarchy = hierarchy
	cfg.NMPort, _ = strconv.Atoi(port)
	cfg.ResyncInterval = resync
	var pods atomic.Pointer[[]*statesinformer.PodMeta]
	lister := func() []*statesinformer.PodMeta {
		if p := pods.Load(); p != nil {
			return *p
		}
		return nil
	}
	st := store.New()
	p := yarninformer.New(cfg, st, lister)
	p.LocateInterval = locate
	p.Setup(nil, nil)

	enriched := make(chan time.Time, 1)
	unsub := st.Subscribe("nmatonce", func(ev store.Event) {
		if ev.Type != store.Updated || ev.Container.User == "" {
			return
		}
		for _, c := range st.Snapshot() {
			if c.User == "" {
				return
			}
		}
		select {
		case enriched <- time.Now():
		default:
		}
	})
	defer unsub()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { p.Start(stop); close(done) }()
	defer func() { close(stop); <-done }()
	for !p.HasSynced() {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(delay)
	nmPod := []*statesinformer.PodMeta{{Pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "yarn", Name: "nm-0", Labels: map[string]string{"app.kubernetes.io/component": "node-manager"}},
		Spec:       corev1.PodSpec{HostNetwork: true},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, HostIP: "127.0.0.1", PodIP: "127.0.0.1"},
	}}}
	appeared := time.Now()
	pods.Store(&nmPod)
	select {
	case at := <-enriched:
		return at.Sub(appeared), nil
	case <-time.After(2*resync + 5*time.Second):
		return 0, fmt.Errorf("no NM fields %v after the NM pod appeared", 2*resync+5*time.Second)
	}
}
