package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	apiext "github.com/koordinator-sh/koordinator/apis/extension"
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"

	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/kill"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
	"github.com/koordlet-yarn/koordlet-yarn/test/rmemu"
	"github.com/koordlet-yarn/koordlet-yarn/test/v2guest"
	"github.com/koordlet-yarn/koordlet-yarn/test/v2guest/guestconf"
)

// The relief episodes (YARNMemoryRelief's rungs against the kill alone),
// each run with the kill alone ("kill": the event trigger, no relief) and
// with relief ("relief": the same and YARNMemoryRelief, band reliefBand):
//
//   - held: an executor growing 14 points of node memory at a point a
//     second past a threshold 10 points above today's usage (the throttle
//     from 4 points): on cgroup v2 the throttle holds it below the
//     threshold; on v1 (a soft limit, no throttle) it is killed as without
//     relief;
//   - fast: the same growth at 5 points a second: faster than the 1-second
//     check can hold (the kill stays the last rung);
//   - rm: the same executor growing at a quarter point a second, slowly
//     enough that the ResourceManager can release before the threshold:
//     with relief (and YARNRMPreemption, YARNRMNodeResourceSync,
//     YARNBatchLedger, for this episode only) koordlet asks the RM for a
//     capacity below YARN's allocation and the RM emulator's scheduler
//     (test/rmemu, Hadoop's over-commit kill order) preempts the newest
//     executor, the grower: PREEMPTED to its AM, no kill by koordlet; with
//     the kill alone it is killed at the threshold (a window twice as long:
//     it takes 40 s to get there);
//   - cache: an executor writing 1.5× the headroom to the threshold as
//     file data (page cache): koordlet's node usage (MemTotal −
//     MemAvailable) counts it as available, so no episode and no kill.
//     Needs a disk: in a guest, its scratch disk (the runner's -scratch);
//     skipped in a guest without one (its files are memory).
//
// Per run: the containers killed, node memory's peak against the
// threshold, the band's entry → the throttle's first memory.high (v2),
// how long the grower was held below the threshold, the audit's record of
// the episode (which rung relieved it), and whether the grower completed
// its allocation once the threshold was raised (the pressure gone), and,
// with -ls-level, the co-location harness's LS service's worst 5-s p99
// before the threshold is set and over the episode (lsload.go).
const reliefBand = 6

// reliefWindow is how long an episode's grower is watched.
const reliefWindow = 75 * time.Second

// reliefResult is one relief episode run.
type reliefResult struct {
	episode, mode string
	killed        int
	// preempted: the RM emulator's scheduler killed the grower (rm).
	preempted bool
	// peak and limit: node memory's highest use and the threshold, bytes.
	peak, limit int64
	crossed     bool
	// toThrottle: the band's entry → the first memory.high (0: none).
	toThrottle time.Duration
	// held: the grower alive below the threshold after the band's entry.
	held time.Duration
	// outcome is the audit's relief record's (which rung relieved it).
	outcome   string
	completed bool
	// ended: the grower's end within the window, as its NM reports it
	// (state, exit code, diagnostics; "" while it runs).
	ended string
	// lsBefore is the LS service's worst 5-s p99 before the threshold is
	// set (the steady executors running), lsDuring its worst over the
	// episode (the band's entry, or the threshold's setting when the band
	// is never entered, to the grower's kill, completion or the window's
	// end); lsRequests and lsErrors are the episode's (0: no LS load).
	lsBefore, lsDuring   time.Duration
	lsRequests, lsErrors int
}

// reliefEpisodes lists the episodes' names.
var reliefEpisodes = []string{"held", "fast", "rm", "cache"}

// rmArgs are the RM rung's gates and flags, for the rm episode in both
// modes (with the kill alone nothing asks the RM: the capacity stays far
// above YARN's allocation): the batch ledger and the RM sync with a short
// interval, the RM emulator rm, a 3-s over-commit timeout and a 5-s grace
// (koordlet's RMDelay: about 10 s).
func rmArgs(base []string, rm string) []string {
	out := make([]string, 0, len(base)+8)
	for _, a := range base {
		if g, ok := strings.CutPrefix(a, "--feature-gates="); ok {
			a = "--feature-gates=" + g + ",YARNBatchLedger=true,YARNRMNodeResourceSync=true,YARNRMPreemption=true"
		}
		if !strings.HasPrefix(a, "--yarn-rm-endpoints=") {
			out = append(out, a)
		}
	}
	return append(out, "--yarn-ledger-patch-interval=300ms", "--yarn-ledger-max-age=300ms", "--yarn-rm-sync-interval=500ms",
		"--yarn-rm-endpoints="+rm, "--yarn-rm-user=yarn", "--yarn-rm-timeout=2s",
		"--yarn-rm-preemption-timeout=3s", "--yarn-rm-preemption-grace=5s")
}

