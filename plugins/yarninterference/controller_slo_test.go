package yarninterference

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/lsslo"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features/featurestest"
)

// newSLONode is newFakeNode with YARNLSSLOControl on and
// YARNInterferenceControl as given.
func newSLONode(t *testing.T, cpuWait bool) *fakeNode {
	n := newFakeNode(t, "-1")
	featurestest.Set(t, map[string]bool{string(features.YARNLSSLOControl): true, string(features.YARNInterferenceControl): cpuWait})
	return n
}

// known: one declared pod, known, with slack s against a 20 ms p99 target.
func (n *fakeNode) known(s float64) {
	target := 20 * time.Millisecond
	w := lsslo.PodSLO{Pod: "default/web", Quantile: 0.99, Target: target, Latency: time.Duration((1 - s) * float64(target)), Known: true, Slack: s}
	n.decl, n.declOK = lsslo.Signal{At: n.clock, Declared: 1, Worst: w, Pods: []lsslo.PodSLO{w}}, true
}

// violate: a step known with slack, then a violation: the floor.
func (n *fakeNode) violate(t *testing.T) {
	n.known(0.5)
	n.step(t)
	n.known(-0.5)
	n.step(t)
	require.Equal(t, int64(55), n.threshold(), "the floor: 5% of the node above LS's 50%")
}

func (n *fakeNode) dominant(sig string) float64 {
	return testutil.ToFloat64(n.c.metrics.dominant.WithLabelValues(sig))
}

func TestControllerEnabled(t *testing.T) {
	n := newFakeNode(t, "-1")
	for _, tt := range []struct{ wait, slo, want bool }{{false, false, false}, {true, false, true}, {false, true, true}, {true, true, true}} {
		featurestest.Set(t, map[string]bool{string(features.YARNInterferenceControl): tt.wait, string(features.YARNLSSLOControl): tt.slo})
		assert.Equal(t, tt.want, n.c.Enabled(), "YARNInterferenceControl %v, YARNLSSLOControl %v", tt.wait, tt.slo)
	}
}

// TestSLONoneDeclared: with YARNLSSLOControl on and no pod declaring an
// SLO (Declared 0, no signal yet, or the signal not installed), the
// controller is exactly today's: the NodeSLO's threshold with
// YARNInterferenceControl off, today's steps with it on.
func TestSLONoneDeclared(t *testing.T) {
	for _, tt := range []struct {
		name    string
		decl    lsslo.Signal
		ok, nil bool
	}{{"declared 0", lsslo.Signal{Declared: 0}, true, false}, {"no signal yet", lsslo.Signal{}, false, false}, {"not installed", lsslo.Signal{}, false, true}} {
		t.Run(tt.name+": the gate alone", func(t *testing.T) {
			n := newSLONode(t, false)
			n.decl, n.declOK = tt.decl, tt.ok
			if tt.nil {
				n.c.opts.SLO = nil
			}
			for i := 0; i < 5; i++ {
				n.step(t)
				assert.Equal(t, int64(80), n.threshold())
			}
			assert.False(t, n.c.applying)
			assert.Equal(t, 1.0, n.dominant(SignalStatic))
		})
	}
	script := []time.Duration{100 * time.Microsecond, 100 * time.Microsecond, 5 * time.Millisecond, 800 * time.Microsecond, 0, 0, 5 * time.Millisecond, 0}
	run := func(t *testing.T, slo bool, decl lsslo.Signal, ok bool) []int64 {
		n := newSLONode(t, true)
		featurestest.Set(t, map[string]bool{string(features.YARNLSSLOControl): slo})
		n.decl, n.declOK = decl, ok
		var got []int64
		for i, w := range script {
			n.wait(w)
			n.ok = i != 4 // a gap in the LS CPU wait
			n.step(t)
			got = append(got, n.threshold())
		}
		return got
	}
	var today []int64
	t.Run("today", func(t *testing.T) { today = run(t, false, lsslo.Signal{}, false) })
	require.Equal(t, []int64{82, 84, 67, 67, 80, 69, 59, 61}, today)
	for _, tt := range []struct {
		name string
		decl lsslo.Signal
		ok   bool
	}{{"declared 0", lsslo.Signal{Declared: 0}, true}, {"no signal yet", lsslo.Signal{}, false}} {
		t.Run(tt.name+": with the LS CPU wait", func(t *testing.T) {
			assert.Equal(t, today, run(t, true, tt.decl, tt.ok))
		})
	}
}

