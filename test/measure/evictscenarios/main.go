// Command evictscenarios runs pressure episodes against the real koordlet in
// the node in a box (root; cgroup v1, or v2 in make measure-v2's guest,
// where the episodes with a ballast outside YARN do not run) and reports, per episode, the YARN
// containers killed against the fewest that cover koordlet's need, the
// CPU-seconds the victims had spent, ApplicationMaster kills, and the time
// from the crossing of the memory evict threshold to the first eviction
// (the killer's journal appears on the victim's cgroup, just before its
// first signal; else the victim's exit) and to
// the memory being released (node usage back below the threshold). It runs
// every episode with the event trigger (YARNMemoryEvictTrigger) and with the
// periodic check alone. Episodes:
//
//   - growing: a growing executor among three idle ones;
//   - opportunistic: an idle OPPORTUNISTIC executor (too small to cover the
//     need) beside a growing GUARANTEED one;
//   - large-small: one large idle executor and four small ones, the pressure
//     from a process outside YARN;
//   - policy: a transcode-queue application's executor beside a Spark one,
//     under a policy that puts root.transcode first (the RM emulator serves
//     both applications), the pressure from outside YARN;
//   - the relief episodes (relief.go, -relief): held, fast, rm, cache, with
//     the kill alone and with YARNMemoryRelief;
//   - am-only: an ApplicationMaster that is the only YARN candidate (not run
//     by default: the box always has a near-empty BE pod, "batch", which
//     the AM rule takes first, and its eviction never completes without a
//     kubelet, so the AM is never reached; the AM-only case is covered by
//     the yarnevict tests).
//
// The node's usage before each episode sets the lower percent two points
// above it and the threshold three; the pressure source stops 200 MiB past
// the threshold, so one victim of the sizes here covers the need.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/test/colocation"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
	"github.com/koordlet-yarn/koordlet-yarn/test/rmemu"
)

const clusterTS = 1700000000000

// journalXattr is the killer's journal on a container's cgroup
// (plugins/yarnevict), set just before the first signal.
const journalXattr = "trusted.koordlet-yarn.evict"

// errNotObserved: the crossing, eviction or release did not happen in time.
var errNotObserved = errors.New("not observed")

const policy = `rules:
- {name: transcode-first, match: {queue: root.transcode}, priority: 5100}
- {name: spark, match: {applicationTypes: [SPARK]}, priority: 5900}
`

// member is one container of an episode.
type member struct {
	app, seq      int64
	mb            int64 // allocated at start (idle)
	grow          bool  // the pressure: grows past the threshold
	opportunistic bool
	am            bool
}

type episode struct {
	name    string
	members []member
	// ballast: the pressure comes from a process outside YARN.
	ballast bool
	// apps the RM knows: app → queue, type.
	apps map[int64][2]string
}

func episodes() []episode {
	return []episode{
		{name: "growing", members: []member{{app: 1, seq: 1, mb: 16, am: true}, {app: 1, seq: 2, mb: 300}, {app: 1, seq: 3, mb: 300}, {app: 1, seq: 4, mb: 300}, {app: 1, seq: 5, grow: true}}},
		{name: "opportunistic", members: []member{{app: 1, seq: 1, mb: 16, am: true}, {app: 1, seq: 2, mb: 150, opportunistic: true}, {app: 1, seq: 3, grow: true}}},
		{name: "large-small", ballast: true, members: []member{{app: 1, seq: 1, mb: 16, am: true}, {app: 1, seq: 2, mb: 900},
			{app: 1, seq: 3, mb: 150}, {app: 1, seq: 4, mb: 150}, {app: 1, seq: 5, mb: 150}, {app: 1, seq: 6, mb: 150}}},
		{name: "policy", ballast: true, apps: map[int64][2]string{1: {"root.transcode", "MAPREDUCE"}, 2: {"root.etl", "SPARK"}},
			members: []member{{app: 1, seq: 1, mb: 16, am: true}, {app: 1, seq: 2, mb: 700}, {app: 2, seq: 1, mb: 16, am: true}, {app: 2, seq: 2, mb: 700}}},
		{name: "am-only", ballast: true, members: []member{{app: 1, seq: 1, mb: 700, am: true}}},
	}
}

