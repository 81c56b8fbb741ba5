// Package jobrun runs make measure-jobs' days (the promise measured with
// real jobs): each configuration on a fresh node in a box with Hadoop's own
// ResourceManager and NodeManager (the real-YARN peer), koordlet and
// koord-manager's slo-controller; the LS service follows the day's load
// while the job stream runs on YARN. The pure parts (the day, the stream,
// the outcomes and targets) are package jobs; the command is
// test/measure/jobs, the smoke test test/e2e's TestJobsSmoke.
package jobrun

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/koordlet-yarn/koordlet-yarn/test/colocation"
	"github.com/koordlet-yarn/koordlet-yarn/test/jobs"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
	"github.com/koordlet-yarn/koordlet-yarn/test/realyarn"
	"github.com/koordlet-yarn/koordlet-yarn/test/yarnpeer"
)

// colocationConfig is koord-manager's colocation-config: Koordinator's
// CPU reclaim threshold, the memory one at memoryPercent, quick reports and
// updates so that the batch allocatable follows LS within a phase.
func colocationConfig(memoryPercent int64) string {
	return fmt.Sprintf(`{"enable":true,"metricAggregateDurationSeconds":30,"metricReportIntervalSeconds":2,
"cpuReclaimThresholdPercent":65,"memoryReclaimThresholdPercent":%d,"degradeTimeMinutes":15,
"updateTimeThresholdSeconds":5,"resourceDiffThreshold":0.01}`, memoryPercent)
}

// memoryOnly is Hadoop's default resource calculator: the CapacityScheduler
// allocates memory and not vcores. Koordinator's batch CPU is enforced on
// the node (suppress), not by vcores: YARN's vcores from batch-cpu are
// whole cores (milli ÷ 1000), at most one on this 2-core machine, too few
// for an AM and an executor.
const memoryOnly = "yarn.scheduler.capacity.resource-calculator=org.apache.hadoop.yarn.util.resource.DefaultResourceCalculator"

// oneQueue gives the default queue the whole cluster (the peer's has 40%
// beside two others): every job of the stream runs there. Beside it,
// heldQueue has nothing: the jobs are submitted into it before the day (so
// that their spark-submit clients, a gateway's work in production, do not
// run on the node during the day) and each is moved to the default queue
// at its arrival.
var oneQueue = []string{"yarn.scheduler.capacity.root.queues=default," + heldQueue,
	"yarn.scheduler.capacity.root.default.capacity=100",
	"yarn.scheduler.capacity.root." + heldQueue + ".capacity=0",
	"yarn.scheduler.capacity.root." + heldQueue + ".maximum-capacity=0",
	// A queue's application limit is its share of the cluster's (0 here).
	"yarn.scheduler.capacity.root." + heldQueue + ".maximum-applications=1000"}

// heldQueue holds the day's jobs until they arrive.
const heldQueue = "held"

// clusterMax keeps the RM's largest allocation at its configured maximum
// (8192 MB, 4 vcores) as on a cluster of many nodes, whose largest node
// holds that: the RM takes the configured maximum until the scheduling
// wait after its start has passed (ClusterNodeTracker), then the largest
// node's capacity — this node's alone here, which the LS peak takes to 0
// vcores and a few hundred MB, when the RM would refuse every submission.
// The wait is a day; work-preserving recovery, which would hold the
// scheduler for the same wait, is off (the RM is not restarted here).
var clusterMax = []string{"yarn.resourcemanager.work-preserving-recovery.scheduling-wait-ms=86400000",
	"yarn.resourcemanager.work-preserving-recovery.enabled=false"}

