// Command ledger measures the batch ledger and the node-side arbitration of
// the real koordlet in the node in a box (intervals: resync 10 s, ledger
// patch 1 s with every change written, memory evict 1 s, cooling 4 s):
//
//  1. container allocated (launched by the NodeManager emulator) → the
//     Node's thirdPartyAllocations hadoop-yarn entry updated (watched on the
//     API server), over -containers containers launched one at a time;
//  2. patches per minute under churn: -churn-rate containers/s (each lives
//     1–3 s) for -churn-duration, counted on the API server (every change of
//     the entry) — coalescing keeps it at one per patch interval at most;
//  3. over-commit → resolved: 4 GiB of a 10 GiB batch-memory origin is
//     requested by a Kubernetes pod, YARN holds 4 × 1 GiB (80%), a fifth
//     1 GiB container takes it to 90% (> 85%): the time until the newest
//     container's processes are gone, and until the entry is back at 4 GiB,
//     over -episodes episodes.
//
// Needs root and cgroup v1.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/signal"
	"sort"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	apiext "github.com/koordinator-sh/koordinator/apis/extension"
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"

	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnledger"
	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

func main() {
	containers := flag.Int("containers", 40, "containers launched one at a time for the allocated → annotation latency")
	rate := flag.Int("churn-rate", 10, "containers started per second during the churn phase")
	churn := flag.Duration("churn-duration", time.Minute, "length of the churn phase")
	episodes := flag.Int("episodes", 5, "over-commit episodes")
	flag.Parse()
	if err := run(*containers, *rate, *churn, *episodes); err != nil {
		fmt.Fprintln(os.Stderr, "measure-ledger:", err)
		os.Exit(1)
	}
}

// entryLog records every change of the hadoop-yarn entry seen by a watch.
type entryLog struct {
	mu     sync.Mutex
	events []entryEvent
	cond   *sync.Cond
}

type entryEvent struct {
	at    time.Time
	value yarnledger.Batch
}

func (l *entryLog) add(at time.Time, v yarnledger.Batch) {
	l.mu.Lock()
	if n := len(l.events); n == 0 || l.events[n-1].value != v {
		l.events = append(l.events, entryEvent{at, v})
	}
	l.mu.Unlock()
	l.cond.Broadcast()
}

// waitFor returns the time of the first change at or after since whose value
// satisfies ok.
func (l *entryLog) waitFor(since time.Time, timeout time.Duration, ok func(yarnledger.Batch) bool) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	go func() { time.Sleep(timeout); l.cond.Broadcast() }()
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		for _, e := range l.events {
			if !e.at.Before(since) && ok(e.value) {
				return e.at, nil
			}
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("no matching entry within %v", timeout)
		}
		l.cond.Wait()
	}
}

func (l *entryLog) count(from, to time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.events {
		if !e.at.Before(from) && e.at.Before(to) {
			n++
		}
	}
	return n
}

func watchEntry(ctx context.Context, box *nodebox.Box, log *entryLog) error {
	w, err := box.Kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", nodebox.NodeName).String()})
	if err != nil {
		return err
	}
	go func() {
		for ev := range w.ResultChan() {
			node, ok := ev.Object.(*corev1.Node)
			if !ok || ev.Type == watch.Error {
				continue
			}
			if v, ok, err := yarnledger.Entry(node.Annotations[yarnledger.AnnotationKey]); err == nil && ok {
				log.add(time.Now(), v)
			}
		}
	}()
	return nil
}

