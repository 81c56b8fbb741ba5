package colocation

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"
)

// Episode is one measured run of one configuration at one load level.
type Episode struct {
	Config Config
	// Setting names the variant of Config ("" when there is one).
	Setting string
	// Level is the LS load as a share of the node's CPU (0.3: 30%).
	Level  float64
	Repeat int
	// Window is the measured time (after the warm-up).
	Window time.Duration
	LS     Latencies
	// PacerLagP99 is the 99th percentile of how late the load generator
	// sent a request against its open-loop schedule (a client that keeps
	// up stays well under a millisecond).
	PacerLagP99 time.Duration
	// BatchCPUSeconds is the CPU time of every YARN container in the
	// window (cpuacct of the YARN hierarchy root).
	BatchCPUSeconds float64
	// LSCPUSeconds and LoadgenCPUSeconds are the CPU time of the LS pod
	// and of the load generator in the window.
	LSCPUSeconds, LoadgenCPUSeconds float64
	// KoordletCPUSeconds is koordlet's CPU time in the window (user +
	// system of its process; it runs outside kubepods, as a host process
	// competing with LS at normal weight).
	KoordletCPUSeconds float64
	// BatchPageFaults are the YARN hierarchy's page faults in the window
	// (memory.stat), BatchMemoryHighEvents the times it went over a
	// memory.high (memory.events; -1 on cgroup v1).
	BatchPageFaults, BatchMemoryHighEvents int64
	// NodeUtilisation is the busy share of all CPUs in the window (/proc/stat).
	NodeUtilisation float64
	// CPUs is the node's CPU count.
	CPUs int
	// Evicted counts YARN containers that ended before the harness ended
	// them (killed from outside: an eviction), over the whole episode.
	Evicted int
	// Events counts the Kubernetes Events of the episode by reason.
	Events map[string]int
	// Knobs describes koordlet's BE settings at the window's end (for the
	// log).
	Knobs string
	// Windows are the LS p99s of the window's SLOWindow windows (client
	// side, WindowQuantiles); SLOTarget the p99 the LS pod declared (0:
	// none declared: the rows count violations of SLOFactor × LS alone's
	// p99 at the level).
	Windows   []time.Duration
	SLOTarget time.Duration
	// SLORatio is the ratio to LS alone's p99 that SLOTarget was declared
	// at (configuration 6 in the sweep; 0 otherwise).
	SLORatio float64
}

// Row aggregates the repeats of one configuration at one load level.
type Row struct {
	Config             Config
	Setting            string
	Level              float64
	P50, P99, P999     Spread // milliseconds
	ErrorRate          Spread
	BatchCPUSeconds    Spread
	NodeUtilisation    Spread
	LoadgenCPUSeconds  Spread
	KoordletCPUSeconds Spread
	PacerLagP99        Spread // milliseconds
	// IdleCPUSeconds is the CPU left idle in the window (from
	// NodeUtilisation), of CapacityCPUSeconds (CPUs × window).
	IdleCPUSeconds     Spread
	CapacityCPUSeconds float64
	Evicted            int
	Events             map[string]int
	// P99Ratio is the median p99 ÷ the median p99 of LS alone at the same
	// level; BatchShare the median batch CPU-seconds ÷ the median CPU left
	// idle with LS alone (NaN where there is no LS-alone row).
	P99Ratio, BatchShare float64
	// Violations counts, over the repeats, the SLO windows whose p99 is
	// above the declared target (the episodes' own, or SLOFactor × LS
	// alone's median p99 at the level).
	Violations Violations
	// SLORatio is the episodes' (Episode.SLORatio).
	SLORatio float64
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Rows aggregates episodes into one row per configuration and level,
// ordered by level, then configuration.
func Rows(eps []Episode) []Row {
	type key struct {
		c Config
		s string
		l float64
	}
	groups := map[key][]Episode{}
	var keys []key
	for _, e := range eps {
		k := key{e.Config, e.Setting, e.Level}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], e)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].l != keys[j].l {
			return keys[i].l < keys[j].l
		}
		if keys[i].c != keys[j].c {
			return keys[i].c < keys[j].c
		}
		return keys[i].s < keys[j].s
	})
	spread := func(g []Episode, f func(Episode) float64) Spread {
		vs := make([]float64, len(g))
		for i, e := range g {
			vs[i] = f(e)
		}
		return SpreadOf(vs)
	}
	var rows []Row
	for _, k := range keys {
		g := groups[k]
		r := Row{Config: k.c, Setting: k.s, Level: k.l, Events: map[string]int{},
			P50:                spread(g, func(e Episode) float64 { return ms(e.LS.P50) }),
			P99:                spread(g, func(e Episode) float64 { return ms(e.LS.P99) }),
			P999:               spread(g, func(e Episode) float64 { return ms(e.LS.P999) }),
			ErrorRate:          spread(g, func(e Episode) float64 { return e.LS.ErrorRate() }),
			BatchCPUSeconds:    spread(g, func(e Episode) float64 { return e.BatchCPUSeconds }),
			NodeUtilisation:    spread(g, func(e Episode) float64 { return e.NodeUtilisation }),
			LoadgenCPUSeconds:  spread(g, func(e Episode) float64 { return e.LoadgenCPUSeconds }),
			KoordletCPUSeconds: spread(g, func(e Episode) float64 { return e.KoordletCPUSeconds }),
			PacerLagP99:        spread(g, func(e Episode) float64 { return ms(e.PacerLagP99) }),
			IdleCPUSeconds: spread(g, func(e Episode) float64 {
				return IdleCPUSeconds(e.NodeUtilisation, e.CPUs, e.Window)
			}),
		}
		r.CapacityCPUSeconds = float64(g[0].CPUs) * g[0].Window.Seconds()
		r.SLORatio = g[0].SLORatio
		for _, e := range g {
			r.Evicted += e.Evicted
			for reason, n := range e.Events {
				r.Events[reason] += n
			}
		}
		rows = append(rows, r)
	}
	for i := range rows {
		rows[i].P99Ratio, rows[i].BatchShare = math.NaN(), math.NaN()
		for _, alone := range rows {
			if alone.Config == LSAlone && alone.Level == rows[i].Level {
				rows[i].P99Ratio = Ratio(rows[i].P99.Median, alone.P99.Median)
				if alone.IdleCPUSeconds.Median >= MinIdleShare*alone.CapacityCPUSeconds {
					rows[i].BatchShare = Ratio(rows[i].BatchCPUSeconds.Median, alone.IdleCPUSeconds.Median)
				}
			}
		}
	}
	for i, k := range keys {
		var alone time.Duration
		for _, r := range rows {
			if r.Config == LSAlone && r.Level == k.l {
				alone = time.Duration(r.P99.Median * float64(time.Millisecond))
			}
		}
		for _, e := range groups[k] {
			target := e.SLOTarget
			if target <= 0 {
				target = SLOTarget(alone, SLOFactor)
			}
			rows[i].Violations = rows[i].Violations.Add(ViolationsOf(e.Windows, target))
		}
	}
	return rows
}