// TestSLOViolationToFloor: a violated SLO gives batch the floor within
// one step (LS 50% + 5% of the node); recovery grows a step per GrowAfter
// quiet intervals; the first cut is the audit's (Last).
func TestSLOViolationToFloor(t *testing.T) {
	n := newSLONode(t, false)
	n.c.opts.Config.GrowAfter = 2
	n.known(0.5)
	n.step(t) // no LS load yet: held, at the NodeSLO's
	assert.Equal(t, int64(80), n.threshold())
	assert.True(t, n.c.applying)
	for i := 0; i < 4; i++ {
		n.step(t)
	}
	assert.Equal(t, int64(84), n.threshold(), "a step per 2 quiet intervals")
	assert.Equal(t, 1.0, n.dominant(SignalSLO))

	n.known(-0.2)
	n.step(t)
	assert.Equal(t, int64(55), n.threshold(), "the floor: 5% of the node above LS's 50%")
	assert.Equal(t, int64(20000), n.beQuota(t), "BE suppress's budget: 5% of 4 CPUs")
	assert.InDelta(t, -0.2, testutil.ToFloat64(n.c.metrics.slack.WithLabelValues()), 1e-9)
	d := n.c.Last()
	assert.Equal(t, SignalSLO, d.Signal)
	assert.Equal(t, Off, d.Action)
	assert.Equal(t, "default/web", d.Pod)
	require.NotNil(t, d.Slack)
	assert.InDelta(t, -0.2, *d.Slack, 1e-9)
	assert.Equal(t, int64(55), d.ThresholdPercent)
	n.step(t)
	assert.Equal(t, int64(55), n.threshold(), "held at the floor")

	n.known(0.5)
	var got []int64
	for i := 0; i < 6; i++ {
		n.step(t)
		got = append(got, n.threshold())
	}
	assert.Equal(t, []int64{55, 57, 57, 59, 59, 61}, got, "a step per 2 quiet intervals")
	assert.Equal(t, 1.0, testutil.ToFloat64(n.c.metrics.signalActions.WithLabelValues(SignalSLO, string(Off))))
}

// TestSLOFloorIsAGuarantee: LS growing after the cut to the floor takes
// the formula's budget below it (55% − 70% of the node); while the
// controller steers, BE suppress computes with cpuSuppressMinPercent at
// least the floor, so the budget stays at 5% of the node (YARN's AMs keep
// breathing) instead of upstream's minimum. A NodeSLO minimum above the
// floor is kept; the controller stopped gives the NodeSLO's back.
func TestSLOFloorIsAGuarantee(t *testing.T) {
	n := newSLONode(t, false)
	n.violate(t)
	n.ls = 70
	n.step(t)
	th, lo := n.thresholds()
	assert.Equal(t, int64(55), th, "held: the budget in force is at the floor")
	assert.Equal(t, int64(5), lo, "the floor as BE suppress's minimum")
	assert.Equal(t, int64(20000), n.beQuota(t), "5% of 4 CPUs, not upstream's minimum")
	n.step(t)
	assert.Equal(t, int64(20000), n.beQuota(t), "and held there")
	assert.Zero(t, testutil.ToFloat64(n.c.metrics.signalActions.WithLabelValues(SignalSLO, string(Cut))), "no cut below the floor")

	n.slo.Spec.ResourceUsedThresholdWithBE.CPUSuppressMinPercent = ptr.To[int64](8)
	n.step(t)
	_, lo = n.thresholds()
	assert.Equal(t, int64(8), lo, "the NodeSLO's minimum above the floor is kept")

	n.slo.Spec.ResourceUsedThresholdWithBE.CPUSuppressMinPercent = nil
	n.c.Stop()
	th, lo = n.thresholds()
	assert.Equal(t, int64(80), th)
	assert.Equal(t, int64(1), lo, "stopped: the NodeSLO's minimum (none)")

	assert.Equal(t, ptr.To[int64](3), floorMin(ptr.To[int64](3), 0), "a floor of 0 changes nothing")
	assert.Nil(t, floorMin(nil, 0))
}