func run(containers, rate int, churn time.Duration, episodes int) error {
	top, err := nodebox.Prepare(os.Stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	box, err := nodebox.Start(ctx, nodebox.Options{Top: top, LockWait: 30 * time.Minute,
		Pods: []nodebox.PodSpec{{Namespace: "default", Name: "spark-driver",
			Labels:   map[string]string{"koordinator.sh/qosClass": "BE", "koordinator.sh/priority-class": "koord-batch"},
			Extended: corev1.ResourceList{apiext.BatchCPU: *resource.NewQuantity(2000, resource.DecimalSI), apiext.BatchMemory: resource.MustParse("4Gi")}}},
		// The box's 1 s resync is put back to koordlet's default; the
		// ledger writes every change once a second (the patch policy's
		// fleet defaults, 5 s / 10% / 60 s, are measured by
		// measure-fleet).
		KoordletArgs: []string{"--feature-gates=YARNBatchLedger=true,YARNAllocatableEvict=true,MemoryAllocatableEvict=true",
			"--yarn-resync-interval=10s", "--yarn-ledger-patch-interval=1s", "--yarn-ledger-max-age=1s"}})
	if err != nil {
		return err
	}
	defer box.Stop()
	// Interrupted: the box removes what it made before the command exits.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		box.Stop()
		os.Exit(130)
	}()
	log := &entryLog{}
	log.cond = sync.NewCond(&log.mu)
	if err := watchEntry(ctx, box, log); err != nil {
		return err
	}
	time.Sleep(2 * time.Second)

	// 1. allocated → annotation.
	app := int64(1)
	var lat []time.Duration
	var sum int64
	var launched []string
	for i := 1; i <= containers; i++ {
		mb := int64(100 + i)
		sum += mb << 20
		want := sum
		start := time.Now()
		id, err := box.NM.Launch(nmemu.Spec{AppID: app, Attempt: 1, Sequence: int64(i), User: "bench", MemoryMB: mb, VCores: 1, Script: "exec sleep 3600"})
		if err != nil {
			return err
		}
		launched = append(launched, id)
		at, err := log.waitFor(start, 30*time.Second, func(v yarnledger.Batch) bool { return v.MemoryBytes >= want })
		if err != nil {
			return fmt.Errorf("container %d: %w", i, err)
		}
		lat = append(lat, at.Sub(start))
		time.Sleep(1200 * time.Millisecond) // past the patch interval: each change is its own patch
	}
	fmt.Printf("allocated → annotation (%d containers, launched at once; NM emulator's 200 ms launch script included): %s\n", containers, summary(lat))
	for _, id := range launched {
		box.NM.Exit(id)
	}
	time.Sleep(12 * time.Second)

	// 2. churn.
	app++
	from := time.Now()
	stop := from.Add(churn)
	var wg sync.WaitGroup
	seq := int64(0)
	tick := time.NewTicker(time.Second / time.Duration(rate))
	for now := range tick.C {
		if now.After(stop) {
			break
		}
		seq++
		s := seq
		wg.Add(1)
		go func() {
			defer wg.Done()
			life := 1 + rand.Float64()*2
			_, _ = box.NM.Launch(nmemu.Spec{AppID: app, Attempt: 1, Sequence: s, User: "bench", MemoryMB: 128, VCores: 1,
				Script: fmt.Sprintf("exec sleep %.2f", life)})
		}()
	}
	tick.Stop()
	to := time.Now()
	wg.Wait()
	patches := log.count(from, to)
	fmt.Printf("churn %d containers/s for %v (%d containers): %d changes of the entry on the API server = %.1f patches/minute\n",
		rate, churn, seq, patches, float64(patches)/to.Sub(from).Minutes())
	time.Sleep(15 * time.Second)

	// 3. over-commit → resolved.
	if err := setOrigin(ctx, box, "10Gi"); err != nil {
		return err
	}
	if err := box.UpdateNodeSLO(ctx, func(s *slov1alpha1.NodeSLOSpec) {
		s.ResourceUsedThresholdWithBE = &slov1alpha1.ResourceThresholdStrategy{Enable: ptr.To(true),
			MemoryAllocatableEvictThresholdPercent: ptr.To[int64](85), MemoryAllocatableEvictLowerPercent: ptr.To[int64](80),
			AllocatableEvictPriorityThreshold: ptr.To[int32](apiext.PriorityBatchValueMax)}
	}); err != nil {
		return err
	}
	var killed, settled []time.Duration
	for e := 0; e < episodes; e++ {
		app++
		epStart := time.Now()
		var ids []string
		for s := int64(1); s <= 4; s++ {
			id, err := box.NM.Launch(nmemu.Spec{AppID: app, Attempt: 1, Sequence: s, User: "bench", MemoryMB: 1024, VCores: 1, Script: "exec sleep 3600"})
			if err != nil {
				return err
			}
			ids = append(ids, id)
			time.Sleep(300 * time.Millisecond)
		}
		if _, err := log.waitFor(epStart, 30*time.Second, func(v yarnledger.Batch) bool { return v.MemoryBytes == 4<<30 }); err != nil {
			return fmt.Errorf("episode %d: 4 GiB not recorded: %w", e+1, err)
		}
		time.Sleep(6 * time.Second) // past the cooling of the previous episode
		start := time.Now()
		newest, err := box.NM.Launch(nmemu.Spec{AppID: app, Attempt: 1, Sequence: 5, User: "bench", MemoryMB: 1024, VCores: 1, Script: "exec sleep 3600"})
		if err != nil {
			return err
		}
		select {
		case <-box.NM.Exited(newest):
			killed = append(killed, time.Since(start))
		case <-time.After(60 * time.Second):
			return fmt.Errorf("episode %d: the newest container was not evicted", e+1)
		}
		at, err := log.waitFor(start, 30*time.Second, func(v yarnledger.Batch) bool { return v.MemoryBytes == 4<<30 })
		if err != nil {
			return fmt.Errorf("episode %d: the entry did not come back: %w", e+1, err)
		}
		settled = append(settled, at.Sub(start))
		for _, id := range ids {
			if pid := box.NM.Pid(id); pid == 0 {
				return fmt.Errorf("episode %d: %s was evicted too", e+1, id)
			}
			box.NM.Exit(id)
		}
		if _, err := log.waitFor(time.Now(), 30*time.Second, func(v yarnledger.Batch) bool { return v.MemoryBytes == 0 }); err != nil {
			return err
		}
	}
	fmt.Printf("over-commit → newest container's processes gone (%d episodes): %s\n", episodes, summary(killed))
	fmt.Printf("over-commit → entry back at 4 GiB (%d episodes): %s\n", episodes, summary(settled))
	return nil
}

func setOrigin(ctx context.Context, box *nodebox.Box, mem string) error {
	a := map[string]string{}
	if err := slov1alpha1.SetOriginExtendedAllocatableRes(a, corev1.ResourceList{
		apiext.BatchCPU: *resource.NewQuantity(16000, resource.DecimalSI), apiext.BatchMemory: resource.MustParse(mem)}); err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": a}})
	if err != nil {
		return err
	}
	_, err = box.Kube.CoreV1().Nodes().Patch(ctx, nodebox.NodeName, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

func summary(ds []time.Duration) string {
	if len(ds) == 0 {
		return "no samples"
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	q := func(p float64) time.Duration { return s[int(p*float64(len(s)-1)+0.5)] }
	return fmt.Sprintf("p50 %v, p99 %v, min %v, max %v (n=%d)", q(0.5).Round(time.Millisecond), q(0.99).Round(time.Millisecond),
		s[0].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond), len(s))
}