// runReliefPass runs the relief episodes named in only (comma-separated),
// runs times each, with the kill alone and with relief; base are the
// koordlet's arguments of the event mode; ls, when not nil, loads the LS
// service through each episode.
func runReliefPass(ctx context.Context, box *nodebox.Box, rm *rmemu.Server, base []string, only string, runs int, appBase *int64, ls *lsLoad) error {
	modes := []struct {
		name string
		args []string
	}{
		{"kill", base},
		{"relief", reliefArgs(base)},
	}
	var results []reliefResult
	if strings.Contains(","+only+",", ",rm,") {
		if err := batchOrigin(ctx, box); err != nil {
			return err
		}
	}
	for _, m := range modes {
		var running []string
		restart := func(args []string) error {
			if slices.Equal(args, running) {
				return nil
			}
			box.StopKoordlet()
			box.SetKoordletArgs(args)
			if err := box.StartKoordlet(); err != nil {
				return err
			}
			running = args
			time.Sleep(5 * time.Second) // koordlet's loops run
			return nil
		}
		for _, ep := range reliefEpisodes {
			if !strings.Contains(","+only+",", ","+ep+",") {
				continue
			}
			if ep == "cache" && v2guest.InGuest() && os.Getenv(guestconf.ScratchEnv) == "" {
				fmt.Printf("%-8s %-13s not run: this guest has no scratch disk (its files are memory; the guest runner's -scratch gives one)\n", m.name, ep)
				continue
			}
			args := m.args
			if ep == "rm" {
				args = rmArgs(m.args, rm.URL)
			}
			if err := restart(args); err != nil {
				return err
			}
			for r := 0; r < runs; r++ {
				res, err := runRelief(ctx, box, rm, ep, *appBase, m.name == "relief", ls)
				*appBase += 10
				if err != nil {
					return fmt.Errorf("%s/%s run %d: %w", m.name, ep, r+1, err)
				}
				res.mode = m.name
				results = append(results, res)
				fmt.Printf("%-8s %-13s %s\n", m.name, ep, res)
			}
		}
	}
	summarizeRelief(results, ls)
	return nil
}

// reliefArgs are base with YARNMemoryRelief and the band.
func reliefArgs(base []string) []string {
	out := make([]string, 0, len(base)+1)
	for _, a := range base {
		if g, ok := strings.CutPrefix(a, "--feature-gates="); ok {
			a = "--feature-gates=" + g + ",YARNMemoryRelief=true"
		}
		out = append(out, a)
	}
	return append(out, "--yarn-memory-throttle-band-percent="+strconv.Itoa(reliefBand))
}

func (r reliefResult) String() string {
	s := fmt.Sprintf("killed %d; node memory peak %d MiB (threshold %d MiB, crossed %t)", r.killed, r.peak>>20, r.limit>>20, r.crossed)
	if r.toThrottle > 0 {
		s += fmt.Sprintf("; band → throttle %v", r.toThrottle.Round(time.Millisecond))
	}
	s += fmt.Sprintf("; held %v", r.held.Round(100*time.Millisecond))
	if r.outcome != "" {
		s += "; episode relieved by the " + r.outcome
	}
	if r.preempted {
		s += "; the grower preempted by the RM"
	}
	s += fmt.Sprintf("; grower completed after the release %t", r.completed)
	if r.ended != "" {
		s += "; it ended: " + r.ended
	}
	if r.lsRequests > 0 {
		s += fmt.Sprintf("; LS p99 (worst 5-s slice) %v before, %v during the episode (%d requests, %d errors)",
			r.lsBefore.Round(100*time.Microsecond), r.lsDuring.Round(100*time.Microsecond), r.lsRequests, r.lsErrors)
	}
	return s
}