// TestSLOQuietRecoversACut: the service's requests stop after a violation
// (every declared pod quiet: a night, a drain): the cut comes back to the
// NodeSLO's threshold a step per interval and stops there, instead of
// holding batch at the floor for as long as the service sleeps.
func TestSLOQuietRecoversACut(t *testing.T) {
	n := newSLONode(t, false)
	n.violate(t)
	q := lsslo.PodSLO{Pod: "default/web", Quiet: true}
	var got []int64
	for i := 0; i < 16; i++ {
		n.decl, n.declOK = lsslo.Signal{At: n.clock, Declared: 1, Quiet: 1, Pods: []lsslo.PodSLO{q}}, true
		n.step(t)
		got = append(got, n.threshold())
	}
	assert.Equal(t, []int64{57, 59, 61, 63, 65, 67, 69, 71, 73, 75, 77, 79, 80, 80, 80, 80}, got, "a step per interval, up to the NodeSLO's 80%")
	assert.Equal(t, SignalSLO, n.c.Last().Signal)
}

// TestSLOUnknownStatic: a declared SLO unknown (or the signal stale)
// falls back to static suppress: the threshold never above the NodeSLO's,
// a cut in force kept, the LS CPU wait still able to cut below it; known
// again, the SLO steers from there.
func TestSLOUnknownStatic(t *testing.T) {
	n := newSLONode(t, true)
	n.wait(100 * time.Microsecond)
	n.known(0.5)
	for i := 0; i < 5; i++ {
		n.step(t)
	}
	require.Greater(t, n.threshold(), int64(80))

	n.decl.Unknown = 1
	n.step(t)
	assert.Equal(t, int64(80), n.threshold(), "not above the NodeSLO's")
	assert.True(t, n.c.static)
	assert.Equal(t, 1.0, n.dominant(SignalStatic))
	assert.Equal(t, 0.0, n.dominant(SignalSLO))
	n.step(t)
	assert.Equal(t, int64(80), n.threshold(), "the LS CPU wait's growth is held")

	n.wait(5 * time.Millisecond)
	n.step(t)
	assert.Equal(t, int64(65), n.threshold(), "the LS CPU wait cuts below")
	assert.Equal(t, 1.0, n.dominant(SignalCPUWait))
	n.wait(100 * time.Microsecond)
	n.step(t)
	assert.Equal(t, int64(65), n.threshold(), "the cut kept")
	assert.Equal(t, 1.0, n.dominant(SignalStatic))

	n.known(0.07)
	n.step(t)
	assert.False(t, n.c.static)
	assert.Equal(t, int64(65), n.threshold(), "the SLO's hold band, from the cut")
	assert.Equal(t, 1.0, n.dominant(SignalSLO))

	// Stale after a declaration: static too, with the LS CPU wait off.
	m := newSLONode(t, false)
	m.known(0.5)
	for i := 0; i < 4; i++ {
		m.step(t)
	}
	require.Greater(t, m.threshold(), int64(80))
	m.declOK = false
	for i := 0; i < 3; i++ {
		m.step(t)
		assert.Equal(t, int64(80), m.threshold(), "static: the NodeSLO's, never full batch")
	}
	assert.True(t, m.c.static)
}

// TestSLOWinner: the lowest proposal wins; the winner is exported.
func TestSLOWinner(t *testing.T) {
	n := newSLONode(t, true)
	n.wait(100 * time.Microsecond)
	n.known(0.07)
	n.step(t)
	n.step(t)
	assert.Equal(t, int64(80), n.threshold(), "the SLO's hold beats the wait's growth")
	assert.Equal(t, 1.0, n.dominant(SignalSLO))
	assert.Equal(t, 0.0, n.dominant(SignalCPUWait))

	n.wait(5 * time.Millisecond)
	n.known(0.5)
	n.step(t)
	assert.Equal(t, int64(65), n.threshold(), "the wait's cut beats the SLO's growth")
	assert.Equal(t, 1.0, n.dominant(SignalCPUWait))

	n.known(-0.1)
	n.step(t)
	assert.Equal(t, int64(55), n.threshold(), "the SLO's floor beats the wait's halving")
	assert.Equal(t, 1.0, n.dominant(SignalSLO))
	assert.Len(t, n.c.Last().Proposals, 2)
}

