package jobs

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/test/colocation"
)

// Outcome is what one run of one configuration gave over the day.
type Outcome struct {
	// Launched counts the YARN containers the NodeManager launched.
	Launched int
	// Killed counts containers koordlet killed; Preempted those the RM
	// preempted; WithNMPod those lost with the NodeManager pod's eviction
	// (upstream's only answer: every container of the pod).
	Killed, Preempted, WithNMPod int
	// Jobs counts the jobs submitted; FailedJobs those the engine reports
	// failed; FailedAttempts the task attempts it reports failed (a
	// preempted attempt is not a failure to the engine); Unfinished those
	// still waiting or running when the drain after the day ended (not
	// failed by the engine, not done either: the target of zero failed
	// jobs counts them).
	Jobs, FailedJobs, FailedAttempts, Unfinished int
	// JobTimes are the succeeded jobs' completion times by job name.
	JobTimes map[string]time.Duration
	// PhaseP99 is LS's p99 latency in each phase of the day.
	PhaseP99 []time.Duration
	// Windows are LS's p99s over the day's SLO windows (client side,
	// colocation.WindowQuantiles of each phase, in order;
	// colocation.NoRequests for an empty one).
	Windows []time.Duration
	// SLOTarget is the p99 target the LS pod declared that day (0: none
	// declared: the report's target is used).
	SLOTarget time.Duration
	// Utilisation is the node's CPU utilisation over the day (0–1).
	Utilisation float64
	// BatchCPU is the CPU time of the YARN containers; Koordlet koordlet's
	// own.
	BatchCPU, Koordlet time.Duration
}

// Evicted counts the containers evicted any way.
func (o Outcome) Evicted() int { return o.Killed + o.Preempted + o.WithNMPod }

// EvictionRate is evicted ÷ launched (the seeds' eviction rate; 0 without
// launches).
func (o Outcome) EvictionRate() float64 {
	if o.Launched == 0 {
		return 0
	}
	return float64(o.Evicted()) / float64(o.Launched)
}

// Row is one configuration's outcomes over its repeats against the
// references: LS alone (latency per phase, utilisation) and batch alone
// (each job's undisturbed time).
type Row struct {
	Config string
	// EvictionRate, FailedJobs, FailedAttempts and Unfinished over the
	// repeats.
	EvictionRate, FailedJobs, FailedAttempts, Unfinished colocation.Spread
	// Killed, Preempted and WithNMPod are the evictions by way (medians: 0.5 for 0 and 1).
	Killed, Preempted, WithNMPod float64
	// JobP50 and JobP95 are the p50 and p95 over the jobs of (the job's
	// time ÷ its time in batch alone).
	JobP50, JobP95 colocation.Spread
	// PhaseRatio is, per phase, the median over repeats of LS's p99 ÷ LS
	// alone's; WorstPhase the worst phase's ratio over the repeats and
	// WorstPhaseIndex which phase that is (by median).
	PhaseRatio      []float64
	WorstPhase      colocation.Spread
	WorstPhaseIndex int
	// UtilisationGain is the node's utilisation less LS alone's, in
	// points.
	UtilisationGain colocation.Spread
	// BatchCPU and Koordlet are CPU seconds.
	BatchCPU, Koordlet colocation.Spread
	// Violations is, over the repeats, the share of SLO windows whose p99
	// is above the declared target (0–1); ViolatedMax the most violated
	// windows of a repeat.
	Violations  colocation.Spread
	ViolatedMax int
}

// References are the runs every configuration is compared with.
type References struct {
	// LSAlone's phase p99s and utilisation (medians over its repeats are
	// taken by the caller: RefOf).
	PhaseP99    []time.Duration
	Utilisation float64
	// JobTimes are batch alone's, by job name.
	JobTimes map[string]time.Duration
	// SLOTarget is the declared p99 target a run without its own
	// (Outcome.SLOTarget) is checked against (0: no violations counted).
	SLOTarget time.Duration
}

