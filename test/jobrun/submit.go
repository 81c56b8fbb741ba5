package jobrun

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/test/jobs"
	"github.com/koordlet-yarn/koordlet-yarn/test/yarnpeer"
)

// jobResult is one job's end.
type jobResult struct {
	job jobs.Job
	res yarnpeer.SparkResult
	err error
	// output is the tail of the spark-submit client's output.
	output string
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
		mode := map[jobs.Kind]string{jobs.Short: yarnpeer.SparkBurn, jobs.Heavy: yarnpeer.SparkGrow, jobs.Long: yarnpeer.SparkHold, jobs.Backlog: yarnpeer.SparkBurn}[j.Kind]
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
	return putApp(ctx, rmWeb, app, "queue", `{"queue":"`+queue+`"}`)
}

// killApp kills app (PUT /ws/v1/cluster/apps/{app}/state, as its owner):
// the backlog's end with the day.
func killApp(ctx context.Context, rmWeb, app string) error {
	return putApp(ctx, rmWeb, app, "state", `{"state":"KILLED"}`)
}

// putApp writes body to the application's resource what (the RM's REST,
// as the user spark who owns every job of the stream); 200 and, for a
// state change, 202 (the RM accepted it and ends the application) are
// success.
func putApp(ctx context.Context, rmWeb, app, what, body string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+rmWeb+"/ws/v1/cluster/apps/"+app+"/"+what+"?user.name=spark",
		strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s of %s to %s: %w", what, app, body, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s of %s to %s: %s: %s", what, app, body, resp.Status, b)
	}
	return nil
}

// endBacklog kills the backlog's applications at the day's end (they hold
// more work than the day by design) and returns the names of those it
// ended; one it could not end is left to the drain, and said.
func (r *Runner) endBacklog(ctx context.Context, c jobs.Config, rmWeb string, held map[string]heldJob) map[string]bool {
	ended := map[string]bool{}
	for _, j := range r.Stream {
		h, ok := held[j.Name]
		if j.Kind != jobs.Backlog || !ok || h.run == nil || h.err != nil {
			continue
		}
		if err := killApp(ctx, rmWeb, h.app); err != nil {
			fmt.Fprintf(r.Log, "%s: the backlog %s was not ended with the day: %v\n", c, j.Name, err)
			continue
		}
		ended[j.Name] = true
	}
	return ended
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
