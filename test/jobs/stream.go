package jobs

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"
)

// Kind is a kind of batch job in the stream.
type Kind int

const (
	// Short is a job of short CPU-bound tasks (a stage of a few seconds a
	// task).
	Short Kind = iota + 1
	// Heavy is a memory-heavy job whose executors grow while their tasks
	// run (the memory pressure that eviction answers).
	Heavy
	// Long is a job whose tasks span the LS peak.
	Long
	// Backlog is batch work always waiting (Heracles' premise: best-effort
	// tasks are always available, so that utilisation measures what the
	// node lets batch run, not how much work the stream happened to
	// bring): a job of CPU-bound tasks submitted at the day's start with
	// more tasks than the day can run, ended by the runner at the day's
	// end.
	Backlog
)

func (k Kind) String() string {
	switch k {
	case Short:
		return "short"
	case Heavy:
		return "heavy"
	case Long:
		return "long"
	case Backlog:
		return "backlog"
	}
	return fmt.Sprintf("kind %d", int(k))
}

// Job is one job of the stream, engine-neutral: the runner makes it a
// Spark application (executors of one core).
type Job struct {
	Name string
	Kind Kind
	// At is the job's submission, from the day's start.
	At time.Duration
	// Executors run Tasks tasks of TaskTime each (a task burns a core for
	// a Short job, sleeps holding memory otherwise).
	Executors, Tasks int
	TaskTime         time.Duration
	// HoldMB is the heap a task holds; a Heavy job's tasks grow to it
	// over TaskTime.
	HoldMB int
}

// Mix sets the stream: Short and Heavy jobs arrive as Poisson processes of
// PerHour jobs each hour of the day (the day's hours, not the wall
// clock's), Heavy a HeavyShare of them; one Long job is submitted
// LongLead phases before the peak and lasts LongPhases phases; with
// Backlog.Executors > 0, one Backlog job starts with the day. Shapes are
// the jobs' sizes.
type Mix struct {
	PerHour    float64
	HeavyShare float64
	LongLead   int
	LongPhases int
	Short      Shape
	Heavy      Shape
	Long       Shape
	// Backlog is the backlog job's size (Executors 0: none). Its Tasks are
	// computed: twice what its executors, one task at a time each, would
	// run in the day unthrottled, so that it never runs out of work.
	Backlog Shape
	Seed    uint64
}

// Shape is a job's size: executors, tasks, a task's time as a fraction of
// a phase (so that a shorter day shortens the jobs with it), the heap a
// task holds.
type Shape struct {
	Executors, Tasks int
	TaskPhases       float64
	HoldMB           int
}

// DefaultMix fills a small node's YARN (2 cores, a few GiB here) on the
// default day: a job every two and a half hours of the day (25 s of the
// 4-minute day: a Spark job's JVMs take about that to start here), a
// quarter of them heavy; an AM and one executor each.
func DefaultMix() Mix {
	return Mix{PerHour: 0.4, HeavyShare: 0.25, LongLead: 3, LongPhases: 6,
		Short:   Shape{Executors: 1, Tasks: 2, TaskPhases: 0.5, HoldMB: 64},
		Heavy:   Shape{Executors: 1, Tasks: 2, TaskPhases: 1, HoldMB: 512},
		Long:    Shape{Executors: 1, Tasks: 1, TaskPhases: 6, HoldMB: 128},
		Backlog: Shape{Executors: 0, TaskPhases: 1, HoldMB: 64},
		Seed:    1}
}

// Stream returns the day's jobs in submission order. The same Mix and
// phases give the same stream.
func (m Mix) Stream(phases []Phase) ([]Job, error) {
	if len(phases) == 0 {
		return nil, fmt.Errorf("a stream needs a day of phases")
	}
	if m.PerHour < 0 || m.HeavyShare < 0 || m.HeavyShare > 1 {
		return nil, fmt.Errorf("a mix needs jobs per hour ≥ 0 and a heavy share in [0, 1] (got %.2f and %.2f)", m.PerHour, m.HeavyShare)
	}
	if m.Backlog.Executors < 0 || m.Backlog.Executors > 0 && m.Backlog.TaskPhases <= 0 {
		return nil, fmt.Errorf("a backlog needs executors ≥ 0 and a task of more than 0 phases (got %d and %.2f)", m.Backlog.Executors, m.Backlog.TaskPhases)
	}
	each := phases[0].Duration
	day := phases[len(phases)-1].Start + each
	hour := day / 24
	rng := rand.New(rand.NewPCG(m.Seed, 0x73747265616d)) // "stream"
	var out []Job
	n := map[Kind]int{}
	add := func(k Kind, at time.Duration, s Shape) {
		n[k]++
		out = append(out, Job{Name: fmt.Sprintf("%s-%02d", k, n[k]), Kind: k, At: at, Executors: s.Executors, Tasks: s.Tasks,
			TaskTime: time.Duration(s.TaskPhases * float64(each)).Round(time.Second), HoldMB: s.HoldMB})
	}
	if m.PerHour > 0 {
		// Exponential gaps with a mean of an hour of the day / PerHour;
		// nothing starts in the last phase (it could not finish).
		for at := time.Duration(rng.ExpFloat64() / m.PerHour * float64(hour)); at < day-each; at += time.Duration(rng.ExpFloat64() / m.PerHour * float64(hour)) {
			k, s := Short, m.Short
			if rng.Float64() < m.HeavyShare {
				k, s = Heavy, m.Heavy
			}
			add(k, at.Round(time.Second), s)
		}
	}
	if m.LongPhases > 0 {
		start := PeakPhase(phases) - m.LongLead
		if start < 0 {
			start = 0
		}
		long := m.Long
		long.TaskPhases = float64(m.LongPhases)
		add(Long, phases[start].Start, long)
	}
	if b := m.Backlog; b.Executors > 0 {
		b.Tasks = int(math.Ceil(2 * float64(b.Executors*len(phases)) / b.TaskPhases))
		add(Backlog, 0, b)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out, nil
}