// SLOTargetOf is the target the LS service declares (the rule):
// LS alone's p99 in the day's peak phase (the median over its runs) ×
// colocation.SLOFactor; 0 without a run or that phase.
func SLOTargetOf(lsAlone []Outcome, peak int) time.Duration {
	var vs []float64
	for _, o := range lsAlone {
		if peak >= 0 && peak < len(o.PhaseP99) && o.PhaseP99[peak] > 0 {
			vs = append(vs, float64(o.PhaseP99[peak]))
		}
	}
	if len(vs) == 0 {
		return 0
	}
	return colocation.SLOTarget(time.Duration(colocation.SpreadOf(vs).Median), colocation.SLOFactor)
}

// ViolationsOf counts o's SLO windows over its declared target, or over
// target when it declared none.
func (o Outcome) ViolationsOf(target time.Duration) colocation.Violations {
	if o.SLOTarget > 0 {
		target = o.SLOTarget
	}
	return colocation.ViolationsOf(o.Windows, target)
}

// RefOf makes the references of LS-alone and batch-alone runs: per phase
// and per job the median over their repeats. Batch alone is optional (the
// SLO day's targets do not need it): without it no job time is compared.
func RefOf(lsAlone, batchAlone []Outcome) (References, error) {
	if len(lsAlone) == 0 {
		return References{}, fmt.Errorf("the references need at least one run of LS alone (got none)")
	}
	var ref References
	phases := len(lsAlone[0].PhaseP99)
	for i := 0; i < phases; i++ {
		var vs []float64
		for _, o := range lsAlone {
			if len(o.PhaseP99) != phases {
				return References{}, fmt.Errorf("LS alone's runs have %d and %d phases", phases, len(o.PhaseP99))
			}
			vs = append(vs, float64(o.PhaseP99[i]))
		}
		ref.PhaseP99 = append(ref.PhaseP99, time.Duration(colocation.SpreadOf(vs).Median))
	}
	var us []float64
	for _, o := range lsAlone {
		us = append(us, o.Utilisation)
	}
	ref.Utilisation = colocation.SpreadOf(us).Median
	times := map[string][]float64{}
	for _, o := range batchAlone {
		for name, d := range o.JobTimes {
			times[name] = append(times[name], float64(d))
		}
	}
	ref.JobTimes = map[string]time.Duration{}
	for name, vs := range times {
		ref.JobTimes[name] = time.Duration(colocation.SpreadOf(vs).Median)
	}
	return ref, nil
}

