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
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/test/colocation"
	"github.com/koordlet-yarn/koordlet-yarn/test/jobs"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

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
	// the day's length); those still running then are unfinished.
	Drain time.Duration
	// APIServer, when set, is the control plane the boxes share
	// (nodebox.Options.APIServer).
	APIServer *nodebox.APIServer
	// SLOTarget is the p99 target the LS service declares on its pod
	// (colocation.SLODeclaration) in every day with LS load: fixed by the
	// caller, or (0) learnt from the first LS-alone day, as
	// jobs.SLOTargetOf: its peak phase's p99 × 1.3. Before it is known
	// nothing is declared.
	SLOTarget time.Duration
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
			name := DayName(c, rep)
			o, tl, err := r.Day(ctx, c, name)
			if err != nil {
				return out, fmt.Errorf("%s, repeat %d: %w", c, rep, err)
			}
			out[c] = append(out[c], o)
			if c == jobs.LSAlone && r.SLOTarget == 0 {
				r.SLOTarget = jobs.SLOTargetOf([]jobs.Outcome{o}, jobs.PeakPhase(r.Phases))
				if r.SLOTarget > 0 {
					fmt.Fprintf(r.Log, "jobs: the LS service declares p99 ≤ %v over %v windows from now on (LS alone's p99 in the peak phase %d × %.1f)\n",
						r.SLOTarget, colocation.SLOWindow, jobs.PeakPhase(r.Phases), colocation.SLOFactor)
				} else {
					fmt.Fprintf(r.Log, "jobs: LS alone has no p99 in the peak phase %d: the LS service declares no SLO\n", jobs.PeakPhase(r.Phases))
				}
			}
			if err := r.write(name, fmt.Sprintf("%s, repeat %d", c, rep), c, o, tl); err != nil {
				return out, err
			}
			fmt.Fprintf(r.Log, "jobs: %s, repeat %d: %d jobs (%d failed, %d unfinished), %d containers launched, %d killed, %d preempted, %d with the NM pod; utilisation %.0f%%; %v\n",
				c, rep, o.Jobs, o.FailedJobs, o.Unfinished, o.Launched, o.Killed, o.Preempted, o.WithNMPod, 100*o.Utilisation, time.Since(began).Round(time.Second))
		}
	}
	return out, nil
}

// DayName names a day's files in Out: name.json, name.svg, name-logs.
func DayName(c jobs.Config, rep int) string { return fmt.Sprintf("%s-%d", c.Key(), rep) }

// write writes a day's outcome and timeline into Out as name.json and
// its plot as name.svg.
func (r *Runner) write(name, title string, c jobs.Config, o jobs.Outcome, tl Timeline) error {
	if r.Out == "" {
		return nil
	}
	path := filepath.Join(r.Out, name)
	if err := writeJSON(path+".json", dayFile{c.String(), o, tl}); err != nil {
		return err
	}
	return tl.Plot(title, path+".svg")
}

// dayFile is a day's outcome file (write).
type dayFile struct {
	Config   string
	Outcome  jobs.Outcome
	Timeline Timeline
}

