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
}

// Mark is an eviction: a container koordlet killed, the NodeManager pod
// evicted (every container with it).
type Mark struct {
	At   time.Duration
	Kind string
}

// Plot draws the timeline (gonum/plot, SVG, as the step response's): LS
// load and p99 on top; YARN's capacity (vcores) and CPU use below, the
// evictions as marks on both.
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
		s, err := plotter.NewScatter(xys)
		if err != nil {
			return err
		}
		s.Color, s.Radius = plotutil.Color(i), vg.Points(4)
		s.Shape = draw.CrossGlyph{}
		bottom.Add(s)
		bottom.Legend.Add(kind, s)
		i++
	}
	for _, p := range []*plot.Plot{top, bottom} {
		p.Add(plotter.NewGrid())
		p.Legend.Top = true
		p.Y.Min = 0
	}
	return colocation.WriteSVG(file, [][]*plot.Plot{{top}, {bottom}}, 9*vg.Inch, 7*vg.Inch)
}
