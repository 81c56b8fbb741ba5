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
	// BatchMin and BatchMax are the setting's batch CPU-s over the
	// repeats (Batch is their median): the frontier's own range.
	BatchMin, BatchMax float64
	// Violations are the setting's SLO windows violated.
	Violations Violations
}

// FrontierRow is one load level and SLO of the sweep.
type FrontierRow struct {
	Level, SLO         float64
	Static, Controlled Best
	// Gain is Controlled.Batch ÷ Static.Batch (+Inf when no static
	// threshold meets the SLO and the controller does; NaN when neither).
	Gain float64
	// SLO control (configuration 6) declaring this SLO (SLORatio = SLO):
	// SLORan says it ran; SLOControl is its row (Setting "" when its p99
	// missed the SLO: Batch then counts 0), SLOGain SLOControl.Batch ÷
	// Static.Batch as Gain.
	SLORan     bool
	SLOControl Best
	SLOGain    float64
}

// bestOf is r as a frontier's Best.
func bestOf(r Row) Best {
	return Best{Setting: r.Setting, Batch: r.BatchCPUSeconds.Median, P99Ratio: r.P99Ratio, Share: r.BatchShare,
		BatchMin: r.BatchCPUSeconds.Min, BatchMax: r.BatchCPUSeconds.Max, Violations: r.Violations}
}

// gainOf is a ÷ static (+Inf when only a has batch, NaN when neither).
func gainOf(a, static float64) float64 {
	switch {
	case static > 0:
		return a / static
	case a > 0:
		return math.Inf(1)
	}
	return math.NaN()
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
				b = bestOf(r)
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
			fr.Gain = gainOf(fr.Controlled.Batch, fr.Static.Batch)
			for _, r := range rows {
				if r.Config != SLOControlled || r.Level != l || r.SLORatio != slo {
					continue
				}
				fr.SLORan, fr.SLOControl = true, bestOf(r)
				if math.IsNaN(r.P99Ratio) || r.P99Ratio > slo {
					// Its p99 missed the SLO it declared: no batch counts.
					fr.SLOControl.Setting, fr.SLOControl.Batch = "", 0
				}
			}
			fr.SLOGain = math.NaN()
			if fr.SLORan {
				fr.SLOGain = gainOf(fr.SLOControl.Batch, fr.Static.Batch)
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
	for _, f := range fr {
		if !f.SLORan {
			continue
		}
		// Met: its p99 met the SLO it declared and its batch is at least
		// the static frontier's (where no static threshold meets it,
		// meeting it is enough).
		met := f.SLOControl.Setting != "" && (math.IsInf(f.SLOGain, 1) || f.SLOGain >= MinFrontierGain)
		out = append(out, Target{
			Name: fmt.Sprintf("at %s, declared p99 ≤ %.1f× alone: SLO control's batch ≥ the static frontier's", pct(f.Level), f.SLO),
			Met:  met,
			Measured: fmt.Sprintf("SLO control %s: %.1f CPU-s, SLO windows violated %s; static %s: %s CPU-s; %s",
				sloSettingText(f.SLOControl), f.SLOControl.Batch, ShareText(f.SLOControl.Violations), settingText(f.Static), batchRange(f.Static), gainText(f.SLOGain)),
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

// sloSettingText says how SLO control's row met its declared SLO.
func sloSettingText(b Best) string {
	if b.Setting == "" {
		return fmt.Sprintf("missed it (%.2f×)", b.P99Ratio)
	}
	return fmt.Sprintf("met it (%.2f×)", b.P99Ratio)
}

// batchRange prints a setting's batch CPU-s as median [min–max] over the
// repeats.
func batchRange(b Best) string {
	if b.Setting == "" || b.BatchMin == b.BatchMax {
		return fmt.Sprintf("%.1f", b.Batch)
	}
	return fmt.Sprintf("%.1f [%.1f–%.1f]", b.Batch, b.BatchMin, b.BatchMax)
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
// The static threshold's batch is its median [min–max] over the repeats;
// the SLO control columns are "-" where configuration 6 did not run.
func PrintFrontier(w io.Writer, fr []FrontierRow) {
	fmt.Fprintln(w, "| LS load | p99 target | best static threshold (p99 ÷ alone) | its batch CPU-s | controller target (p99 ÷ alone) | its batch CPU-s | batch ÷ idle | controller ÷ static | SLO control declaring it (p99 ÷ alone) | its batch CPU-s | its SLO windows violated | SLO control ÷ static |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, f := range fr {
		slo, batch, viol, gain := "-", "-", "-", "-"
		if f.SLORan {
			slo, batch, viol, gain = sloSettingText(f.SLOControl), batchRange(f.SLOControl), ShareText(f.SLOControl.Violations), gainText(f.SLOGain)
		}
		fmt.Fprintf(w, "| %s | %.1f× | %s | %s | %s | %.1f | %s | %s | %s | %s | %s | %s |\n", pct(f.Level), f.SLO,
			settingText(f.Static), batchRange(f.Static), settingText(f.Controlled), f.Controlled.Batch, shareText(f.Controlled.Share), gainText(f.Gain),
			slo, batch, viol, gain)
	}
}