// RowOf summarises a configuration's repeats against ref.
func RowOf(config string, runs []Outcome, ref References) (Row, error) {
	if len(runs) == 0 {
		return Row{}, fmt.Errorf("%s: no runs", config)
	}
	r := Row{Config: config}
	var rate, fj, fa, un, kill, pre, nm, p50, p95, worst, gain, batch, kl, viol []float64
	perPhase := make([][]float64, len(ref.PhaseP99))
	for _, o := range runs {
		rate = append(rate, o.EvictionRate())
		fj = append(fj, float64(o.FailedJobs))
		fa = append(fa, float64(o.FailedAttempts))
		un = append(un, float64(o.Unfinished))
		kill, pre, nm = append(kill, float64(o.Killed)), append(pre, float64(o.Preempted)), append(nm, float64(o.WithNMPod))
		var slow []float64
		for name, d := range o.JobTimes {
			if base, ok := ref.JobTimes[name]; ok && base > 0 {
				slow = append(slow, float64(d)/float64(base))
			}
		}
		sort.Float64s(slow)
		if len(slow) > 0 { // none without batch alone, or with no job done
			p50, p95 = append(p50, quantile(slow, 0.50)), append(p95, quantile(slow, 0.95))
		}
		if len(ref.PhaseP99) > 0 {
			if len(o.PhaseP99) != len(ref.PhaseP99) {
				return Row{}, fmt.Errorf("%s: a run of %d phases against LS alone's %d", config, len(o.PhaseP99), len(ref.PhaseP99))
			}
			w := 0.0
			for i, p := range o.PhaseP99 {
				if ref.PhaseP99[i] <= 0 {
					return Row{}, fmt.Errorf("%s: LS alone has no p99 in phase %d", config, i)
				}
				ratio := colocation.Ratio(float64(p), float64(ref.PhaseP99[i]))
				perPhase[i] = append(perPhase[i], ratio)
				w = math.Max(w, ratio)
			}
			worst = append(worst, w)
		}
		gain = append(gain, 100*(o.Utilisation-ref.Utilisation))
		batch, kl = append(batch, o.BatchCPU.Seconds()), append(kl, o.Koordlet.Seconds())
		if v := o.ViolationsOf(ref.SLOTarget); v.Windows > 0 {
			viol = append(viol, v.Share())
			r.ViolatedMax = max(r.ViolatedMax, v.Violated)
		}
	}
	r.Violations = colocation.SpreadOf(viol)
	r.EvictionRate, r.FailedJobs, r.FailedAttempts = colocation.SpreadOf(rate), colocation.SpreadOf(fj), colocation.SpreadOf(fa)
	r.Unfinished = colocation.SpreadOf(un)
	r.Killed, r.Preempted, r.WithNMPod = colocation.SpreadOf(kill).Median, colocation.SpreadOf(pre).Median, colocation.SpreadOf(nm).Median
	r.JobP50, r.JobP95 = colocation.SpreadOf(p50), colocation.SpreadOf(p95)
	for i, vs := range perPhase {
		r.PhaseRatio = append(r.PhaseRatio, colocation.SpreadOf(vs).Median)
		if r.PhaseRatio[i] > r.PhaseRatio[r.WorstPhaseIndex] {
			r.WorstPhaseIndex = i
		}
	}
	r.WorstPhase = colocation.SpreadOf(worst)
	r.UtilisationGain = colocation.SpreadOf(gain)
	r.BatchCPU, r.Koordlet = colocation.SpreadOf(batch), colocation.SpreadOf(kl)
	return r, nil
}

// quantile is the nearest-rank q-quantile of sorted (0 for none).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Targets are the issue's: zero failed jobs, an eviction rate of at most
// 0.1% (ten times better than the seeds' 1%), LS's p99 at most 1.3× LS
// alone's in every phase, the node's utilisation at least 30 points above
// LS alone's.
type Targets struct {
	MaxEvictionRate float64
	MaxPhaseRatio   float64
	MinGainPoints   float64
	// MinGainOverUpstream is issue 49's: the SLO configuration's
	// utilisation at least upstream's best's + this many points.
	MinGainOverUpstream float64
	// SLO is the p99 target the LS service declared (SLOTargetOf, or fixed
	// by the command's -slo-target): the violations of a run that declared
	// none are counted against it (0: only the runs' own).
	SLO time.Duration
}

// DefaultTargets are the targets.
func DefaultTargets() Targets {
	return Targets{MaxEvictionRate: 0.001, MaxPhaseRatio: 1.3, MinGainPoints: 30, MinGainOverUpstream: 10}
}

// Verdict is one target's check on a row.
type Verdict struct {
	Config, Target string
	Met            bool
	// Got says the figure the verdict read (medians over the repeats).
	Got string
}