// Target is one of the targets with its measured values.
type Target struct {
	Name string
	Met  bool
	// Measured states the values the verdict rests on.
	Measured string
}

// Limits of the targets.
const (
	// MinIdleShare: below this share of the node idle with LS alone (a
	// machine busy with other work) batch ÷ idle is not computed.
	MinIdleShare  = 0.05
	MaxP99Ratio   = 1.1
	MinBatchShare = 0.9
)

// Targets evaluates the targets on rows: with the plugin set, LS p99 ≤ 1.1
// × LS alone and batch ≥ 90% of the CPU LS alone leaves idle, at every
// level; the plugin set strictly better than upstream's best on LS p99 or
// batch work and no worse on the other, at every level; with SLO control
// (configuration 6), no SLO window over its declared target at any level;
// no YARN container evicted in any episode (none crosses a memory
// threshold, so all are CPU-only).
func Targets(rows []Row) []Target {
	byKey := map[Config]map[float64]Row{}
	var levels []float64
	evicted := 0
	for _, r := range rows {
		if byKey[r.Config] == nil {
			byKey[r.Config] = map[float64]Row{}
		}
		byKey[r.Config][r.Level] = r
		if r.Config == LSAlone {
			levels = append(levels, r.Level)
		}
		evicted += r.Evicted
	}
	var out []Target
	for _, l := range levels {
		p, ok := byKey[PluginSet][l]
		if !ok {
			continue
		}
		out = append(out, Target{
			Name: fmt.Sprintf("plugin set at %s: LS p99 ≤ %.1f× alone, batch ≥ %.0f%% of idle CPU", pct(l), MaxP99Ratio, 100*MinBatchShare),
			Met:  p.P99Ratio <= MaxP99Ratio && p.BatchShare >= MinBatchShare,
			Measured: fmt.Sprintf("p99 %.2f ms = %.2f× alone; batch %.1f CPU-s = %s of idle",
				p.P99.Median, p.P99Ratio, p.BatchCPUSeconds.Median, shareText(p.BatchShare)),
		})
		u, ok := byKey[UpstreamBest][l]
		if !ok {
			continue
		}
		better := (p.P99.Median < u.P99.Median && p.BatchCPUSeconds.Median >= u.BatchCPUSeconds.Median) ||
			(p.BatchCPUSeconds.Median > u.BatchCPUSeconds.Median && p.P99.Median <= u.P99.Median)
		out = append(out, Target{
			Name: fmt.Sprintf("plugin set vs upstream's best at %s: better on p99 or batch, no worse on the other", pct(l)),
			Met:  better,
			Measured: fmt.Sprintf("p99 %.2f vs %.2f ms; batch %.1f vs %.1f CPU-s",
				p.P99.Median, u.P99.Median, p.BatchCPUSeconds.Median, u.BatchCPUSeconds.Median),
		})
	}
	for _, l := range levels {
		if r, ok := byKey[SLOControlled][l]; ok {
			out = append(out, Target{Name: fmt.Sprintf("SLO control at %s: no SLO window violated in any repeat", pct(l)),
				Met: r.Violations.Windows > 0 && r.Violations.Violated == 0, Measured: "violated " + ShareText(r.Violations)})
		}
	}
	out = append(out, Target{Name: "no YARN container evicted (CPU-only episodes)", Met: evicted == 0,
		Measured: fmt.Sprintf("%d evicted", evicted)})
	return out
}

