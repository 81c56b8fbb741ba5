package colocation

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// The SLO sweep's targets (issue "Relieve pressure without killing, and a
// CPU budget that beats static suppress at every target").
const (
	// MinFrontierGain: at every level and SLO, the controller's batch ≥
	// this × the best static upstream threshold's that meets the same SLO
	// (never worse than static).
	MinFrontierGain = 1.0
	// WinGain and MinWins: at MinWins or more of the levels × SLOs, the
	// controller's batch ≥ WinGain × the static frontier's.
	WinGain = 1.25
	MinWins = 2
)

// DefaultSLOs are the sweep's LS p99 targets (× LS alone).
var DefaultSLOs = []float64{1.1, 1.3, 1.5, 2}

// Best is the setting of one configuration with the most batch among those
// meeting an SLO.
type Best struct {
	// Setting is "" when no setting met the SLO (Batch 0).
	Setting  string
	Batch    float64
	P99Ratio float64
	// Share is Batch ÷ the CPU-s LS alone leaves idle (NaN: not computed).
	Share float64
}

// FrontierRow is one load level and SLO of the sweep.
type FrontierRow struct {
	Level, SLO         float64
	Static, Controlled Best
	// Gain is Controlled.Batch ÷ Static.Batch (+Inf when no static
	// threshold meets the SLO and the controller does; NaN when neither).
	Gain float64
}

// FrontierOf finds, at each level and SLO, the static upstream threshold
// (configuration 3) and the controller target (configuration 5) that give
// batch the most CPU while LS p99 ÷ LS alone (medians) meets the SLO.
func FrontierOf(rows []Row, slos []float64) []FrontierRow {
	var levels []float64
	idle := map[float64]float64{}
	for _, r := range rows {
		if r.Config == LSAlone {
			levels = append(levels, r.Level)
			idle[r.Level] = r.IdleCPUSeconds.Median
		}
	}
	best := func(c Config, level, slo float64) Best {
		b := Best{P99Ratio: math.NaN(), Share: math.NaN()}
		for _, r := range rows {
			if r.Config != c || r.Level != level || math.IsNaN(r.P99Ratio) || r.P99Ratio > slo {
				continue
			}
			if b.Setting == "" || r.BatchCPUSeconds.Median > b.Batch {
				b = Best{Setting: r.Setting, Batch: r.BatchCPUSeconds.Median, P99Ratio: r.P99Ratio, Share: r.BatchShare}
			}
		}
		if b.Setting == "" {
			b.Share = 0
			if idle[level] <= 0 {
				b.Share = math.NaN()
			}
		}
		return b
	}
	var out []FrontierRow
	for _, l := range levels {
		for _, slo := range slos {
			fr := FrontierRow{Level: l, SLO: slo, Static: best(UpstreamBest, l, slo), Controlled: best(Controlled, l, slo)}
			switch {
			case fr.Static.Batch > 0:
				fr.Gain = fr.Controlled.Batch / fr.Static.Batch
			case fr.Controlled.Batch > 0:
				fr.Gain = math.Inf(1)
			default:
				fr.Gain = math.NaN()
			}
			out = append(out, fr)
		}
	}
	return out
}

// FrontierTargets checks the sweep's targets: at every level and SLO the
// controller at least the static frontier (where neither meets the SLO, a
// tie at none), at MinWins of them WinGain × it, and no eviction anywhere.
func FrontierTargets(fr []FrontierRow, rows []Row) []Target {
	var out []Target
	wins := 0
	var won []string
	for _, f := range fr {
		met := math.IsNaN(f.Gain) || f.Gain >= MinFrontierGain
		if f.Gain >= WinGain {
			wins++
			won = append(won, fmt.Sprintf("%s/%.1f×", pct(f.Level), f.SLO))
		}
		out = append(out, Target{
			Name: fmt.Sprintf("at %s, p99 ≤ %.1f× alone: controller batch ≥ the best static threshold's", pct(f.Level), f.SLO),
			Met:  met,
			Measured: fmt.Sprintf("controller %s: %.1f CPU-s; static %s: %.1f CPU-s; %s",
				settingText(f.Controlled), f.Controlled.Batch, settingText(f.Static), f.Static.Batch, gainText(f.Gain)),
		})
	}
	out = append(out, Target{
		Name:     fmt.Sprintf("controller batch ≥ %.2f× the static frontier's at %d or more of the %d targets", WinGain, MinWins, len(fr)),
		Met:      wins >= MinWins,
		Measured: fmt.Sprintf("%d (%s)", wins, strings.Join(won, ", ")),
	})
	evicted := 0
	for _, r := range rows {
		evicted += r.Evicted
	}
	out = append(out, Target{Name: "no YARN container evicted (CPU-only episodes)", Met: evicted == 0,
		Measured: fmt.Sprintf("%d evicted", evicted)})
	return out
}

func settingText(b Best) string {
	if b.Setting == "" {
		return "none meets it"
	}
	return fmt.Sprintf("%s (%.2f×)", b.Setting, b.P99Ratio)
}

func gainText(g float64) string {
	switch {
	case math.IsNaN(g):
		return "neither meets it"
	case math.IsInf(g, 1):
		return "only the controller meets it"
	}
	return fmt.Sprintf("%.2f×", g)
}

// PrintFrontier writes the sweep as a Markdown table.
func PrintFrontier(w io.Writer, fr []FrontierRow) {
	fmt.Fprintln(w, "| LS load | p99 target | best static threshold (p99 ÷ alone) | its batch CPU-s | controller target (p99 ÷ alone) | its batch CPU-s | batch ÷ idle | controller ÷ static |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, f := range fr {
		fmt.Fprintf(w, "| %s | %.1f× | %s | %.1f | %s | %.1f | %s | %s |\n", pct(f.Level), f.SLO,
			settingText(f.Static), f.Static.Batch, settingText(f.Controlled), f.Controlled.Batch, shareText(f.Controlled.Share), gainText(f.Gain))
	}
}