// Runner runs days: every configuration on a fresh box, the same phases
// and job stream.
type Runner struct {
	// Top is the repository's top; Out the directory of the timelines
	// (SVG) and outcomes (JSON), "" for none; Hadoop the peer's version
	// ("": 3.5.0).
	Top, Out, Hadoop string
	// Budget is the node memory (bytes) above what is used once the day's
	// processes are up, where the BE memory evict threshold goes;
	// Overcommit the points of node memory koord-manager's memory reclaim
	// threshold is above it (the batch allocatable's over-reporting).
	Budget, Overcommit int64
	// LSMemoryMiB is what the LS pod holds beside its service at 100% of
	// the node's load (its caches and connections): each phase it holds
	// its level's share, so that the LS peak takes memory back from what
	// the night left batch.
	LSMemoryMiB int
	Phases      []jobs.Phase
	Stream      []jobs.Job
	Log         io.Writer
	// Drain bounds the wait for the jobs still running after the day (0:
	// the day's length); those still running then have failed.
	Drain time.Duration
	// APIServer, when set, is the control plane the boxes share
	// (nodebox.Options.APIServer).
	APIServer *nodebox.APIServer
	// rates are the LS request rates of the phases, fixed by the first day
	// that calibrated the service, so that every configuration sees the
	// same load.
	rates []int
}

// All runs each configuration repeats times (repeat by repeat, the
// configurations in order) and returns the outcomes.
func (r *Runner) All(ctx context.Context, cs []jobs.Config, repeats int) (map[jobs.Config][]jobs.Outcome, error) {
	out := map[jobs.Config][]jobs.Outcome{}
	for rep := 1; rep <= repeats; rep++ {
		for _, c := range cs {
			began := time.Now()
			name := fmt.Sprintf("%s-%d", c.Key(), rep)
			o, tl, err := r.Day(ctx, c, name)
			if err != nil {
				return out, fmt.Errorf("%s, repeat %d: %w", c, rep, err)
			}
			out[c] = append(out[c], o)
			if err := r.write(name, fmt.Sprintf("%s, repeat %d", c, rep), c, o, tl); err != nil {
				return out, err
			}
			fmt.Fprintf(r.Log, "jobs: %s, repeat %d: %d jobs (%d failed), %d containers launched, %d killed, %d preempted, %d with the NM pod; utilisation %.0f%%; %v\n",
				c, rep, o.Jobs, o.FailedJobs, o.Launched, o.Killed, o.Preempted, o.WithNMPod, 100*o.Utilisation, time.Since(began).Round(time.Second))
		}
	}
	return out, nil
}