// Check gives r's verdicts; upstream, when not nil, is upstream's best
// practice, which r must beat strictly on evictions and failed jobs (fewer
// of one, no more of the other) at an equal or better worst-phase LS p99.
func (t Targets) Check(r Row, upstream *Row) []Verdict {
	v := []Verdict{
		{Config: r.Config, Target: "zero failed jobs", Met: r.FailedJobs.Max == 0 && r.Unfinished.Max == 0,
			Got: fmt.Sprintf("%.0f failed, %.0f unfinished after the drain (max over repeats)", r.FailedJobs.Max, r.Unfinished.Max)},
		{Config: r.Config, Target: fmt.Sprintf("eviction rate ≤ %.1f%%", 100*t.MaxEvictionRate), Met: r.EvictionRate.Median <= t.MaxEvictionRate,
			Got: fmt.Sprintf("%.2f%%", 100*r.EvictionRate.Median)},
		{Config: r.Config, Target: fmt.Sprintf("LS p99 ≤ %.1f× LS alone in every phase", t.MaxPhaseRatio), Met: r.WorstPhase.Median <= t.MaxPhaseRatio,
			Got: fmt.Sprintf("worst %.2f× (phase %d)", r.WorstPhase.Median, r.WorstPhaseIndex)},
		{Config: r.Config, Target: fmt.Sprintf("utilisation ≥ LS alone + %.0f points", t.MinGainPoints), Met: r.UtilisationGain.Median >= t.MinGainPoints,
			Got: fmt.Sprintf("+%.1f points", r.UtilisationGain.Median)},
	}
	if upstream != nil {
		rate, upRate := r.EvictionRate.Median, upstream.EvictionRate.Median
		failed, upFailed := r.FailedJobs.Median+r.Unfinished.Median, upstream.FailedJobs.Median+upstream.Unfinished.Median
		better := (rate < upRate && failed <= upFailed) || (rate <= upRate && failed < upFailed)
		slo := r.WorstPhase.Median <= upstream.WorstPhase.Median
		v = append(v, Verdict{Config: r.Config, Target: "strictly better than upstream's best on evictions and failed jobs, LS p99 no worse",
			Met: better && slo,
			Got: fmt.Sprintf("evictions %.2f%% vs %.2f%%, failed or unfinished jobs %.0f vs %.0f, worst phase %.2f× vs %.2f×",
				100*rate, 100*upRate, failed, upFailed, r.WorstPhase.Median, upstream.WorstPhase.Median)})
	}
	return v
}

// CheckSLO gives issue 49's verdicts on c's row r against upstream's best
// (nil: not run, no verdict): with the SLO controller (PluginSLO), zero
// SLO violations in every repeat and utilisation at least upstream's +
// MinGainOverUpstream points; for the Recommended configuration, its worst
// phase's range (LS p99 ÷ LS alone over the repeats) entirely below
// upstream's.
func (t Targets) CheckSLO(c Config, r Row, upstream *Row) []Verdict {
	var v []Verdict
	if c == PluginSLO {
		v = append(v, Verdict{Config: r.Config, Target: "zero SLO violations in every repeat",
			Met: r.Violations.N > 0 && r.ViolatedMax == 0,
			Got: fmt.Sprintf("%d windows over the SLO at most in a repeat (%d repeats counted)", r.ViolatedMax, r.Violations.N)})
		if upstream != nil {
			v = append(v, Verdict{Config: r.Config, Target: fmt.Sprintf("utilisation ≥ upstream's best + %.0f points", t.MinGainOverUpstream),
				Met: r.UtilisationGain.Median >= upstream.UtilisationGain.Median+t.MinGainOverUpstream,
				Got: fmt.Sprintf("%+.1f vs upstream's %+.1f points over LS alone", r.UtilisationGain.Median, upstream.UtilisationGain.Median)})
		}
	}
	if c == Recommended && upstream != nil {
		v = append(v, Verdict{Config: r.Config, Target: "the recommended configuration's worst phase range entirely below upstream's",
			Met: r.WorstPhase.N > 0 && upstream.WorstPhase.N > 0 && r.WorstPhase.Max < upstream.WorstPhase.Min,
			Got: fmt.Sprintf("[%.2f–%.2f×] vs upstream's [%.2f–%.2f×]", r.WorstPhase.Min, r.WorstPhase.Max, upstream.WorstPhase.Min, upstream.WorstPhase.Max)})
	}
	return v
}
