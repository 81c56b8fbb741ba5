package colocation

import (
	"fmt"
	"math"
	"os"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// writeStepPlot draws the step response (gonum/plot, SVG): the LS p99 per
// half-second on top; the batch budget and YARN's CPU use below; the step
// at t = 0.
func writeStepPlot(file string, r StepResult) error {
	top := plot.New()
	top.Title.Text = fmt.Sprintf("LS load %.0f%% → %.0f%% at t = 0, interference control target %v", 100*r.Opts.From, 100*r.Opts.To, r.Opts.Target)
	top.Y.Label.Text = "ms"
	var lat plotter.XYs
	for _, b := range r.Bins {
		if b.P99 > time.Hour {
			continue
		}
		lat = append(lat, plotter.XY{X: (b.At + stepBin/2).Seconds(), Y: ms(b.P99)})
	}
	if err := AddLine(top, lat, "LS request p99", 0); err != nil {
		return err
	}
	var sig, target plotter.XYs
	for _, s := range r.Samples {
		if s.Signal >= 0 {
			sig = append(sig, plotter.XY{X: s.At.Seconds(), Y: ms(s.Signal)})
		}
	}
	if err := AddLine(top, sig, "LS interference wait p99 (the controller's signal, 1 s)", 3); err != nil {
		return err
	}
	target = plotter.XYs{{X: -r.Opts.Before.Seconds(), Y: ms(r.Opts.Target)}, {X: r.Opts.After.Seconds(), Y: ms(r.Opts.Target)}}
	if err := AddLine(top, target, "signal target", 4); err != nil {
		return err
	}
	bottom := plot.New()
	bottom.X.Label.Text = "seconds from the step"
	bottom.Y.Label.Text = "cores"
	var budget, usage plotter.XYs
	for _, s := range r.Samples {
		if !math.IsNaN(s.Budget) {
			budget = append(budget, plotter.XY{X: s.At.Seconds(), Y: s.Budget})
		}
		usage = append(usage, plotter.XY{X: s.At.Seconds(), Y: s.Usage})
	}
	if err := AddLine(bottom, budget, "batch budget (besteffort cfs quota)", 1); err != nil {
		return err
	}
	if err := AddLine(bottom, usage, "YARN CPU use", 2); err != nil {
		return err
	}
	for _, p := range []*plot.Plot{top, bottom} {
		p.Add(plotter.NewGrid())
		p.Legend.Top = true
		p.X.Min, p.X.Max = -r.Opts.Before.Seconds(), r.Opts.After.Seconds()
	}
	bottom.Y.Min = 0
	top.Y.Min = 0
	return WriteSVG(file, [][]*plot.Plot{{top}, {bottom}}, 8*vg.Inch, 7*vg.Inch)
}

// WriteSVG draws plots (rows of columns, their axes aligned) into an SVG
// file of w × h.
func WriteSVG(file string, plots [][]*plot.Plot, w, h vg.Length) error {
	c := vgsvg.New(w, h)
	tiles := draw.Tiles{Rows: len(plots), Cols: len(plots[0]), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8), PadY: vg.Points(8)}
	canvases := plot.Align(plots, tiles, draw.New(c))
	for i, row := range plots {
		for j, p := range row {
			p.Draw(canvases[i][j])
		}
	}
	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("write the plot: %w", err)
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("write the plot %s: %w", file, err)
	}
	return f.Close()
}

// AddLine adds xys to p as a line named name in the plots' colour i
// (nothing for no points).
func AddLine(p *plot.Plot, xys plotter.XYs, name string, color int) error {
	if len(xys) == 0 {
		return nil
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return fmt.Errorf("plot %s: %w", name, err)
	}
	l.Color = plotColor(color)
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}
