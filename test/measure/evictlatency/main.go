// Command evictlatency measures the YARN-aware BE memory eviction of the
// real koordlet in the node in a box: over repeated runs, an AM and an
// executor hold memory, a ballast process outside YARN brings node usage to
// 32 MiB below a whole percent, which becomes memoryEvictLowerPercent, the
// threshold is one point above, and a new executor fills its heap (1 GiB at
// 128 MiB/s), pushing node memory across the threshold; it samples
// /proc/meminfo every 10 ms and reports the time from the crossing to the
// memory being released (usage back below the threshold), released ÷ needed
// (from koordlet's koordlet_yarn_evicted_resource_total and
// koordlet_yarn_evict_needed_resource_total), and how many ApplicationMasters
// were killed. koordlet runs with its default intervals (collect 1 s,
// memory evict 1 s, cooling 4 s). Needs root and cgroup v1.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"time"

	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"

	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

func main() {
	kerneltest.RunHelperIfRequested()
	runs := flag.Int("runs", 5, "number of pressure episodes")
	flag.Parse()
	if err := run(*runs); err != nil {
		fmt.Fprintln(os.Stderr, "evictlatency:", err)
		os.Exit(1)
	}
}

func run(runs int) error {
	top, err := nodebox.Prepare(os.Stderr)
	if err != nil {
		return err
	}
	ctx := context.Background()
	box, err := nodebox.Start(ctx, nodebox.Options{Top: top,
		KoordletArgs: []string{"--feature-gates=BEMemoryEvict=true,YARNBEMemoryEvict=true,YARNNodeManagerGuard=true"}})
	if err != nil {
		return err
	}
	defer box.Stop()

	var latencies []time.Duration
	var ratios []float64
	amKills := 0
	seq := int64(1)
	for r := 0; r < runs; r++ {
		app := int64(100 + r)
		launch := func(mb int) (string, error) {
			id, err := box.NM.Launch(nmemu.Spec{AppID: app, Attempt: 1, Sequence: seq, User: "bench", MemoryMB: int64(mb), VCores: 1,
				Script: kerneltest.HelperScript(fmt.Sprintf("alloc=%d", mb))})
			seq++
			return id, err
		}
		seq = 1
		am, err := launch(32)
		if err != nil {
			return err
		}
		if _, err := launch(200); err != nil {
			return err
		}
		time.Sleep(3 * time.Second) // usage settles and is collected

		total, used, err := nodebox.MemInfo()
		if err != nil {
			return err
		}
		lower := used*100/total + 1
		ballastMiB := (lower*total/100 - 32<<20 - used) >> 20
		ballast := exec.Command(os.Args[0])
		ballast.Env = append(os.Environ(), fmt.Sprintf("KOORDLET_YARN_TEST_HELPER=alloc=%d", ballastMiB))
		if err := ballast.Start(); err != nil {
			return err
		}
		stopBallast := func() { _ = ballast.Process.Kill(); _ = ballast.Wait() }
		time.Sleep(2 * time.Second)
		threshold := lower + 1
		if err := box.UpdateNodeSLO(ctx, func(s *slov1alpha1.NodeSLOSpec) {
			s.ResourceUsedThresholdWithBE = &slov1alpha1.ResourceThresholdStrategy{Enable: ptr.To(true),
				MemoryEvictThresholdPercent: ptr.To(threshold), MemoryEvictLowerPercent: ptr.To(lower)}
		}); err != nil {
			stopBallast()
			return err
		}
		time.Sleep(2 * time.Second)
		released0, needed0 := counters(box)

		newest, err := box.NM.Launch(nmemu.Spec{AppID: app, Attempt: 1, Sequence: seq, User: "bench", MemoryMB: 2048, VCores: 1,
			Script: kerneltest.HelperScript("grow=1024@128")})
		seq++
		if err != nil {
			return err
		}
		limit := total * threshold / 100
		var crossed, released time.Time
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			_, u, err := nodebox.MemInfo()
			if err != nil {
				return err
			}
			now := time.Now()
			if crossed.IsZero() && u >= limit {
				crossed = now
			}
			if !crossed.IsZero() && u < limit {
				released = now
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if crossed.IsZero() || released.IsZero() {
			stopBallast()
			return fmt.Errorf("run %d: crossing or release not observed", r+1)
		}
		<-box.NM.Exited(newest)
		time.Sleep(1500 * time.Millisecond) // counters of the cycle are exported
		released1, needed1 := counters(box)
		ratio := 0.0
		if needed1 > needed0 {
			ratio = (released1 - released0) / (needed1 - needed0)
		}
		if c, _ := box.NM.Get(am); c.State != "RUNNING" {
			amKills++
		}
		lat := released.Sub(crossed)
		latencies = append(latencies, lat)
		ratios = append(ratios, ratio)
		fmt.Printf("run %d: threshold %d%% (lower %d%%), crossing → released %v, released ÷ needed %.2f\n", r+1, threshold, lower, lat.Round(time.Millisecond), ratio)

		// End the episode: every container exits, the threshold is lifted,
		// and the cooling time passes.
		for s := int64(1); s < seq; s++ {
			box.NM.Exit(nmemu.Spec{AppID: app, Attempt: 1, Sequence: s}.ID(1700000000000))
		}
		stopBallast()
		if err := box.UpdateNodeSLO(ctx, func(s *slov1alpha1.NodeSLOSpec) { s.ResourceUsedThresholdWithBE = nil }); err != nil {
			return err
		}
		time.Sleep(5 * time.Second)
	}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	maxRatio := 0.0
	for _, r := range ratios {
		if r > maxRatio {
			maxRatio = r
		}
	}
	fmt.Printf("\n%d runs: crossing → released p50 %v, max %v; released ÷ needed max %.2f; AM kills %d\n",
		runs, latencies[len(latencies)/2].Round(time.Millisecond), latencies[len(latencies)-1].Round(time.Millisecond), maxRatio, amKills)
	return nil
}

// counters returns koordlet's released and needed memory totals.
func counters(box *nodebox.Box) (released, needed float64) {
	fams, err := box.MetricFamilies()
	if err != nil {
		return 0, 0
	}
	return nodebox.CounterSum(fams, "koordlet_yarn_evicted_resource_total", "resource", "memory"),
		nodebox.CounterSum(fams, "koordlet_yarn_evict_needed_resource_total", "resource", "memory")
}