func main() {
	kerneltest.RunHelperIfRequested()
	colocation.RunHelperIfRequested()
	runs := flag.Int("runs", 2, "runs of each episode in each mode")
	only := flag.String("episodes", "growing,opportunistic,large-small,policy", "comma-separated episode names (am-only: see the package doc)")
	modes := flag.String("modes", "event,periodic", "event (YARNMemoryEvictTrigger) and/or periodic")
	relief := flag.String("relief", "held,fast,rm,cache", "comma-separated relief episodes (YARNMemoryRelief against the kill alone; see relief.go; \"\" none)")
	lsLevel := flag.Float64("ls-level", 0.3, "the LS service's load through the relief episodes, a fraction of the node's CPUs (the co-location harness's service and load generator; 0: none)")
	flag.Parse()
	if err := run(*runs, *only, strings.Split(*modes, ","), *relief, *lsLevel); err != nil {
		fmt.Fprintln(os.Stderr, "evictscenarios:", err)
		os.Exit(1)
	}
}

// result is one episode run.
type result struct {
	episode, mode     string
	killed, minimum   int
	amKills           int // AMs killed while another candidate existed
	lostCPU           float64
	toEviction, toRel time.Duration
	need              float64
}

func run(runs int, only string, modes []string, relief string, lsLevel float64) error {
	top, err := nodebox.Prepare(os.Stderr)
	if err != nil {
		return err
	}
	rm, err := rmemu.Start()
	if err != nil {
		return err
	}
	defer rm.Close()
	dir, err := os.MkdirTemp("", "evictscenarios-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	policyFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policyFile, []byte(policy), 0o644); err != nil {
		return err
	}
	args := func(mode string) []string {
		gates := "BEMemoryEvict=true,YARNBEMemoryEvict=true,YARNNodeManagerGuard=true,YARNQoSPolicy=true"
		if mode == "event" {
			gates += ",YARNMemoryEvictTrigger=true"
		}
		return []string{"--feature-gates=" + gates, "--yarn-rm-endpoints=" + rm.URL, "--yarn-qos-policy-file=" + policyFile}
	}
	ctx := context.Background()
	opts := nodebox.Options{Top: top, KoordletArgs: args(modes[0]), LockWait: 30 * time.Minute}
	withLS := relief != "" && lsLevel > 0
	if withLS {
		// The co-location harness's LS pod (and the kubelet's CPU shares
		// it measures under), loaded through the relief episodes.
		co := colocation.BoxOptions()
		opts.KubeletCPUShares, opts.Pods = co.KubeletCPUShares, co.Pods
	}
	box, err := nodebox.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer box.Stop()
	var ls *lsLoad
	if withLS {
		co := colocation.DefaultOptions()
		co.Log = os.Stderr
		service, err := colocation.StartLS(ctx, box, co)
		if err != nil {
			return fmt.Errorf("the LS service: %w", err)
		}
		defer service.Close()
		ls = &lsLoad{ls: service, rate: service.RateFor(lsLevel), level: lsLevel}
	}

	var results []result
	skipped := 0
	appBase := int64(100)
	for i, mode := range modes {
		if i > 0 {
			box.StopKoordlet()
			box.SetKoordletArgs(args(mode))
			if err := box.StartKoordlet(); err != nil {
				return err
			}
		}
		time.Sleep(5 * time.Second) // koordlet's loops run
		for _, ep := range episodes() {
			if only != "" && !strings.Contains(","+only+",", ","+ep.name+",") {
				continue
			}
			for r := 0; r < runs; r++ {
				res, err := runEpisode(ctx, box, rm, ep, appBase)
				appBase += 10
				if errors.Is(err, errNotObserved) {
					// Other work on the machine moved node memory.
					fmt.Printf("%-8s %-13s skipped: %v\n", mode, ep.name, err)
					skipped++
					continue
				}
				if err != nil {
					return fmt.Errorf("%s/%s run %d: %w", mode, ep.name, r+1, err)
				}
				res.mode = mode
				results = append(results, res)
				fmt.Printf("%-8s %-13s killed %d (minimum %d), AM kills %d, lost %.1f CPU-s, need %.0f MiB, crossing → eviction %v, → released %v\n",
					mode, ep.name, res.killed, res.minimum, res.amKills, res.lostCPU, res.need/(1<<20),
					res.toEviction.Round(time.Millisecond), res.toRel.Round(time.Millisecond))
			}
		}
	}
	summarize(results, modes)
	if skipped > 0 {
		fmt.Printf("%d runs skipped (node memory moved by other work before the crossing)\n", skipped)
	}
	if relief != "" {
		fmt.Println()
		return runReliefPass(ctx, box, rm, args("event"), relief, runs, &appBase, ls)
	}
	return nil
}