// runRelief runs one relief episode (reliefOn: koordlet has the gate, the
// episode's record is awaited; ls, when not nil, loads the LS service
// before and through the episode).
func runRelief(ctx context.Context, box *nodebox.Box, rm *rmemu.Server, ep string, appBase int64, reliefOn bool, ls *lsLoad) (reliefResult, error) {
	res := reliefResult{episode: ep}
	var ids []string
	launch := func(seq int64, mb int64, am bool, script string) (string, error) {
		id, err := box.NM.Launch(nmemu.Spec{AppID: appBase, Attempt: 1, Sequence: seq, User: "bench", MemoryMB: max(mb, 64) * 2,
			VCores: 1, AM: &am, Script: script})
		if err == nil {
			ids = append(ids, id)
		}
		return id, err
	}
	var scratch string
	defer func() {
		for _, id := range ids {
			box.NM.Exit(id)
		}
		if scratch != "" {
			_ = os.RemoveAll(scratch)
		}
		_ = box.UpdateNodeSLO(ctx, func(s *slov1alpha1.NodeSLOSpec) { s.ResourceUsedThresholdWithBE = nil })
		time.Sleep(6 * time.Second) // past the cooling
	}()
	if ep == "rm" {
		defer attachRMScheduler(box, rm)()
	}
	if _, err := launch(1, 16, true, kerneltest.HelperScript("alloc=16")); err != nil {
		return res, err
	}
	if _, err := launch(2, 200, false, kerneltest.HelperScript("alloc=200")); err != nil {
		return res, err
	}
	time.Sleep(5 * time.Second) // held, collected
	if ls != nil {
		before, err := ls.measure(ctx, 2*lsSliceLength)
		if err != nil {
			return res, err
		}
		res.lsBefore, _, _, _ = worstP99(before, time.Time{}, time.Now())
	}
	total, used, err := nodebox.MemInfo()
	if err != nil {
		return res, err
	}
	threshold := used*100/total + 10
	res.limit = total * threshold / 100
	start := total * (threshold - reliefBand) / 100
	if err := box.UpdateNodeSLO(ctx, func(s *slov1alpha1.NodeSLOSpec) {
		s.ResourceUsedThresholdWithBE = &slov1alpha1.ResourceThresholdStrategy{Enable: ptr.To(true),
			MemoryEvictThresholdPercent: ptr.To(threshold), MemoryEvictLowerPercent: ptr.To(threshold - 1)}
	}); err != nil {
		return res, err
	}
	time.Sleep(2 * time.Second) // koordlet sees the NodeSLO
	began := time.Now()

	point := total / 100
	growMiB := point * 14 >> 20
	var grower, cacheFile string
	var cacheBytes int64
	switch ep {
	case "held", "fast", "rm":
		rate := max(point>>20, 16)
		switch ep {
		case "fast":
			rate *= 5
		case "rm":
			rate = max(rate/4, 4)
		}
		grower, err = launch(3, growMiB, false, kerneltest.HelperScript(fmt.Sprintf("grow=%d@%d", growMiB, rate)))
	case "cache":
		// File data, 1.5× the headroom, written in the scratch directory
		// of this run (removed after it), the writer then idle.
		// (A guest's scratch disk where it has one: its /tmp is memory.)
		scratch, err = os.MkdirTemp(os.Getenv(guestconf.ScratchEnv), "evictscenarios-cache-")
		if err != nil {
			return res, err
		}
		mib := (res.limit - used) * 3 / 2 >> 20
		growMiB = 0
		cacheFile, cacheBytes = filepath.Join(scratch, "data"), mib<<20
		grower, err = launch(3, 64, false, fmt.Sprintf("dd if=/dev/zero of=%s bs=1M count=%d status=none && exec sleep 3600", cacheFile, mib))
	default:
		return res, fmt.Errorf("unknown relief episode %q", ep)
	}
	if err != nil {
		return res, err
	}
	var stopLS func() ([]lsSlice, error)
	if ls != nil {
		stopLS = ls.background(ctx)
		defer func() {
			if stopLS != nil {
				_, _ = stopLS()
			}
		}()
	}
	cg := newContainerFiles(box)
	high := filepath.Join(box.CgroupRoot(), box.Hierarchy(), "memory.high")
	var inBand, throttled, killedAt, lastAsked time.Time
	// Until the grower completes or is killed, or for reliefWindow: the
	// same window with the kill alone and with relief (a grower the
	// throttle holds is held all of it; under the v2 guest's emulated CPU
	// the grower takes two to three times its nominal pace to reach the
	// threshold).
	window := reliefWindow
	if ep == "rm" {
		window *= 2
	}
	for deadline := time.Now().Add(window); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		now := time.Now()
		_, u, err := nodebox.MemInfo()
		if err != nil {
			return res, err
		}
		res.peak = max(res.peak, u)
		if u >= res.limit {
			res.crossed = true
		}
		if inBand.IsZero() && u >= start {
			inBand = now
		}
		if box.Layout().Unified && throttled.IsZero() {
			if b, err := os.ReadFile(high); err == nil && strings.TrimSpace(string(b)) != "max" {
				throttled = now
			}
		}
		select {
		case <-box.NM.Exited(grower):
			killedAt = now
			if c, ok := box.NM.Get(grower); ok {
				res.ended = fmt.Sprintf("%s, exit code %d %s", c.State, c.ExitCode, strings.TrimSpace(c.Diagnostics))
			}
		default:
		}
		if !killedAt.IsZero() {
			break
		}
		if ep == "cache" {
			if now.Sub(lastAsked) >= 500*time.Millisecond {
				lastAsked = now
				if cacheWriterDone(box, grower, cacheFile, cacheBytes) {
					break // dd done
				}
			}
			continue
		}
		if cg.memory(grower) >= (growMiB-8)<<20 {
			break // grew all it wanted
		}
	}
	switch {
	case inBand.IsZero():
	case !killedAt.IsZero():
		res.held = killedAt.Sub(inBand)
	default:
		res.held = time.Since(inBand)
	}
	if !throttled.IsZero() && !inBand.IsZero() {
		res.toThrottle = max(throttled.Sub(inBand), time.Millisecond)
	}
	if stopLS != nil {
		end := time.Now()
		slices, err := stopLS()
		stopLS = nil
		if err != nil {
			return res, err
		}
		from := inBand
		if from.IsZero() {
			from = began
		}
		var ok bool
		res.lsDuring, res.lsRequests, res.lsErrors, ok = worstP99(slices, from, end)
		if !ok {
			return res, fmt.Errorf("no LS slice overlaps the episode (%v to %v)", from, end)
		}
	}

	// The pressure gone: the threshold far away; a held grower completes,
	// the episode ends (its record in the audit).
	if err := box.UpdateNodeSLO(ctx, func(s *slov1alpha1.NodeSLOSpec) {
		s.ResourceUsedThresholdWithBE.MemoryEvictThresholdPercent = ptr.To(int64(95))
		s.ResourceUsedThresholdWithBE.MemoryEvictLowerPercent = ptr.To(int64(93))
	}); err != nil {
		return res, err
	}
	if killedAt.IsZero() && ep != "cache" {
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			if cg.memory(grower) >= (growMiB-8)<<20 {
				res.completed = true
				break
			}
		}
	}
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		ev, err := box.Evictions()
		if err != nil {
			continue
		}
		res.killed = 0
		res.outcome = ""
		for _, r := range ev.Records {
			if r.Time.Before(began) {
				continue
			}
			if r.IsEviction() {
				if r.Outcome == "succeeded" {
					res.killed++
				}
				continue
			}
			if r.Kind == kill.AuditRelief {
				res.outcome = r.Outcome
			}
		}
		if res.outcome != "" || inBand.IsZero() || !reliefOn {
			break
		}
	}
	if ep == "cache" {
		res.completed = cacheWriterDone(box, grower, cacheFile, cacheBytes)
	}
	for _, p := range rm.Preemptions() {
		res.preempted = res.preempted || p.ID == grower
	}
	return res, nil
}

