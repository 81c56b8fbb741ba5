// Command discovery measures how fast a new YARN container cgroup reaches
// the container store, for each discovery source in one run: eBPF, inotify
// and polling (the informer's resync). It creates container cgroups below a
// YARN root in the real cgroup v1 cpu controller (on a cgroup v2 host, the
// unified hierarchy: make measure-v2 runs it in the v2 guest), one every few
// milliseconds, and reports mkdir → store "added" latency, p50 and p99. It
// then creates unrelated cgroups (pods) and counts the user-space wake-ups
// they cause on the eBPF path. Needs root.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/test/cgtree"

	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/cgroupwatch"
	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/config"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarninformer"
)

// cgroupBase is where the run makes its cgroups: the v1 cpu controller, or
// the unified hierarchy of a cgroup v2 host.
func cgroupBase() (dir string, v2 bool) {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return "/sys/fs/cgroup", true
	}
	return "/sys/fs/cgroup/cpu", false
}

func main() {
	n := flag.Int("containers", 200, "container cgroups per source")
	pods := flag.Int("pods", 1000, "unrelated cgroups for the wake-up count")
	resync := flag.Duration("resync", time.Second, "resync interval of the polling source")
	flag.Parse()
	if err := run(*n, *pods, *resync); err != nil {
		fmt.Fprintln(os.Stderr, "discovery:", err)
		os.Exit(1)
	}
}

func run(n, pods int, resync time.Duration) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("needs root")
	}
	if err := koordfeatures.DefaultMutableKoordletFeatureGate.Add(features.Specs); err != nil {
		return err
	}
	system.Conf.CgroupRootDir = "/sys/fs/cgroup/"
	system.Conf.ProcRootDir = "/proc/"
	_, v2 := cgroupBase()
	system.UseCgroupsV2.Store(v2)
	for _, src := range []cgroupwatch.Source{cgroupwatch.SourceEBPF, cgroupwatch.SourceInotify, cgroupwatch.SourcePolling} {
		lat, wake, active, err := measure(src, n, pods, resync)
		if err != nil {
			return err
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		fmt.Printf("%-8s (active %-7s) %d containers: mkdir → store added p50 %v, p99 %v, max %v",
			src, active, len(lat), lat[len(lat)/2].Round(time.Microsecond), lat[len(lat)*99/100].Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond))
		if src != cgroupwatch.SourcePolling {
			fmt.Printf("; %d unrelated cgroup creations woke user space %d times", pods, wake)
		}
		fmt.Println()
	}
	return nil
}

func measure(src cgroupwatch.Source, n, pods int, resync time.Duration) ([]time.Duration, int64, cgroupwatch.Source, error) {
	cpuRoot, v2 := cgroupBase()
	top := fmt.Sprintf("koordlet-yarn-discovery-%d-%s", os.Getpid(), src)
	// The run's own top cgroup: one that exists is not ours, and only what
	// this run created is removed.
	var mine cgtree.Tracker
	if err := mine.Mkdir(filepath.Join(cpuRoot, top)); err != nil {
		return nil, 0, "", err
	}
	defer func() { _ = mine.RemoveAll() }()
	root := top + "/hadoop-yarn"
	if err := os.MkdirAll(filepath.Join(cpuRoot, root), 0o755); err != nil {
		return nil, 0, "", err
	}
	if err := os.MkdirAll(filepath.Join(cpuRoot, top, "pods"), 0o755); err != nil {
		return nil, 0, "", err
	}
	st := store.New()
	var mu sync.Mutex
	seen := map[string]time.Time{}
	st.Subscribe("measure", func(ev store.Event) {
		switch ev.Type {
		case store.Added:
			mu.Lock()
			seen[ev.Container.Name] = time.Now()
			mu.Unlock()
		case store.ResyncNeeded: // events were dropped: what the store holds now was seen by now
			now := time.Now()
			mu.Lock()
			for _, c := range st.Snapshot() {
				if _, ok := seen[c.Name]; !ok {
					seen[c.Name] = now
				}
			}
			mu.Unlock()
		}
	})
	h := cgroups.Hierarchy{CgroupRoot: "/sys/fs/cgroup", ProcRoot: "/proc", Dir: root, V2: v2}
	stop := make(chan struct{})
	defer close(stop)
	w := cgroupwatch.New(cgroupwatch.Options{Store: st, Force: src, ResyncInterval: resync,
		Hierarchy: func() (cgroups.Hierarchy, bool) { return h, true }})
	if src == cgroupwatch.SourcePolling {
		cfg := config.NewDefault()
		cfg.NMEndpoint = "http://127.0.0.1:1"
		cfg.NMTimeout = 50 * time.Millisecond
		cfg.CgroupHierarchy = root
		cfg.ResyncInterval = resync
		inf := yarninformer.New(cfg, st, nil)
		inf.Setup(nil, nil)
		go inf.Start(stop)
		for !inf.HasSynced() {
			time.Sleep(10 * time.Millisecond)
		}
	}
	w.Run(stop)
	for w.Active() == "" {
		time.Sleep(5 * time.Millisecond)
	}

	created := map[string]time.Time{}
	for i := 0; i < n; i++ {
		id := yarn.ContainerID{Epoch: 17, ClusterTimestamp: 1700000000000, AppID: 7, AttemptID: 1, Sequence: int64(2 + i)}
		t0 := time.Now()
		if err := os.Mkdir(filepath.Join(cpuRoot, root, id.String()), 0o755); err != nil {
			return nil, 0, "", err
		}
		created[id.String()] = t0
		time.Sleep(5 * time.Millisecond)
	}
	deadline := time.Now().Add(3*resync + 5*time.Second)
	for {
		mu.Lock()
		done := len(seen) >= n
		mu.Unlock()
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	var lat []time.Duration
	for name, t0 := range created {
		if t, ok := seen[name]; ok {
			lat = append(lat, t.Sub(t0))
		}
	}
	mu.Unlock()
	if len(lat) < n {
		return nil, 0, "", fmt.Errorf("%s: only %d of %d containers reached the store", src, len(lat), n)
	}

	before := w.Wakeups()
	for i := 0; i < pods; i++ {
		if err := os.Mkdir(filepath.Join(cpuRoot, top, "pods", fmt.Sprintf("pod%06d", i)), 0o755); err != nil {
			return nil, 0, "", err
		}
	}
	time.Sleep(200 * time.Millisecond)
	return lat, w.Wakeups() - before, w.Active(), nil
}