// ReadOutcomes reads the outcomes write left in dir for cs over repeats
// (DayName), and the SLO target the days declared (0: none).
func ReadOutcomes(dir string, cs []jobs.Config, repeats int) (map[jobs.Config][]jobs.Outcome, time.Duration, error) {
	out := map[jobs.Config][]jobs.Outcome{}
	var slo time.Duration
	for rep := 1; rep <= repeats; rep++ {
		for _, c := range cs {
			path := filepath.Join(dir, DayName(c, rep)+".json")
			b, err := os.ReadFile(path)
			if err != nil {
				return nil, 0, fmt.Errorf("the outcome of %s, repeat %d: %w", c, rep, err)
			}
			var f dayFile
			if err := json.Unmarshal(b, &f); err != nil {
				return nil, 0, fmt.Errorf("%s: %w", path, err)
			}
			if f.Config != c.String() {
				return nil, 0, fmt.Errorf("%s holds %q, not %q", path, f.Config, c)
			}
			out[c] = append(out[c], f.Outcome)
			if slo == 0 {
				slo = f.Outcome.SLOTarget
			}
		}
	}
	return out, slo, nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// Day runs one configuration's day on a fresh box and returns its outcome
// and timeline; the logs of koordlet, koord-manager and YARN's daemons are
// kept in Out as name-logs (with Out set).
func (r *Runner) Day(ctx context.Context, c jobs.Config, name string) (jobs.Outcome, Timeline, error) {
	var out jobs.Outcome
	var tl Timeline
	n, err := r.startNode(ctx, c, name)
	if n != nil {
		defer n.stop()
	}
	if err != nil {
		return out, tl, err
	}
	box, peer, ls := n.box, n.peer, n.ls
	if c.LS() && r.SLOTarget > 0 {
		if err := ls.DeclareSLO(ctx, r.SLOTarget); err != nil {
			return out, tl, err
		}
		out.SLOTarget = r.SLOTarget
	}
	var held map[string]heldJob
	if c.Batch() {
		held = r.submitHeld(ctx, peer)
	}

	began := time.Now()
	watch := watchNMPod(ctx, box, peer, began, r.Log)
	defer watch.stop()
	slo := watchSLO(ctx, box, began)
	defer slo.stop()
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
		out.Windows = append(out.Windows, res.Windows...)
		out.Utilisation += res.NodeUtilisation * p.Duration.Seconds()
		out.BatchCPU += time.Duration(res.BatchCPUSeconds * float64(time.Second))
		koordletCPU += res.KoordletCPUSeconds
		capacity := rmCapacity(ctx, peer.RMWeb)
		memory := "node memory unknown"
		if _, used, err := nodebox.MemInfo(); err == nil {
			memory = fmt.Sprintf("node memory %d MiB used", used>>20)
		}
		secs := p.Duration.Seconds()
		tl.Phases = append(tl.Phases, Point{At: time.Since(began), Level: p.Level, Rate: rate, P99: res.LS.P99,
			Node: res.NodeUtilisation, Batch: res.BatchCPUSeconds / secs, LS: res.LSCPUSeconds / secs, Koordlet: res.KoordletCPUSeconds / secs,
			Capacity: capacity, Violations: colocation.ViolationsOf(res.Windows, out.SLOTarget), Stalls: res.Stalls})
		fmt.Fprintf(r.Log, "%s, phase %d (%02.0fh), LS %.0f%% = %d req/s: p99 %v; cores: node %.2f, LS %.2f, batch %.2f, koordlet %.2f, load generator %.2f; YARN capacity %s; %s, %s\n",
			c, p.Index, p.Hour, 100*p.Level, rate, res.LS.P99.Round(10*time.Microsecond), res.NodeUtilisation*float64(runtime.NumCPU()),
			res.LSCPUSeconds/secs, res.BatchCPUSeconds/secs, res.KoordletCPUSeconds/secs, res.LoadgenCPUSeconds/secs, capacity, memory, res.Stalls.Per(p.Duration))
	}
	tl.SLO = slo.stop()
	backlog := r.endBacklog(ctx, c, peer.RMWeb, held)
	day := r.Phases[len(r.Phases)-1].Start + r.Phases[len(r.Phases)-1].Duration
	out.Utilisation /= day.Seconds()
	out.Koordlet = time.Duration(koordletCPU * float64(time.Second))
	// The jobs still running finish, within Drain; those that do not are
	// unfinished (their waits are cancelled; the RM keeps them until the
	// box stops).
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	drain := r.Drain
	if drain <= 0 {
		drain = day
	}
	ended, drained := time.Now(), false
	select {
	case <-done:
		if c.Batch() {
			fmt.Fprintf(r.Log, "%s: the last job ended %v after the day\n", c, time.Since(ended).Round(time.Second))
		}
	case <-time.After(drain):
		fmt.Fprintf(r.Log, "%s: jobs still running %v after the day: failed\n", c, drain)
		cancelJobs()
		<-done
		drained = true
	}
	close(results)
	watch.stop()
	if err := watch.err(); err != nil {
		return out, tl, err
	}
	err = r.count(c, box, began, results, drained, backlog, watch, &out, &tl)
	return out, tl, err
}

