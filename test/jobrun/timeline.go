package jobrun

import (
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/koordlet-yarn/koordlet-yarn/test/colocation"
)

// Timeline is one day of one configuration, phase by phase, with its
// evictions as marks.
type Timeline struct {
	Phases []Point
	Marks  []Mark
	// SLO is koordlet's slack and winning signal through the day
	// (every seriesEvery).
	SLO []SLOSample
}

// Point is a phase's end.
type Point struct {
	At    time.Duration
	Level float64
	Rate  int
	P99   time.Duration
	// Node and Batch are the node's utilisation (0–1) and YARN's CPU
	// (cores) over the phase.
	Node, Batch float64
	// LS and Koordlet are the LS pod's and koordlet's CPU (cores).
	LS, Koordlet float64
	// Capacity is what the RM holds for the node at the phase's end.
	Capacity Capacity
	// Violations counts the phase's SLO windows over the declared target
	// (none counted without one).
	Violations colocation.Violations
	// Stalls are what LS and the node waited for over the phase.
	Stalls colocation.Stalls
}

// Mark is an eviction: a container koordlet killed, the NodeManager pod
// evicted (every container with it).
type Mark struct {
	At   time.Duration
	Kind string
}

// Plot draws the timeline (gonum/plot, SVG, as the step response's): LS
// load and p99 on top, the phases with SLO windows violated marked; YARN's
// capacity (vcores) and CPU use in the middle, the evictions as marks;
// koordlet's SLO slack and the signal that won each step at the bottom.
func (tl Timeline) Plot(title, file string) error {
	top := plot.New()
	top.Title.Text = title
	top.Y.Label.Text = "LS p99 (ms) / LS load (% of the node ÷ 10)"
	bottom := plot.New()
	bottom.X.Label.Text = "minutes into the day"
	bottom.Y.Label.Text = "cores / vcores"
	var p99, load, capv, use, node plotter.XYs
	for _, p := range tl.Phases {
		x := p.At.Minutes()
		if p.Rate > 0 {
			p99 = append(p99, plotter.XY{X: x, Y: float64(p.P99) / float64(time.Millisecond)})
		}
		load = append(load, plotter.XY{X: x, Y: 10 * p.Level})
		if p.Capacity.VCores >= 0 {
			capv = append(capv, plotter.XY{X: x, Y: float64(p.Capacity.VCores)})
		}
		use = append(use, plotter.XY{X: x, Y: p.Batch})
		node = append(node, plotter.XY{X: x, Y: p.Node * 2})
	}
	if err := colocation.AddLine(top, p99, "LS p99 (ms)", 0); err != nil {
		return err
	}
	if err := colocation.AddLine(top, load, "LS load (% ÷ 10)", 1); err != nil {
		return err
	}
	if err := colocation.AddLine(bottom, capv, "YARN capacity on the RM (vcores)", 2); err != nil {
		return err
	}
	if err := colocation.AddLine(bottom, use, "YARN CPU use (cores)", 3); err != nil {
		return err
	}
	if err := colocation.AddLine(bottom, node, "node CPU use (cores)", 4); err != nil {
		return err
	}
	kinds := map[string]plotter.XYs{}
	for _, m := range tl.Marks {
		kinds[m.Kind] = append(kinds[m.Kind], plotter.XY{X: m.At.Minutes(), Y: 0})
	}
	i := 5
	for kind, xys := range kinds {
		if err := addMarks(bottom, xys, kind, i); err != nil {
			return err
		}
		i++
	}
	var violated plotter.XYs
	for _, p := range tl.Phases {
		if p.Violations.Violated > 0 {
			violated = append(violated, plotter.XY{X: p.At.Minutes(), Y: float64(p.P99) / float64(time.Millisecond)})
		}
	}
	if err := addMarks(top, violated, "a phase with SLO windows violated", i); err != nil {
		return err
	}
	slo, err := tl.sloPlot(i + 1)
	if err != nil {
		return err
	}
	for _, p := range []*plot.Plot{top, bottom} {
		p.Add(plotter.NewGrid())
		p.Legend.Top = true
		p.Y.Min = 0
	}
	slo.Add(plotter.NewGrid())
	slo.Legend.Top = true
	return colocation.WriteSVG(file, [][]*plot.Plot{{top}, {bottom}, {slo}}, 9*vg.Inch, 10*vg.Inch)
}

// sloPlot is the timeline's bottom: koordlet's worst declared slack (a
// line; below 0 the SLO is violated) and, above it, which signal decided
// each sampled step (a mark per signal at 1.1).
func (tl Timeline) sloPlot(color int) (*plot.Plot, error) {
	p := plot.New()
	p.X.Label.Text = "minutes into the day"
	p.Y.Label.Text = "SLO slack ((target − p99) ÷ target)"
	var slack plotter.XYs
	winners := map[string]plotter.XYs{}
	var order []string
	for _, s := range tl.SLO {
		x := s.At.Minutes()
		if s.HasSlack {
			slack = append(slack, plotter.XY{X: x, Y: s.Slack})
		}
		if s.Dominant != "" {
			if _, ok := winners[s.Dominant]; !ok {
				order = append(order, s.Dominant)
			}
			winners[s.Dominant] = append(winners[s.Dominant], plotter.XY{X: x, Y: 1.1})
		}
	}
	if err := colocation.AddLine(p, slack, "worst SLO slack (koordlet)", color); err != nil {
		return nil, err
	}
	for i, signal := range order {
		if err := addMarks(p, winners[signal], "winning signal: "+signal, color+1+i); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// addMarks adds xys to p as crosses of one color, with a legend entry
// (nothing for none).
func addMarks(p *plot.Plot, xys plotter.XYs, legend string, color int) error {
	if len(xys) == 0 {
		return nil
	}
	s, err := plotter.NewScatter(xys)
	if err != nil {
		return err
	}
	s.Color, s.Radius = plotutil.Color(color), vg.Points(4)
	s.Shape = draw.CrossGlyph{}
	p.Add(s)
	p.Legend.Add(legend, s)
	return nil
}