// rmNode is the node's resource as its NodeManager registers it with the
// RM emulator: far above what the episodes allocate.
var rmNode = yarn.NodeResource{MemoryMB: 256 << 10, VCores: 64}

// attachRMScheduler registers the node with the RM emulator afresh (no
// capacity or over-commit deadline left by an earlier run) and gives its
// scheduler the NodeManager emulator's containers, which it preempts as
// the NM does when the RM asks; the returned func detaches it and
// registers the node afresh again, so that nothing is preempted outside
// the rm episode.
func attachRMScheduler(box *nodebox.Box, rm *rmemu.Server) (detach func()) {
	rm.RegisterNode(nodebox.NMNodeID, rmNode)
	rm.SetNodeContainers(nodebox.NMNodeID, rmemu.NodeContainers{
		Running: func() []rmemu.Running {
			var out []rmemu.Running
			for _, a := range box.NM.Allocations() {
				out = append(out, rmemu.Running{ID: a.ID, MemoryMB: a.MemoryMB, VCores: a.VCores, AM: a.AM,
					Opportunistic: a.ExecutionType == "OPPORTUNISTIC", Created: a.Launched})
			}
			return out
		},
		Preempt: box.NM.KillByRM,
	})
	return func() {
		rm.ClearNodeContainers(nodebox.NMNodeID)
		rm.RegisterNode(nodebox.NMNodeID, rmNode)
	}
}