// write writes a day's outcome and timeline into Out as name.json and
// its plot as name.svg.
func (r *Runner) write(name, title string, c jobs.Config, o jobs.Outcome, tl Timeline) error {
	if r.Out == "" {
		return nil
	}
	path := filepath.Join(r.Out, name)
	if err := writeJSON(path+".json", struct {
		Config   string
		Outcome  jobs.Outcome
		Timeline Timeline
	}{c.String(), o, tl}); err != nil {
		return err
	}
	return tl.Plot(title, path+".svg")
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// jobResult is one job's end.
type jobResult struct {
	job jobs.Job
	res yarnpeer.SparkResult
	err error
	// output is the tail of the spark-submit client's output.
	output string
}

// Day runs one configuration's day on a fresh box and returns its outcome
// and timeline; the logs of koordlet, koord-manager and YARN's daemons are
// kept in Out as name-logs (with Out set).
func (r *Runner) Day(ctx context.Context, c jobs.Config, name string) (jobs.Outcome, Timeline, error) {
	var out jobs.Outcome
	var tl Timeline
	opts := colocation.BoxOptions()
	opts.Top, opts.ExternalNM, opts.LockWait = r.Top, true, 30*time.Minute
	opts.ExtraCRDs = nodebox.KoordManagerCRDs
	opts.NodeSLO = c.NodeSLO()
	opts.APIServer = r.APIServer
	box, err := nodebox.Start(ctx, opts)
	if err != nil {
		return out, tl, fmt.Errorf("the node in a box: %w", err)
	}
	defer box.Stop()
	// The NodeManager in a JVM of its own, in the NodeManager pod, as
	// deployed (upstream's eviction of the pod restarts it alone).
	peer, err := realyarn.Start(ctx, box, r.Top, yarnpeer.Options{Hadoop: r.Hadoop, Memory: true, SplitNM: true, KeepLogs: true,
		Conf: append(append([]string{memoryOnly}, clusterMax...), oneQueue...), OffNode: true})
	if err != nil {
		return out, tl, fmt.Errorf("the real YARN: %w", err)
	}
	defer peer.Stop()
	defer r.keepLogs(box, name) // before the peer's stop removes its directory
	box.SetKoordletArgs(c.KoordletArgs(peer.RMWeb))
	if err := box.StartKoordletFor(peer.NMWeb); err != nil {
		return out, tl, err
	}
	ls, err := colocation.StartLS(ctx, box, colocation.DefaultOptions())
	if err != nil {
		return out, tl, fmt.Errorf("the LS service: %w", err)
	}
	defer ls.Close()
	if r.rates == nil {
		for _, p := range r.Phases {
			r.rates = append(r.rates, ls.RateFor(p.Level))
		}
	}
	threshold, err := r.memoryThreshold(ctx, box)
	if err != nil {
		return out, tl, err
	}
	// koord-manager last: the batch allocatable it computes (and koordlet
	// pushes to the RM) starts from the day's memory.
	km, err := box.StartKoordManager(ctx, colocationConfig(threshold+r.Overcommit))
	if err != nil {
		return out, tl, err
	}
	defer km.Stop()
	if c.Batch() {
		// The day starts on a running node: YARN's capacity is the batch
		// allocatable koord-manager computed and koordlet pushed.
		if err := waitCapacity(ctx, box, 2*time.Minute); err != nil {
			return out, tl, err
		}
	}

	var held map[string]heldJob
	if c.Batch() {
		held = r.submitHeld(ctx, peer)
	}

	began := time.Now()
	watch := watchNMPod(ctx, box, peer, began, r.Log)
	defer watch.stop()
	results := make(chan jobResult, len(r.Stream))
	jobsCtx, cancelJobs := context.WithCancel(ctx)
	defer cancelJobs()
	var wg sync.WaitGroup
	if c.Batch() {
		for _, j := range r.Stream {
			wg.Add(1)
			go func() {
				defer wg.Done()
				select {
				case <-jobsCtx.Done():
					results <- jobResult{job: j, err: jobsCtx.Err()}
					return
				case <-time.After(time.Until(began.Add(j.At))):
				}
				results <- arrive(jobsCtx, peer, j, held[j.Name])
			}()
		}
	}
	koordletCPU := 0.0
	for i, p := range r.Phases {
		rate := 0
		if c.LS() {
			rate = r.rates[i]
		}
		if c.LS() {
			if err := ls.HoldMemory(int(p.Level * float64(r.LSMemoryMiB))); err != nil {
				return out, tl, fmt.Errorf("phase %d: %w", p.Index, err)
			}
		}
		nm0 := nmPodCPU(box)
		res, err := ls.Phase(ctx, rate, p.Duration)
		if err != nil {
			return out, tl, fmt.Errorf("phase %d: %w", p.Index, err)
		}
		// YARN's CPU: its hierarchy's and the NodeManager pod's (the NM's
		// JVM and the containers' processes where no one gave them a
		// cpuacct cgroup: cpuacct is mounted apart from cpu here, and the
		// NodeManager's handler makes cpu and memory ones).
		res.BatchCPUSeconds += (nmPodCPU(box) - nm0).Seconds()
		out.PhaseP99 = append(out.PhaseP99, res.LS.P99)
		out.Utilisation += res.NodeUtilisation * p.Duration.Seconds()
		out.BatchCPU += time.Duration(res.BatchCPUSeconds * float64(time.Second))
		koordletCPU += res.KoordletCPUSeconds
		capacity := rmCapacity(ctx, peer.RMWeb)
		secs := p.Duration.Seconds()
		tl.Phases = append(tl.Phases, Point{At: time.Since(began), Level: p.Level, Rate: rate, P99: res.LS.P99,
			Node: res.NodeUtilisation, Batch: res.BatchCPUSeconds / secs, LS: res.LSCPUSeconds / secs, Koordlet: res.KoordletCPUSeconds / secs,
			Capacity: capacity})
		fmt.Fprintf(r.Log, "%s, phase %d (%02.0fh), LS %.0f%% = %d req/s: p99 %v; cores: node %.2f, LS %.2f, batch %.2f, koordlet %.2f, load generator %.2f; YARN capacity %s\n",
			c, p.Index, p.Hour, 100*p.Level, rate, res.LS.P99.Round(10*time.Microsecond), res.NodeUtilisation*float64(runtime.NumCPU()),
			res.LSCPUSeconds/secs, res.BatchCPUSeconds/secs, res.KoordletCPUSeconds/secs, res.LoadgenCPUSeconds/secs, capacity)
	}
	day := r.Phases[len(r.Phases)-1].Start + r.Phases[len(r.Phases)-1].Duration
	out.Utilisation /= day.Seconds()
	out.Koordlet = time.Duration(koordletCPU * float64(time.Second))
	// The jobs still running finish, within Drain; those that do not have
	// failed (their clients are killed).
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	drain := r.Drain
	if drain <= 0 {
		drain = day
	}
	select {
	case <-done:
	case <-time.After(drain):
		fmt.Fprintf(r.Log, "%s: jobs still running %v after the day: failed\n", c, drain)
		cancelJobs()
		<-done
	}
	close(results)
	watch.stop()
	if err := watch.err(); err != nil {
		return out, tl, err
	}
	out.WithNMPod = watch.containers
	for _, at := range watch.times {
		tl.Marks = append(tl.Marks, Mark{At: at, Kind: "NM pod evicted"})
	}
	out.JobTimes = map[string]time.Duration{}
	for res := range results {
		out.Jobs++
		// The RM's final status says the job's end; an error reading its
		// event log afterwards is logged, not a failure of the job.
		if res.res.FinalStatus != "SUCCEEDED" {
			out.FailedJobs++
			fmt.Fprintf(r.Log, "%s: job %s failed: %v %s %s; its client's last lines:\n%s\n%s", c, res.job.Name, res.err, res.res.State, res.res.FinalStatus,
				res.output, containerLogs(filepath.Join(box.Dir(), "yarn", "nm-logs"), res.res.AppID))
		} else {
			out.JobTimes[res.job.Name] = res.res.Elapsed
			if res.err != nil {
				fmt.Fprintf(r.Log, "%s: job %s succeeded; its events: %v\n", c, res.job.Name, res.err)
			}
		}
		if ev := res.res.Events; ev != nil {
			for _, f := range ev.Failures {
				if f.ExitCausedByApp == nil || *f.ExitCausedByApp {
					out.FailedAttempts++
				}
			}
			for _, x := range ev.Removed {
				if strings.Contains(strings.ToLower(x.Reason), "preempt") {
					out.Preempted++ // (Spark's event has no time: no mark)
				}
			}
		}
	}
	launched, err := launches(filepath.Join(box.Dir(), "container-executor.log"))
	if err != nil {
		return out, tl, err
	}
	out.Launched = launched
	ev, err := box.Evictions()
	if err != nil {
		return out, tl, fmt.Errorf("koordlet's evictions: %w", err)
	}
	// An eviction that released nothing is not counted as one (it is a
	// failure of koordlet's, logged).
	for _, rec := range ev.Records {
		if rec.Outcome == "succeeded" {
			out.Killed++
			tl.Marks = append(tl.Marks, Mark{At: rec.Time.Sub(began), Kind: "killed"})
		} else {
			fmt.Fprintf(r.Log, "%s: eviction of %s %s: %s\n", c, rec.Container, rec.Outcome, rec.Error)
		}
	}
	if ev.Total > len(ev.Records) {
		return out, tl, fmt.Errorf("koordlet recorded %d evictions and serves the last %d: read its audit file", ev.Total, len(ev.Records))
	}
	return out, tl, nil
}

// memoryThreshold puts the BE memory evict threshold at the budget above
// the node's memory in use now (everything of the day is up): a node whose
// memory beyond today's use is the budget; the lower percent 2 below it
// (Koordinator's default gap). It returns the threshold.
func (r *Runner) memoryThreshold(ctx context.Context, box *nodebox.Box) (int64, error) {
	total, used, err := nodebox.MemInfo()
	if err != nil {
		return 0, err
	}
	threshold := (used + r.Budget) * 100 / total
	if threshold > 95 {
		threshold = 95
	}
	fmt.Fprintf(r.Log, "node memory %d MiB of %d in use; BE memory evict threshold %d%% (%d MiB), lower %d%%; koord-manager's memory reclaim threshold %d%%\n",
		used>>20, total>>20, threshold, threshold*total/100>>20, threshold-2, threshold+r.Overcommit)
	return threshold, box.UpdateNodeSLO(ctx, func(s *slov1alpha1.NodeSLOSpec) {
		if s.ResourceUsedThresholdWithBE == nil {
			s.ResourceUsedThresholdWithBE = &slov1alpha1.ResourceThresholdStrategy{}
		}
		s.ResourceUsedThresholdWithBE.Enable = ptr.To(true)
		s.ResourceUsedThresholdWithBE.MemoryEvictThresholdPercent = ptr.To(threshold)
		s.ResourceUsedThresholdWithBE.MemoryEvictLowerPercent = ptr.To(threshold - 2)
	})
}

// containerLogs returns the last lines of the stderr of the first
// containers of application app (the NodeManager keeps them: KeepLogs).
func containerLogs(logDir, app string) string {
	if app == "" {
		return ""
	}
	files, _ := filepath.Glob(filepath.Join(logDir, app, "container_*", "stderr"))
	var b strings.Builder
	for _, f := range files[:min(2, len(files))] {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		fmt.Fprintf(&b, "%s:\n%s\n", filepath.Base(filepath.Dir(f)), strings.Join(lines[max(0, len(lines)-25):], "\n"))
	}
	return b.String()
}

// clientSays picks from a spark-submit client's output what says why an
// application ended: its report's diagnostics and the last lines.
func clientSays(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var said []string
	for i, l := range lines {
		if strings.Contains(l, "diagnostics:") {
			said = append(said, lines[i:min(i+6, len(lines))]...)
		}
	}
	return strings.Join(append(said, lines[max(0, len(lines)-8):]...), "\n")
}

// keepLogs copies the box's logs (koordlet's, koord-manager's, the YARN
// daemons') into Out/name-logs before the box is removed.
func (r *Runner) keepLogs(box *nodebox.Box, name string) {
	if r.Out == "" || name == "" {
		return
	}
	dir := filepath.Join(r.Out, name+"-logs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(r.Log, "keep the logs: %v\n", err)
		return
	}
	files := []string{box.KoordletLog(), filepath.Join(box.Dir(), "koord-manager.log")}
	more, _ := filepath.Glob(filepath.Join(box.Dir(), "yarn", "*.log"))
	submits, _ := filepath.Glob(filepath.Join(box.Dir(), "yarn", "spark-*", "submit.log"))
	for _, f := range append(append(files, more...), submits...) {
		name := filepath.Base(f)
		if name == "submit.log" {
			name = filepath.Base(filepath.Dir(f)) + "-submit.log"
		}
		if b, err := os.ReadFile(f); err == nil {
			_ = os.WriteFile(filepath.Join(dir, name), b, 0o644)
		}
	}
}

// waitCapacity waits until koordlet pushed YARN's capacity from a batch
// allocatable to the RM (its ledger's RM sync: memory pushed > 0).
func waitCapacity(ctx context.Context, box *nodebox.Box, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		l, err := box.Ledger()
		if err == nil && l.RM.Pushed != nil && l.RM.Pushed.MemoryMB > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("koordlet pushed no YARN capacity to the RM %v after koord-manager started (ledger: %+v, %v)", wait, l.RM, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// heldJob is a job submitted before the day into heldQueue: its client
// (nil when the submission failed, err says why) and application.
type heldJob struct {
	run *yarnpeer.SparkRun
	app string
	err error
}

// submitHeld submits every job of the stream into heldQueue, one client at
// a time (its client exits once the application is accepted:
// spark.yarn.submit.waitAppCompletion=false), two AM attempts (the RM's
// default; the tests' peer allows one).
func (r *Runner) submitHeld(ctx context.Context, peer *yarnpeer.Peer) map[string]heldJob {
	began := time.Now()
	held := map[string]heldJob{}
	for _, j := range r.Stream {
		mode := map[jobs.Kind]string{jobs.Short: yarnpeer.SparkBurn, jobs.Heavy: yarnpeer.SparkGrow, jobs.Long: yarnpeer.SparkHold}[j.Kind]
		run, err := peer.RunSparkJob(yarnpeer.SparkJob{Name: j.Name, User: "spark", Queue: heldQueue, Mode: mode, Partitions: j.Tasks,
			HoldMB: j.HoldMB, Seconds: int(j.TaskTime.Seconds()), Executors: j.Executors,
			ExecutorMB: max(512, j.HoldMB+448), // Spark needs ≥ 450 MB; the rest is the held heap's headroom
			Extra:      []string{"spark.yarn.submit.waitAppCompletion=false", "spark.yarn.maxAppAttempts=2"}})
		if err != nil {
			held[j.Name] = heldJob{err: err}
			continue
		}
		select {
		case <-run.Done():
		case <-ctx.Done():
			run.Kill()
		}
		h := heldJob{run: run, app: run.AppID()}
		if h.app == "" {
			h.err = fmt.Errorf("spark-submit submitted no application")
		}
		held[j.Name] = h
	}
	fmt.Fprintf(r.Log, "%d jobs submitted into the %s queue in %v\n", len(held), heldQueue, time.Since(began).Round(time.Second))
	return held
}

// arrive moves h's application to the default queue (the job's arrival)
// and waits for its end; the job's time is from the move to the RM's
// finish.
func arrive(ctx context.Context, peer *yarnpeer.Peer, j jobs.Job, h heldJob) jobResult {
	if h.run == nil || h.err != nil {
		out := ""
		if h.run != nil {
			out = clientSays(h.run.Output())
		}
		return jobResult{job: j, err: h.err, output: out}
	}
	moved := time.Now()
	if err := moveApp(ctx, peer.RMWeb, h.app, "default"); err != nil {
		return jobResult{job: j, err: err}
	}
	rep, err := waitApp(ctx, peer.RMWeb, h.app)
	if err != nil {
		return jobResult{job: j, err: err, output: clientSays(h.run.Output())}
	}
	res, err := h.run.Wait(ctx)
	res.Elapsed = rep.Finished.Sub(moved)
	return jobResult{job: j, res: res, err: err, output: clientSays(h.run.Output())}
}

// moveApp moves app to queue (PUT /ws/v1/cluster/apps/{app}/queue, as its
// owner).
func moveApp(ctx context.Context, rmWeb, app, queue string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+rmWeb+"/ws/v1/cluster/apps/"+app+"/queue?user.name=spark",
		strings.NewReader(`{"queue":"`+queue+`"}`))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("move %s to the %s queue: %w", app, queue, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("move %s to the %s queue: %s: %s", app, queue, resp.Status, b)
	}
	return nil
}

// appReport is the RM's report of an application.
type appReport struct {
	State, FinalStatus string
	Finished           time.Time
}

// waitApp polls the RM's REST (GET /ws/v1/cluster/apps/{app}) until app
// ended (FINISHED, FAILED, KILLED).
func waitApp(ctx context.Context, rmWeb, app string) (appReport, error) {
	for {
		var body struct {
			App struct {
				State, FinalStatus string
				FinishedTime       int64
			} `json:"app"`
		}
		err := getJSON(ctx, "http://"+rmWeb+"/ws/v1/cluster/apps/"+app, &body)
		if err == nil {
			switch body.App.State {
			case "FINISHED", "FAILED", "KILLED":
				return appReport{body.App.State, body.App.FinalStatus, time.UnixMilli(body.App.FinishedTime)}, nil
			}
		}
		select {
		case <-ctx.Done():
			return appReport{}, fmt.Errorf("application %s did not end: %w (last read: %v)", app, ctx.Err(), err)
		case <-time.After(time.Second):
		}
	}
}

// nmPodCPU is the NodeManager pod's CPU time (its container cgroup's
// cpuacct.usage; 0 when unread).
func nmPodCPU(box *nodebox.Box) time.Duration {
	_, pod := box.NMPod()
	b, err := os.ReadFile(filepath.Join(box.CgroupRoot(), "cpuacct", box.PodCgroup(pod), "cpuacct.usage"))
	if err != nil {
		return 0
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0
	}
	return time.Duration(v)
}
