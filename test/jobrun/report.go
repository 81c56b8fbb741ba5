package jobrun

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/test/colocation"
	"github.com/koordlet-yarn/koordlet-yarn/test/jobs"
)

// Report prints the table (medians, ranges over the repeats) and the
// targets' verdicts of every configuration that ran beside the references.
func Report(w io.Writer, cs []jobs.Config, outcomes map[jobs.Config][]jobs.Outcome, t jobs.Targets) error {
	ref, err := jobs.RefOf(outcomes[jobs.LSAlone], outcomes[jobs.BatchAlone])
	if err != nil {
		return err
	}
	ref.SLOTarget = t.SLO
	rows := map[jobs.Config]jobs.Row{}
	fmt.Fprintf(w, "references: LS alone's utilisation %.1f%%, its p99 per phase", 100*ref.Utilisation)
	for _, p := range ref.PhaseP99 {
		fmt.Fprintf(w, " %.1f", float64(p)/float64(time.Millisecond))
	}
	fmt.Fprintf(w, " ms; batch alone: %d jobs' times", len(ref.JobTimes))
	for _, o := range outcomes[jobs.BatchAlone] {
		fmt.Fprintf(w, "; a run: %d of %d jobs failed, %d unfinished, %d containers launched", o.FailedJobs, o.Jobs, o.Unfinished, o.Launched)
	}
	fmt.Fprintln(w)
	if t.SLO > 0 {
		var own colocation.Violations
		for _, o := range outcomes[jobs.LSAlone] {
			own = own.Add(o.ViolationsOf(t.SLO))
		}
		fmt.Fprintf(w, "the declared SLO: p99 ≤ %.2f ms over %v windows (LS alone itself over it in %s of its windows)\n",
			float64(t.SLO)/float64(time.Millisecond), colocation.SLOWindow, colocation.ShareText(own))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "configuration\tjobs\tfailed jobs\tunfinished\tfailed attempts\tlaunched\tkilled\tpreempted\twith NM pod\teviction rate\tjob time p50 / p95 ÷ alone\tworst phase LS p99 ÷ alone\tutilisation vs LS alone\tbatch CPU-s\tkoordlet CPU-s")
	for _, c := range cs {
		if c == jobs.LSAlone || c == jobs.BatchAlone {
			continue
		}
		row, err := jobs.RowOf(c.String(), outcomes[c], ref)
		if err != nil {
			return err
		}
		rows[c] = row
		launched := 0
		for _, o := range outcomes[c] {
			launched += o.Launched
		}
		rec := ""
		if c == jobs.Recommended {
			rec = " (recommended)"
		}
		fmt.Fprintf(tw, "%s%s\t%d\t%s\t%s\t%s\t%d\t%g\t%g\t%g\t%s\t%s / %s\t%s (phase %d)\t%s\t%s points\t%s\t%s\n",
			c, rec, outcomes[c][0].Jobs, spread(row.FailedJobs, "%.0f"), spread(row.Unfinished, "%.0f"), spread(row.FailedAttempts, "%.0f"), launched/len(outcomes[c]),
			row.Killed, row.Preempted, row.WithNMPod, spread(pct(row.EvictionRate), "%.2f%%"),
			spread(row.JobP50, "%.2f×"), spread(row.JobP95, "%.2f×"), spread(row.WorstPhase, "%.2f×"), row.WorstPhaseIndex, violationText(row),
			spread(row.UtilisationGain, "%+.1f"), spread(row.BatchCPU, "%.0f"), spread(row.Koordlet, "%.1f"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var upstream *jobs.Row
	if r, ok := rows[jobs.UpstreamBest]; ok {
		upstream = &r
	}
	fmt.Fprintln(w, "\ntargets (medians over the repeats):")
	for _, c := range cs {
		if c == jobs.LSAlone || c == jobs.BatchAlone {
			continue
		}
		up := upstream
		if c == jobs.UpstreamBest {
			up = nil
		}
		for _, v := range append(t.Check(rows[c], up), t.CheckSLO(c, rows[c], upstream)...) {
			verdict := "not met"
			if v.Met {
				verdict = "met"
			}
			fmt.Fprintf(w, "  %-50s %-80s %-8s %s\n", v.Config, v.Target, verdict, v.Got)
		}
	}
	return nil
}

// spread prints a median and, over more than one repeat, its range.
func spread(s colocation.Spread, format string) string {
	if s.N == 0 {
		return "–" // nothing to compare (e.g. job times without batch alone)
	}
	m := fmt.Sprintf(format, s.Median)
	if s.N <= 1 || s.Min == s.Max {
		return m
	}
	return m + " [" + fmt.Sprintf(format, s.Min) + "–" + fmt.Sprintf(format, s.Max) + "]"
}

func pct(s colocation.Spread) colocation.Spread {
	return colocation.Spread{Min: 100 * s.Min, Median: 100 * s.Median, Max: 100 * s.Max, N: s.N}
}

// violationText prints a row's SLO violation share over its repeats ("-"
// without a declared SLO).
func violationText(r jobs.Row) string {
	if r.Violations.N == 0 {
		return "-"
	}
	return spread(pct(r.Violations), "%.1f%%")
}