// batchOrigin gives the node a batch capacity (koord-manager's origin
// batch allocatable) far above what the episodes allocate, so that the RM
// sync's own capacity never over-commits YARN.
func batchOrigin(ctx context.Context, box *nodebox.Box) error {
	a := map[string]string{}
	if err := slov1alpha1.SetOriginExtendedAllocatableRes(a, corev1.ResourceList{
		apiext.BatchCPU: *resource.NewQuantity(64000, resource.DecimalSI), apiext.BatchMemory: resource.MustParse("256Gi")}); err != nil {
		return err
	}
	return box.SetNodeAnnotations(ctx, a)
}

// cacheWriterDone reports whether the cache episode's writer is done: its
// file has all its bytes, and its container has processes and none of
// them is the dd (before the dd starts, under a guest's emulated CPU, the
// container holds its shell alone).
func cacheWriterDone(box *nodebox.Box, id, file string, size int64) bool {
	if st, err := os.Stat(file); err != nil || st.Size() < size {
		return false
	}
	resp, err := box.Containers()
	if err != nil {
		return false
	}
	for _, c := range resp.Containers {
		if c.Name != id {
			continue
		}
		for _, pid := range c.Pids {
			b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
			if err == nil && strings.TrimSpace(string(b)) == "dd" {
				return false
			}
		}
		return len(c.Pids) > 0
	}
	return false
}

// summarizeRelief prints, per episode, the kills with the kill alone and
// with relief (the kills avoided), and relief's figures.
func summarizeRelief(results []reliefResult, ls *lsLoad) {
	if ls != nil {
		fmt.Printf("LS service at %.0f%% of the node's CPUs (%d req/s) through every episode; its p99 is the worst 5-s slice's\n", ls.level*100, ls.rate)
	}
	fmt.Println()
	for _, ep := range reliefEpisodes {
		var kill, relief []reliefResult
		preempted := 0
		for _, r := range results {
			if r.episode != ep {
				continue
			}
			if r.mode == "kill" {
				kill = append(kill, r)
			} else {
				relief = append(relief, r)
			}
			if r.preempted {
				preempted++
			}
		}
		if len(kill)+len(relief) == 0 {
			continue
		}
		sum := func(rs []reliefResult) (killed, crossed, completed int) {
			for _, r := range rs {
				killed += r.killed
				if r.crossed {
					crossed++
				}
				if r.completed {
					completed++
				}
			}
			return
		}
		k1, c1, d1 := sum(kill)
		k2, c2, d2 := sum(relief)
		var toThrottle []time.Duration
		by := map[string]int{}
		for _, r := range relief {
			if r.toThrottle > 0 {
				toThrottle = append(toThrottle, r.toThrottle)
			}
			if r.outcome != "" {
				by[r.outcome]++
			}
		}
		line := fmt.Sprintf("%s: kill alone %d runs, %d killed, threshold crossed in %d, grower completed in %d; relief %d runs, %d killed, crossed in %d, completed in %d: kills avoided %d",
			ep, len(kill), k1, c1, d1, len(relief), k2, c2, d2, k1-k2)
		if len(toThrottle) > 0 {
			line += fmt.Sprintf("; band → throttle %v–%v", pct(toThrottle, 0), pct(toThrottle, 100))
		}
		if len(by) > 0 {
			line += fmt.Sprintf("; episodes relieved by %v", by)
		}
		if preempted > 0 {
			line += fmt.Sprintf("; growers preempted by the RM %d", preempted)
		}
		for _, m := range []struct {
			name string
			rs   []reliefResult
		}{{"kill alone", kill}, {"relief", relief}} {
			if r := lsRange(m.rs); r != "" {
				line += fmt.Sprintf("; LS p99 during ÷ before, %s: %s", m.name, r)
			}
		}
		fmt.Println(line)
	}
}

// lsRange is the range of the runs' LS p99 during the episode ÷ before it
// ("" without LS load).
func lsRange(rs []reliefResult) string {
	lo, hi, n := 0.0, 0.0, 0
	for _, r := range rs {
		if r.lsRequests == 0 || r.lsBefore <= 0 {
			continue
		}
		v := float64(r.lsDuring) / float64(r.lsBefore)
		if n == 0 || v < lo {
			lo = v
		}
		if n == 0 || v > hi {
			hi = v
		}
		n++
	}
	switch {
	case n == 0:
		return ""
	case n == 1:
		return fmt.Sprintf("%.2f×", lo)
	}
	return fmt.Sprintf("%.2f–%.2f×", lo, hi)
}