// shareText prints a batch share, or why there is none.
func shareText(v float64) string {
	if math.IsNaN(v) {
		return "n/a (LS alone left the node under 5% idle)"
	}
	return fmt.Sprintf("%.0f%%", 100*v)
}

func pct(level float64) string { return fmt.Sprintf("%.0f%%", 100*level) }

// spreadCell prints a spread as "median (min–max)" with the given format.
func spreadCell(s Spread, format string) string {
	if s.N <= 1 {
		return fmt.Sprintf(format, s.Median)
	}
	return fmt.Sprintf(format+" ("+format+"–"+format+")", s.Median, s.Min, s.Max)
}

// scale multiplies a spread by k.
func scale(s Spread, k float64) Spread {
	return Spread{Min: s.Min * k, Median: s.Median * k, Max: s.Max * k, N: s.N}
}

func ratioCell(v float64, format string) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf(format, v)
}

func eventsCell(ev map[string]int) string {
	if len(ev) == 0 {
		return "0"
	}
	var reasons []string
	for r := range ev {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	var parts []string
	for _, r := range reasons {
		parts = append(parts, fmt.Sprintf("%s×%d", r, ev[r]))
	}
	return strings.Join(parts, ", ")
}

// PrintTable writes rows as a Markdown table: medians with (min–max) over
// the repeats.
func PrintTable(w io.Writer, rows []Row) {
	fmt.Fprintln(w, "| configuration | LS load | LS p50 ms | LS p99 ms | LS p99.9 ms | p99 ÷ alone | SLO windows violated | LS errors | batch CPU-s | batch ÷ idle | node CPU | koordlet CPU-s | evicted | Events |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, r := range rows {
		name := r.Config.String()
		if r.Setting != "" {
			name += " (" + r.Setting + ")"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %s |\n",
			name, pct(r.Level),
			spreadCell(r.P50, "%.2f"), spreadCell(r.P99, "%.2f"), spreadCell(r.P999, "%.2f"),
			ratioCell(r.P99Ratio, "%.2f×"), ShareText(r.Violations),
			fmt.Sprintf("%.2f%%", 100*r.ErrorRate.Max),
			spreadCell(r.BatchCPUSeconds, "%.1f"),
			ratioCell(100*r.BatchShare, "%.0f%%"),
			spreadCell(scale(r.NodeUtilisation, 100), "%.0f%%"),
			spreadCell(r.KoordletCPUSeconds, "%.2f"),
			r.Evicted, eventsCell(r.Events))
	}
}

// PrintTargets writes one line per target: met or not, with the values.
func PrintTargets(w io.Writer, ts []Target) {
	for _, t := range ts {
		verdict := "NOT MET"
		if t.Met {
			verdict = "met"
		}
		fmt.Fprintf(w, "- %s: %s (%s)\n", t.Name, verdict, t.Measured)
	}
}

// Print writes the report: the calibration, the table and the targets.
func (r Report) Print(w io.Writer) {
	fmt.Fprintf(w, "LS request: %d passes of work, %v of LS pod CPU each (with LS alone); rates:", r.Passes, r.RequestCPU.Round(time.Microsecond))
	var levels []float64
	for l := range r.Rates {
		levels = append(levels, l)
	}
	sort.Float64s(levels)
	for _, l := range levels {
		fmt.Fprintf(w, " %s = %d req/s", pct(l), r.Rates[l])
	}
	client := "SCHED_FIFO"
	if !r.ClientRealtime {
		client = "SCHED_OTHER"
	}
	fmt.Fprintf(w, "; load generator %s", client)
	fmt.Fprintf(w, "\n%d repeats of %v measured after %v of warm-up; medians (min–max); LS errors: the worst repeat; batch ÷ idle: batch CPU-s ÷ the CPU-s left idle with LS alone; SLO windows violated: %v windows whose p99 is over the declared SLO (SLO control's own, else %.1f× LS alone's p99 at the level), over the repeats\n\n",
		r.Opts.Repeats, r.Opts.Window, r.Opts.Warmup, SLOWindow, SLOFactor)
	PrintTable(w, r.Rows)
	fmt.Fprintln(w)
	if len(r.Frontier) > 0 {
		fmt.Fprintln(w, "SLO sweep: the most batch CPU-s among the settings whose LS p99 meets each target (p99 ÷ LS alone, medians):")
		fmt.Fprintln(w)
		PrintFrontier(w, r.Frontier)
		fmt.Fprintln(w)
	}
	if r.Step != nil {
		r.Step.Print(w)
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "Targets:")
	PrintTargets(w, r.Targets)
}