// count adds the day's ends to out and tl: the jobs' results, the NodeManager
// pod's evictions, the launches the container-executor saw and koordlet's
// evictions. With drained (the drain ended before the jobs), a job whose
// wait the drain cut is unfinished, not failed; a backlog job the day's end
// killed (backlog) ended as it should, with no job time (its task
// attempts that failed before still count).
func (r *Runner) count(c jobs.Config, box *nodebox.Box, began time.Time, results <-chan jobResult, drained bool, backlog map[string]bool, watch *nmWatch, out *jobs.Outcome, tl *Timeline) error {
	out.WithNMPod = watch.containers
	for _, at := range watch.times {
		tl.Marks = append(tl.Marks, Mark{At: at, Kind: "NM pod evicted"})
	}
	out.JobTimes = map[string]time.Duration{}
	for res := range results {
		out.Jobs++
		// The RM's final status says the job's end; an error reading its
		// event log afterwards is logged, not a failure of the job.
		switch {
		case backlog[res.job.Name] && res.res.FinalStatus == "KILLED":
			fmt.Fprintf(r.Log, "%s: the backlog %s ended with the day\n", c, res.job.Name)
		case drained && res.res.FinalStatus == "" && errors.Is(res.err, context.Canceled):
			out.Unfinished++
			fmt.Fprintf(r.Log, "%s: job %s unfinished after the drain: %v\n", c, res.job.Name, res.err)
		case res.res.FinalStatus != "SUCCEEDED":
			out.FailedJobs++
			fmt.Fprintf(r.Log, "%s: job %s failed: %v %s %s; its client's last lines:\n%s\n%s", c, res.job.Name, res.err, res.res.State, res.res.FinalStatus,
				res.output, containerLogs(filepath.Join(box.Dir(), "yarn", "nm-logs"), res.res.AppID))
		default:
			out.JobTimes[res.job.Name] = res.res.Elapsed
			if res.err != nil {
				fmt.Fprintf(r.Log, "%s: job %s succeeded; its events: %v\n", c, res.job.Name, res.err)
			}
		}
		if ev := res.res.Events; ev != nil {
			for _, f := range ev.Failures {
				if backlog[res.job.Name] && f.Reason == "TaskKilled" {
					continue // the driver's kill of its running tasks at the day's end
				}
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
		return err
	}
	out.Launched = launched
	ev, err := box.Evictions()
	if err != nil {
		return fmt.Errorf("koordlet's evictions: %w", err)
	}
	// An eviction that released nothing is not counted as one (it is a
	// failure of koordlet's, logged).
	for _, rec := range ev.Records {
		if !rec.IsEviction() {
			// A pressure episode's record (YARNMemoryRelief): no kill.
			fmt.Fprintf(r.Log, "%s: memory pressure episode relieved by the %s: %s\n", c, rec.Outcome, rec.Why)
			continue
		}
		if rec.Outcome == "succeeded" {
			out.Killed++
			tl.Marks = append(tl.Marks, Mark{At: rec.Time.Sub(began), Kind: "killed"})
		} else {
			fmt.Fprintf(r.Log, "%s: eviction of %s %s: %s\n", c, rec.Container, rec.Outcome, rec.Error)
		}
	}
	if ev.Total > len(ev.Records) {
		return fmt.Errorf("koordlet recorded %d evictions and serves the last %d: read its audit file", ev.Total, len(ev.Records))
	}
	return nil
}
