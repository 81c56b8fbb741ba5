package yarnpeer

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"time"
)

// SparkEvents is what Spark's event log (the driver's JSON lines,
// JsonProtocol) says of an application.
type SparkEvents struct {
	AppID string
	// Jobs are the jobs' results by job id ("JobSucceeded", "JobFailed").
	Jobs map[int]string
	// JobTime is the first job's submission to the last job's end.
	JobTime  time.Duration
	Added    []SparkExecutor
	Removed  []SparkExecutor
	Tasks    int // task ends
	Failures []SparkTaskFailure
}

// SparkExecutor is an executor as added (its container) or removed (the
// reason the driver gives).
type SparkExecutor struct {
	ID        string
	Container string // from the executor's YARN attributes (added only)
	Reason    string // removed only
}

// SparkTaskFailure is a task end whose reason is not Success.
type SparkTaskFailure struct {
	Stage, Index, Attempt int
	Executor              string
	// Reason is the end reason's class (ExecutorLostFailure,
	// ExceptionFailure, TaskKilled, …).
	Reason string
	// ExitCausedByApp: for ExecutorLostFailure, whether Spark blames the
	// application (then the failure counts against spark.task.maxFailures;
	// a preempted container does not); nil for other reasons.
	ExitCausedByApp *bool
	LossReason      string
}

// Succeeded: at least one job, and every job succeeded.
func (e *SparkEvents) Succeeded() bool {
	for _, r := range e.Jobs {
		if r != "JobSucceeded" {
			return false
		}
	}
	return len(e.Jobs) > 0
}

// ExecutorLost counts the ExecutorLostFailure task ends, those Spark
// blamed on the application and the others.
func (e *SparkEvents) ExecutorLost() (byApp, notByApp int) {
	for _, f := range e.Failures {
		if f.Reason != "ExecutorLostFailure" || f.ExitCausedByApp == nil {
			continue
		}
		if *f.ExitCausedByApp {
			byApp++
		} else {
			notByApp++
		}
	}
	return byApp, notByApp
}

// Container is the YARN container of executor id ("" when unknown).
func (e *SparkEvents) Container(id string) string {
	for _, x := range e.Added {
		if x.ID == id {
			return x.Container
		}
	}
	return ""
}

type sparkEvent struct {
	Event      string `json:"Event"`
	AppID      string `json:"App ID"`
	JobID      *int   `json:"Job ID"`
	Submission int64  `json:"Submission Time"`
	Completion int64  `json:"Completion Time"`
	JobResult  *struct {
		Result string `json:"Result"`
	} `json:"Job Result"`
	ExecutorID   string `json:"Executor ID"`
	ExecutorInfo *struct {
		Attributes map[string]string `json:"Attributes"`
	} `json:"Executor Info"`
	RemovedReason string `json:"Removed Reason"`
	StageID       int    `json:"Stage ID"`
	EndReason     *struct {
		Reason          string `json:"Reason"`
		ExitCausedByApp *bool  `json:"Exit Caused By App"`
		LossReason      string `json:"Loss Reason"`
		ExecutorID      string `json:"Executor ID"`
	} `json:"Task End Reason"`
	TaskInfo *struct {
		Index    int    `json:"Index"`
		Attempt  int    `json:"Attempt"`
		Executor string `json:"Executor ID"`
	} `json:"Task Info"`
}

// ParseSparkEvents reads an uncompressed Spark event log; unknown events
// are skipped.
func ParseSparkEvents(r io.Reader) (*SparkEvents, error) {
	e := &SparkEvents{Jobs: map[int]string{}}
	var first, last int64
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		var ev sparkEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("Spark event log line %d: %w", n, err)
		}
		switch ev.Event {
		case "SparkListenerApplicationStart":
			e.AppID = ev.AppID
		case "SparkListenerJobStart":
			if first == 0 || ev.Submission < first {
				first = ev.Submission
			}
		case "SparkListenerJobEnd":
			if ev.JobID != nil && ev.JobResult != nil {
				e.Jobs[*ev.JobID] = ev.JobResult.Result
			}
			if ev.Completion > last {
				last = ev.Completion
			}
		case "SparkListenerExecutorAdded":
			x := SparkExecutor{ID: ev.ExecutorID}
			if ev.ExecutorInfo != nil {
				x.Container = ev.ExecutorInfo.Attributes["CONTAINER_ID"]
			}
			e.Added = append(e.Added, x)
		case "SparkListenerExecutorRemoved":
			// Spark 4.0.1 logs an executor's removal twice (the same
			// reason): counted once.
			if slices.ContainsFunc(e.Removed, func(x SparkExecutor) bool { return x.ID == ev.ExecutorID }) {
				continue
			}
			e.Removed = append(e.Removed, SparkExecutor{ID: ev.ExecutorID, Container: e.Container(ev.ExecutorID), Reason: ev.RemovedReason})
		case "SparkListenerTaskEnd":
			e.Tasks++
			if ev.EndReason == nil || ev.EndReason.Reason == "Success" {
				continue
			}
			f := SparkTaskFailure{Stage: ev.StageID, Reason: ev.EndReason.Reason,
				ExitCausedByApp: ev.EndReason.ExitCausedByApp, LossReason: ev.EndReason.LossReason}
			if ev.TaskInfo != nil {
				f.Index, f.Attempt, f.Executor = ev.TaskInfo.Index, ev.TaskInfo.Attempt, ev.TaskInfo.Executor
			}
			e.Failures = append(e.Failures, f)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("Spark event log: %w", err)
	}
	if first > 0 && last >= first {
		e.JobTime = time.Duration(last-first) * time.Millisecond
	}
	sort.SliceStable(e.Failures, func(i, j int) bool { return e.Failures[i].Index < e.Failures[j].Index })
	return e, nil
}