// TestSLOGateOff: the gates turned off at run time give the NodeSLO's
// threshold; YARNLSSLOControl off alone leaves the LS CPU wait steering
// from the offset in force.
func TestSLOGateOff(t *testing.T) {
	n := newSLONode(t, false)
	n.violate(t)
	featurestest.Set(t, map[string]bool{string(features.YARNLSSLOControl): false})
	assert.Equal(t, int64(80), n.threshold())

	m := newSLONode(t, true)
	m.wait(800 * time.Microsecond) // the wait's hold band
	m.violate(t)
	featurestest.Set(t, map[string]bool{string(features.YARNLSSLOControl): false})
	assert.Equal(t, int64(55), m.threshold())
	m.wait(100 * time.Microsecond)
	m.step(t)
	assert.Equal(t, int64(57), m.threshold(), "the LS CPU wait grows from there")
	assert.Equal(t, 1.0, m.dominant(SignalCPUWait))
}

// TestSLOOffsetKeptThroughGap: the SLO signal stale keeps the cut
// (static); the declarations gone give the NodeSLO's threshold with the
// offset kept; back, the SLO steers from where it was.
func TestSLOOffsetKeptThroughGap(t *testing.T) {
	n := newSLONode(t, false)
	n.violate(t)
	n.declOK = false
	n.step(t)
	assert.Equal(t, int64(55), n.threshold(), "stale: the cut kept")
	n.decl, n.declOK = lsslo.Signal{Declared: 0}, true
	n.step(t)
	assert.Equal(t, int64(80), n.threshold(), "no declaration: the NodeSLO's")
	assert.InDelta(t, -25, n.c.offset, 1e-9, "the offset kept")
	n.known(0.5)
	n.step(t)
	assert.Equal(t, int64(57), n.threshold(), "back where it was, a step up")
}

// TestSLOPositiveOffsetNotBroughtBack: an offset earned before the
// declarations went away (a Deployment rolled: the old pod gone, the new
// one pending) is not handed to the new pod while it is quiet: a positive
// offset is earned by known slack only.
func TestSLOPositiveOffsetNotBroughtBack(t *testing.T) {
	n := newSLONode(t, false)
	n.known(0.5)
	for i := 0; i < 6; i++ {
		n.step(t)
	}
	require.Greater(t, n.threshold(), int64(80))
	n.decl, n.declOK = lsslo.Signal{Declared: 0}, true
	n.step(t)
	require.Equal(t, int64(80), n.threshold())
	q := lsslo.PodSLO{Pod: "default/web-2", Quiet: true}
	n.decl = lsslo.Signal{At: n.clock, Declared: 1, Quiet: 1, Pods: []lsslo.PodSLO{q}}
	n.step(t)
	assert.LessOrEqual(t, n.threshold(), int64(80), "the new pod quiet: at most the NodeSLO's")
}

// TestSLOCutOncePerReading: two steps on one violation before BE suppress
// computed again cut once: the budget read is the one of the offset
// suppress last computed with.
func TestSLOCutOncePerReading(t *testing.T) {
	n := newSLONode(t, false)
	n.known(0.5)
	n.step(t)
	n.step(t)
	n.known(-0.5)
	n.clock = n.clock.Add(time.Second)
	n.c.Step() // no suppress round between the two steps
	n.clock = n.clock.Add(time.Second)
	n.c.Step()
	assert.Equal(t, int64(55), n.threshold(), "the floor (5% of the node above LS's 50%), not below it")
}

// TestSLOKnownViolationCutsInStatic: one declared pod unknown, another
// known and violated: static suppress and the violation's cut, the lower
// winning.
func TestSLOKnownViolationCutsInStatic(t *testing.T) {
	n := newSLONode(t, false)
	n.known(0.5)
	n.step(t)
	n.step(t)
	w := lsslo.PodSLO{Pod: "default/web", Quantile: 0.99, Target: 20 * time.Millisecond, Latency: 30 * time.Millisecond, Known: true, Slack: -0.5}
	u := lsslo.PodSLO{Pod: "default/api", Why: "down"}
	n.decl = lsslo.Signal{At: n.clock, Declared: 2, Unknown: 1, Worst: w, Pods: []lsslo.PodSLO{u, w}}
	n.step(t)
	assert.Equal(t, int64(55), n.threshold(), "the known pod's violation: the floor")
}

// TestSLONoGrowthWhileAPodIsQuiet: a known pod with slack to spare does
// not grow batch past another declared pod too quiet to tell.
func TestSLONoGrowthWhileAPodIsQuiet(t *testing.T) {
	n := newSLONode(t, false)
	w := lsslo.PodSLO{Pod: "default/web", Quantile: 0.99, Target: 20 * time.Millisecond, Latency: 2 * time.Millisecond, Known: true, Slack: 0.9}
	q := lsslo.PodSLO{Pod: "default/api", Quiet: true}
	n.decl, n.declOK = lsslo.Signal{At: n.clock, Declared: 2, Quiet: 1, Worst: w, Pods: []lsslo.PodSLO{q, w}}, true
	for i := 0; i < 6; i++ {
		n.step(t)
	}
	assert.Equal(t, int64(80), n.threshold())
}