func summarize(results []result, modes []string) {
	fmt.Println()
	for _, mode := range modes {
		var ev, rel []time.Duration
		minimal, total, amKills := 0, 0, 0
		lost := 0.0
		for _, r := range results {
			if r.mode != mode {
				continue
			}
			total++
			if r.killed == r.minimum {
				minimal++
			}
			amKills += r.amKills
			lost += r.lostCPU
			ev = append(ev, r.toEviction)
			rel = append(rel, r.toRel)
		}
		if total == 0 {
			continue
		}
		fmt.Printf("%s: %d episodes, killed = minimum in %d; AM kills with another candidate %d; lost %.1f CPU-s; crossing → eviction p50 %v p99 %v max %v; crossing → released p50 %v p99 %v max %v\n",
			mode, total, minimal, amKills, lost, pct(ev, 50), pct(ev, 99), pct(ev, 100), pct(rel, 50), pct(rel, 99), pct(rel, 100))
	}
}

// pct is the p-th percentile (nearest rank).
func pct(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (p*len(s)+99)/100 - 1
	i = max(0, min(i, len(s)-1))
	return s[i].Round(time.Millisecond)
}

// sample is what the tool last read of a container.
type sample struct {
	mem int64
	cpu float64
}

func runEpisode(ctx context.Context, box *nodebox.Box, rm *rmemu.Server, ep episode, appBase int64) (result, error) {
	res := result{episode: ep.name}
	for app, qa := range ep.apps {
		rm.AddApp(rmemu.App{ID: yarn.ContainerID{ClusterTimestamp: clusterTS, AppID: appBase + app, AttemptID: 1, Sequence: 1}.ApplicationID(),
			User: "bench", Queue: qa[0], ApplicationType: qa[1]})
	}
	ids := map[string]member{}
	var all []string
	launch := func(m member, script string, mb int64) error {
		am := m.am
		id, err := box.NM.Launch(nmemu.Spec{AppID: appBase + m.app, Attempt: 1, Sequence: m.seq, User: "bench", MemoryMB: max(mb, 64) * 2,
			VCores: 1, Opportunistic: m.opportunistic, AM: &am, Script: script})
		if err != nil {
			return err
		}
		ids[id] = m
		all = append(all, id)
		return nil
	}
	cleanup := func() {
		for _, id := range all {
			box.NM.Exit(id)
		}
		_ = box.UpdateNodeSLO(ctx, func(s *slov1alpha1.NodeSLOSpec) { s.ResourceUsedThresholdWithBE = nil })
		time.Sleep(6 * time.Second) // past the cooling
	}
	defer cleanup()
	for _, m := range ep.members {
		if m.grow {
			continue
		}
		if err := launch(m, kerneltest.HelperScript(fmt.Sprintf("alloc=%d", m.mb)), m.mb); err != nil {
			return res, err
		}
	}
	// The idle members hold what they allocate before the node's usage sets
	// the thresholds (a slow machine, such as the TCG guest of make
	// measure-v2, takes seconds to touch a few hundred MiB), then usage
	// settles, is collected and the RM's data comes.
	cg := newContainerFiles(box)
	holdBy := time.Now().Add(60 * time.Second)
	for id, m := range ids {
		for cg.memory(id) < (m.mb-4)<<20 && time.Now().Before(holdBy) {
			time.Sleep(50 * time.Millisecond)
		}
	}
	time.Sleep(4 * time.Second)
	total, used, err := nodebox.MemInfo()
	if err != nil {
		return res, err
	}
	lower := used*100/total + 2
	threshold := lower + 1
	if err := box.UpdateNodeSLO(ctx, func(s *slov1alpha1.NodeSLOSpec) {
		s.ResourceUsedThresholdWithBE = &slov1alpha1.ResourceThresholdStrategy{Enable: ptr.To(true),
			MemoryEvictThresholdPercent: ptr.To(threshold), MemoryEvictLowerPercent: ptr.To(lower)}
	}); err != nil {
		return res, err
	}
	time.Sleep(2 * time.Second)
	_, needed0 := counters(box)
	limit := total * threshold / 100
	grow := (limit-used+200<<20)>>20 + 1
	spec := fmt.Sprintf("grow=%d@256", grow)
	var ballast *exec.Cmd
	for _, m := range ep.members {
		if m.grow {
			if err := launch(m, kerneltest.HelperScript(spec), grow); err != nil {
				return res, err
			}
		}
	}
	if ep.ballast && box.Layout().Unified {
		return res, fmt.Errorf("episode %s: the ballast joins the kubepods cgroup itself, which cgroup v2 forbids (no processes in an inner cgroup)", ep.name)
	}
	if ep.ballast {
		// Held at a gate until it is in the kubepods memory cgroup (a
		// pod's process that is no BE candidate: growth inside kubepods,
		// where the event trigger watches), so all it allocates is charged
		// there.
		self, err := os.Executable()
		if err != nil {
			return res, err
		}
		ballast = exec.Command("sh", "-c", fmt.Sprintf("read gate; exec env KOORDLET_YARN_TEST_HELPER=%s %q", spec, self))
		gate, err := ballast.StdinPipe()
		if err != nil {
			return res, err
		}
		if err := ballast.Start(); err != nil {
			return res, err
		}
		defer func() { _ = ballast.Process.Kill(); _ = ballast.Wait() }()
		procs := filepath.Join(box.CgroupRoot(), "memory", "kubepods", "cgroup.procs")
		if err := os.WriteFile(procs, []byte(strconv.Itoa(ballast.Process.Pid)), 0o644); err != nil {
			return res, fmt.Errorf("move the ballast into kubepods: %w", err)
		}
		if _, err := gate.Write([]byte("go\n")); err != nil {
			return res, err
		}
	}

	last := map[string]sample{}
	dead := map[string]time.Time{}
	var crossed, started, firstKill, released time.Time
	xbuf := make([]byte, 256)
	deadline := time.Now().Add(40 * time.Second)
	var settleUntil time.Time
	for time.Now().Before(deadline) {
		now := time.Now()
		_, u, err := nodebox.MemInfo()
		if err != nil {
			return res, err
		}
		if crossed.IsZero() && u >= limit {
			crossed = now
		}
		for _, id := range all {
			if _, gone := dead[id]; gone {
				continue
			}
			// The killer journals on the container's cgroup just before
			// its first signal: that is when the eviction starts.
			if started.IsZero() {
				if n, err := unix.Getxattr(cg.dir("cpu", id), journalXattr, xbuf); err == nil && n > 0 {
					started = now
				}
			}
			select {
			case <-box.NM.Exited(id):
				dead[id] = now
				if firstKill.IsZero() {
					firstKill = now
				}
				continue
			default:
			}
			cur := sample{mem: cg.memory(id), cpu: cg.cpu(id)}
			// Usage before the first eviction (a victim's memory drains
			// before its exit is seen): the largest seen until then.
			if firstKill.IsZero() {
				cur.mem = max(cur.mem, last[id].mem)
			} else {
				cur.mem = last[id].mem
			}
			cur.cpu = max(cur.cpu, last[id].cpu)
			last[id] = cur
		}
		if !crossed.IsZero() && released.IsZero() && u < limit {
			released = now
			settleUntil = now.Add(6 * time.Second) // any further kill of the episode
		}
		if !settleUntil.IsZero() && now.After(settleUntil) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if crossed.IsZero() || firstKill.IsZero() || released.IsZero() {
		if os.Getenv("SCENARIO_DEBUG") != "" {
			if resp, err := box.Containers(); err == nil {
				for _, c := range resp.Containers {
					fmt.Printf("  debug: %s am=%v pids=%v accounting=%s cgroups=%+v qos=%+v\n", c.Name, c.IsAM, c.Pids, c.MemoryAccounting(), c.Cgroups, resp.QoS[c.Name])
				}
			}
		}
		return res, fmt.Errorf("crossing %v, eviction %v, release %v: %w", !crossed.IsZero(), !firstKill.IsZero(), !released.IsZero(), errNotObserved)
	}
	time.Sleep(1500 * time.Millisecond)
	if os.Getenv("SCENARIO_DEBUG") != "" {
		if ev, err := box.Evictions(); err == nil {
			for _, r := range ev.Records {
				fmt.Printf("  debug: %s evicted %s (%s, released %d, at %s; crossing at %s): %s %s\n", r.Reason, r.Container, r.Outcome, r.Released,
					r.Time.Format("15:04:05.000"), crossed.Format("15:04:05.000"), r.Why, r.Error)
			}
		}
		for id, at := range dead {
			fmt.Printf("  debug: %s exited at %s\n", id, at.Format("15:04:05.000"))
		}
	}
	_, needed1 := counters(box)
	res.need = needed1 - needed0
	if started.IsZero() || started.After(firstKill) {
		started = firstKill // the journal was missed between two samples
	}
	res.toEviction = started.Sub(crossed)
	res.toRel = released.Sub(crossed)

	// The minimum: the fewest candidates (non-AM ones while any exists)
	// whose usage at the first eviction covers the need.
	var usages []int64
	others := false
	for _, m := range ids {
		others = others || !m.am
	}
	for id, m := range ids {
		if m.am && others {
			continue
		}
		usages = append(usages, last[id].mem)
	}
	sort.Slice(usages, func(i, j int) bool { return usages[i] > usages[j] })
	sum := int64(0)
	res.minimum = len(usages)
	for i, v := range usages {
		sum += v
		if float64(sum) >= res.need {
			res.minimum = i + 1
			break
		}
	}
	for id := range dead {
		res.killed++
		res.lostCPU += last[id].cpu
		if ids[id].am && others {
			res.amKills++
		}
	}
	return res, nil
}

// containerFiles reads a YARN container's usage from its cgroups: the v1
// controllers, or its one unified directory.
type containerFiles struct {
	box   *nodebox.Box
	v2    bool
	usage *cgroups.UsageReader
}

func newContainerFiles(box *nodebox.Box) containerFiles {
	v2 := box.Layout().Unified
	return containerFiles{box: box, v2: v2, usage: cgroups.NewUsageReader(box.CgroupRoot(), v2).NoKeep()}
}

func (c containerFiles) dir(ctrl, id string) string {
	if c.v2 {
		ctrl = ""
	}
	return c.box.NM.CgroupDir(ctrl, id)
}

// memory is the cgroup's memory usage in bytes.
func (c containerFiles) memory(id string) int64 {
	if c.v2 {
		return readInt(c.dir("", id), "memory.current")
	}
	return readInt(c.dir("memory", id), "memory.usage_in_bytes")
}

// cpu is the cgroup's CPU time in seconds (0 once it is gone).
func (c containerFiles) cpu(id string) float64 {
	ns, err := c.usage.CPUUsage(filepath.Join(c.box.Hierarchy(), id))
	if err != nil {
		return 0
	}
	return float64(ns) / 1e9
}

func readInt(dir, file string) int64 {
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return v
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