// TestSLOCutIgnoresAReadNotYetWritten: a step that comes between BE
// suppress's read of the threshold and its write of the budget reads the
// round before's quota: it cuts from the offset that quota was computed
// with, not once more below the floor.
func TestSLOCutIgnoresAReadNotYetWritten(t *testing.T) {
	n := newSLONode(t, false)
	n.known(0.5)
	n.step(t)
	n.step(t) // suppress computed and wrote: LS's 50% leaves batch the rest
	n.known(-0.5)
	n.clock = n.clock.Add(time.Second)
	n.c.Step()
	floor := n.c.Offset()
	require.Equal(t, int64(55), threshold(80, floor), "the floor: 5% of the node above LS's 50%")
	n.c.Threshold(80, nil) // suppress reads 55% and is still computing: the quota is the round before's
	n.clock = n.clock.Add(100 * time.Millisecond)
	n.c.Step()
	assert.InDelta(t, floor, n.c.Offset(), 1e-9, "not below the floor")
}

// TestSLOUnmetAtFloor: a violation that outlasts the cut (the budget at the
// floor for the pod's whole latency window) is reported once: the gauge
// and the decision carry how long; the budget stays at the floor; the SLO
// met again ends the episode and the gauge falls to 0.
func TestSLOUnmetAtFloor(t *testing.T) {
	n := newSLONode(t, false)
	n.violate(t)
	window := 3 * time.Second
	n.decl.Worst.Window = window
	n.decl.Pods[0].Window = window
	var seconds []float64
	for i := 0; i < 6; i++ {
		n.step(t)
		assert.Equal(t, int64(55), n.threshold(), "held at the floor")
		seconds = append(seconds, testutil.ToFloat64(n.c.metrics.unmet))
	}
	// violate's last step cut; the budget is at the floor from the next
	// step on (0 s), reported once that has lasted the window (3 s).
	assert.Equal(t, []float64{0, 0, 0, 3, 4, 5}, seconds)
	assert.Equal(t, 5.0, n.c.Last().UnmetAtFloorSeconds)

	n.known(0.5)
	n.step(t)
	assert.Zero(t, testutil.ToFloat64(n.c.metrics.unmet), "met again: the episode ended")
	assert.Zero(t, n.c.Last().UnmetAtFloorSeconds)
	assert.True(t, n.c.said.First("unmet"), "the episode's warning forgotten: the next one is said again")
	n.c.said.Forget("unmet")

	// A second episode, ended by the controller stopping.
	n.violate(t)
	n.decl.Worst.Window, n.decl.Pods[0].Window = window, window
	for i := 0; i < 5; i++ {
		n.step(t)
	}
	require.GreaterOrEqual(t, testutil.ToFloat64(n.c.metrics.unmet), 3.0, "reported")
	n.c.Stop()
	assert.Zero(t, testutil.ToFloat64(n.c.metrics.unmet), "stopped: no episode")
	assert.True(t, n.c.said.First("unmet"), "stopped: the next episode is said again")
}

func TestSLORuleUnmetAtFloor(t *testing.T) {
	r := NewSLORule(2, 5, 3)
	for _, tt := range []struct {
		name   string
		budget float64
		in     SLOInput
		want   bool
	}{
		{"violated at the floor", 5, SLOInput{Known: true, Slack: -0.1}, true},
		{"violated below the floor (rounding)", 4.9, SLOInput{Known: true, Slack: -0.1}, true},
		{"violated above the floor: a cut can still help", 5.5, SLOInput{Known: true, Slack: -0.1}, false},
		{"met at the floor", 5, SLOInput{Known: true, Slack: 0}, false},
		{"unknown", 5, SLOInput{Slack: -0.1}, false},
		{"NaN slack", 5, SLOInput{Known: true, Slack: math.NaN()}, false},
		{"budget unlimited or unknown", -1, SLOInput{Known: true, Slack: -0.1}, false},
	} {
		assert.Equal(t, tt.want, r.UnmetAtFloor(tt.budget, tt.in), tt.name)
	}
}
