package yarninterference

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/resourceexecutor"
	koordletutil "github.com/koordinator-sh/koordinator/pkg/koordlet/util"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/lsslo"
	"github.com/koordlet-yarn/koordlet-yarn/collectors/lswait"
	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/config"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/logonce"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnsuppress"
)

// NodeSLOExtension is the NodeSLO's spec.extensions key of the controller's
// settings; its cpuWaitTargetMicroseconds overrides --yarn-interference-target.
const NodeSLOExtension = "yarnInterferenceControl"

// Options wire the controller.
type Options struct {
	// Hierarchy returns the YARN hierarchy dir ("" when unknown).
	Hierarchy func() string
	// Signal returns the LS CPU wait (collectors/lswait).
	Signal func() (lswait.Signal, bool)
	// SLO returns the LS pods' declared latency SLOs (collectors/lsslo,
	// YARNLSSLOControl; nil: not installed, the controller is as without
	// that gate).
	SLO func() (lsslo.Signal, bool)
	// Node and NodeSLO are koordlet's (nil before they are known).
	Node    func() *corev1.Node
	NodeSLO func() *slov1alpha1.NodeSLO
	// Config holds the flags (read at each step: parsed after Install).
	Config *config.Interference
	// Reader reads cgroups (nil: koordlet's for this host, made at each
	// step: koordlet knows the host's cgroup version only after its flags
	// are parsed, after Install built the controller).
	Reader     resourceexecutor.CgroupReader
	Registerer prometheus.Registerer
}

// Controller is the framework loop that moves BE suppress's threshold.
type Controller struct {
	opts    Options
	metrics *metrics

	mu sync.Mutex
	// offset is the threshold's offset from the NodeSLO's (percent
	// points); kept through a gap in the signal, so that the threshold
	// comes back there with it.
	offset float64
	// quiet counts the quiet intervals in a row (Rule.GrowAfter).
	quiet int
	// applying: Threshold moves the NodeSLO's threshold by offset.
	applying  bool
	lastUsage uint64
	lastAt    time.Time
	// lastLS and lastLSAt are the LS pods' cpuacct usage at the last step
	// that read it (the LS load of SLORule).
	lastLS   uint64
	lastLSAt time.Time
	// sloDeclared is how many pods declared an SLO at the last good SLO
	// signal; static: the last step was static suppress for a declared
	// SLO unknown (logged on entering and leaving).
	sloDeclared int
	static      bool
	// winner is the signal that decided the last step; sloCutting: the
	// SLO's cuts in a row (the first is logged at Info, the audit).
	winner     string
	sloCutting bool
	// read is the offset BE suppress last computed with (Threshold; nil:
	// none since the controller applies): the budget in force is its once
	// suppress has written it; prevRead the one before.
	read, prevRead *reading
	// last is the last step's decision (Last).
	last Decision
	// unmetSince is when the declared SLO was first seen violated with
	// the budget at the floor, in the episode that runs (zero: none).
	unmetSince time.Time
	// said holds the conditions already logged (Forget when one ends).
	said logonce.Set
	// now is the clock (tests).
	now func() time.Time
	// stopped: Stop ran; the threshold is the NodeSLO's from then on.
	stopped bool
}

// New returns the controller; its metrics are registered on opts.Registerer.
func New(opts Options) (*Controller, error) {
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	return &Controller{opts: opts, metrics: m, now: time.Now}, nil
}

// Name names the loop.
func (c *Controller) Name() string { return "YARN interference control" }

// Enabled follows YARNInterferenceControl and YARNLSSLOControl: the loop
// runs while either is on.
func (c *Controller) Enabled() bool {
	return features.Enabled(features.YARNInterferenceControl) || features.Enabled(features.YARNLSSLOControl)
}

// Run moves the threshold every interval until stopCh closes; then BE
// suppress computes with the NodeSLO's threshold again.
func (c *Controller) Run(stopCh <-chan struct{}) {
	var by []string
	if features.Enabled(features.YARNInterferenceControl) {
		by = append(by, fmt.Sprintf("the LS CPU wait (target %v)", c.opts.Config.Target))
	}
	if features.Enabled(features.YARNLSSLOControl) {
		by = append(by, "the LS pods' declared latency SLOs")
	}
	klog.Infof("yarn: interference control: BE suppress's threshold follows %s, the most conservative winning (budget floor %d%%, step %d points every %v)",
		strings.Join(by, " and "), c.opts.Config.MinPercent, c.opts.Config.StepPercent, c.opts.Config.Interval)
	go func() {
		wait.Until(c.Step, c.opts.Config.Interval, stopCh)
		c.Stop()
	}()
}

// Threshold is the cpuSuppressThresholdPercent and cpuSuppressMinPercent
// BE suppress computes with when the NodeSLO's are base and minPercent
// (nil: none). While the controller controls, base is moved by its offset
// and the minimum is raised to the floor (--yarn-interference-min-cpu-percent),
// so that the floor is a guarantee and not only where a cut stops: LS
// growing after a cut takes the formula's budget below the floor, and
// YARN's ApplicationMasters run inside that budget. Otherwise (gate off,
// no signal, stopped) both are the NodeSLO's.
func (c *Controller) Threshold(base int64, minPercent *int64) (int64, *int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.applying || c.stopped || !c.Enabled() {
		c.read, c.prevRead = nil, nil
		return base, minPercent
	}
	c.prevRead, c.read = c.read, &reading{offset: c.offset, at: c.now()}
	return threshold(base, c.offset), floorMin(minPercent, c.opts.Config.MinPercent)
}

// floorMin is the cpuSuppressMinPercent at least floor (percent of the
// node): the NodeSLO's when higher, unchanged for a floor of 0.
func floorMin(minPercent *int64, floor int64) *int64 {
	if floor <= 0 || minPercent != nil && *minPercent >= floor {
		return minPercent
	}
	return &floor
}

// Offset is the threshold's offset in force (percent points; 0 when the
// threshold is the NodeSLO's).
func (c *Controller) Offset() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.applying || c.stopped {
		return 0
	}
	return c.offset
}

func (c *Controller) sayOnce(key, format string, args ...any) {
	c.said.Do(key, func() { klog.Warningf(format, args...) })
}

// Target is the target in force: the NodeSLO's, else the flag's.
func (c *Controller) Target() time.Duration {
	if c.opts.NodeSLO != nil {
		if slo := c.opts.NodeSLO(); slo != nil && slo.Spec.Extensions != nil {
			if raw, ok := slo.Spec.Extensions.Object[NodeSLOExtension]; ok {
				d, err := parseTarget(raw)
				if err == nil {
					return d
				}
				c.sayOnce("slo-"+fmt.Sprint(raw), "yarn: interference control: NodeSLO spec.extensions.%s: %v; --yarn-interference-target %v is used", NodeSLOExtension, err, c.opts.Config.Target)
			}
		}
	}
	return c.opts.Config.Target
}

// parseTarget reads {"cpuWaitTargetMicroseconds": N}.
func parseTarget(raw any) (time.Duration, error) {
	m, ok := raw.(map[string]any)
	if !ok {
		return 0, fmt.Errorf("not an object: %v", raw)
	}
	v, ok := m["cpuWaitTargetMicroseconds"]
	if !ok {
		return 0, fmt.Errorf("no cpuWaitTargetMicroseconds in %v", raw)
	}
	var us float64
	switch n := v.(type) {
	case float64:
		us = n
	case int64:
		us = float64(n)
	case int:
		us = float64(n)
	default:
		return 0, fmt.Errorf("cpuWaitTargetMicroseconds %v: not a number", v)
	}
	if us < 1 || us > 10e6 {
		return 0, fmt.Errorf("cpuWaitTargetMicroseconds %v: not in 1–10000000", v)
	}
	return time.Duration(us * float64(time.Microsecond)), nil
}

// capacity is the node's CPU in milli-CPU.
func (c *Controller) capacity() int64 {
	if c.opts.Node != nil {
		if n := c.opts.Node(); n != nil {
			if v := n.Status.Capacity.Cpu().MilliValue(); v > 0 {
				return v
			}
		}
	}
	return int64(runtime.NumCPU()) * 1000
}

// Stop ends the control: BE suppress computes with the NodeSLO's threshold
// from its next round. The framework calls it as koordlet exits; the
// loop's own exit path calls it too.
func (c *Controller) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.applying && !c.stopped {
		klog.Infof("yarn: interference control stops: BE suppress's threshold is the NodeSLO's again")
	}
	c.stopped, c.applying = true, false
	c.metrics.threshold.Set(0)
	c.unmetAtFloor(nil, false, lsslo.PodSLO{})
}

// Step runs one interval of the controller.
func (c *Controller) Step() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	h := c.opts.Hierarchy()
	if h == "" {
		return
	}
	if !yarnsuppress.Runs() {
		c.sayOnce("nosuppress", "yarn: interference control does nothing: it moves the threshold of BE suppress's formula, which runs YARN-aware with %s and koordlet's %s, and one is off", features.YARNBECPUSuppress, koordfeatures.BECPUSuppress)
		c.stand("BE suppress does not run YARN-aware")
		return
	}
	c.said.Forget("nosuppress")
	base, ok := c.base()
	if !ok {
		c.sayOnce("nobase", "yarn: interference control does nothing: the NodeSLO has no resourceUsedThresholdWithBE with enable and cpuSuppressThresholdPercent (BE suppress is off)")
		c.stand("no BE suppress threshold")
		return
	}
	c.said.Forget("nobase")
	capacity := c.capacity()
	budget := c.budget(h, capacity)
	usage := c.usage(h, capacity)
	cores := -1.0
	if budget >= 0 {
		cores = budget * float64(capacity) / 100 / 1000
	}
	c.metrics.budget.Set(cores)
	d := Decision{At: c.now(), NodeSLOThresholdPercent: base, BudgetPercent: budget, LSLoad: -1}
	st := State{Offset: c.offset, Quiet: c.quiet}
	var props []Proposal
	why := "no declared SLO"
	if features.Enabled(features.YARNInterferenceControl) {
		cfg := c.opts.Config
		sig, ok := c.opts.Signal()
		r := Rule{Target: c.Target(), HoldBelow: 0.7, Step: float64(cfg.StepPercent), Floor: float64(cfg.MinPercent), GrowAfter: int(cfg.GrowAfter)}
		wait := sig.ValueOf(cfg.Signal)
		c.metrics.observeWait(r.Target, wait)
		d.CPUWaitSeconds, d.CPUWaitTargetSeconds = wait.Seconds(), r.Target.Seconds()
		if n, act := r.Next(st, float64(base), budget, usage, wait, ok); act != Release {
			c.said.Forget("nosignal")
			props = append(props, Proposal{Signal: SignalCPUWait, State: n, Action: act})
		} else {
			c.sayOnce("nosignal", "yarn: interference control: no LS CPU wait signal; BE suppress's threshold is the NodeSLO's %d%% until there is one", base)
			why = "no signal" // the offset stays: the threshold comes back there with the signal
		}
	}
	slo, sloOK, mode := c.sloSignal()
	c.enterStatic(mode == sloStatic, slo, sloOK)
	if mode != sloNone {
		d.LSLoad = c.lsLoad(h, capacity, base)
		d.SLOPods, d.SLOUnknown, d.SLOQuiet = slo.Declared, slo.Unknown, slo.Quiet
	}
	if mode == sloStatic {
		props = append(props, static(st))
	}
	if known := slo.Worst.Pod != ""; mode == sloKnown || mode == sloQuiet || mode == sloStatic && known {
		// A known pod's slack steers in static suppress too: a violation
		// behind another pod's lost endpoint still cuts.
		in := SLOInput{Known: known, Slack: slo.Worst.Slack, Load: d.LSLoad}
		if in.Known {
			w := slo.Worst
			d.Pod, d.Quantile, d.LatencySeconds, d.TargetSeconds, d.Slack = w.Pod, w.Quantile, w.Latency.Seconds(), w.Target.Seconds(), &w.Slack
		}
		props = append(props, c.sloProposal(st, float64(base), budget, usage, in, slo.Quiet > 0))
	}
	c.unmetAtFloor(&d, sloRule(c.opts.Config).UnmetAtFloor(budget, SLOInput{Known: slo.Worst.Pod != "", Slack: slo.Worst.Slack}), slo.Worst)
	d.Proposals = props
	win, ok := decide(props)
	if !ok {
		c.metrics.decided(SignalStatic, Release, 0, false)
		c.stand(why)
		c.metrics.threshold.Set(float64(base))
		d.Signal, d.Action, d.ThresholdPercent, d.Why = SignalStatic, Release, base, why
		c.winner, c.sloCutting, c.last = SignalStatic, false, d
		return
	}
	c.metrics.decided(win.Signal, win.Action, slo.Worst.Slack, mode == sloKnown)
	next := win.State.Offset
	prev, th := threshold(base, c.offset), threshold(base, next)
	about := c.about(win.Signal, d)
	switch {
	case !c.applying:
		klog.Infof("yarn: interference control: BE suppress's threshold %d%% (NodeSLO %d%%; decided by %s: %s; budget %.1f%% of the node)", th, base, win.Signal, about, budget)
	case win.Signal == SignalSLO && (win.Action == Off || win.Action == Cut) && !c.sloCutting:
		klog.Infof("yarn: interference control: LS pod %s's p%g latency %v against its SLO %v (slack %.1f%%): BE suppress's threshold %d%% → %d%% (%s; budget %.1f%% of the node)",
			slo.Worst.Pod, slo.Worst.Quantile*100, slo.Worst.Latency, slo.Worst.Target, slo.Worst.Slack*100, prev, th, win.Action, budget)
	case win.Signal != c.winner:
		klog.V(2).Infof("yarn: interference control: the %s signal decides now (was %s; %s): BE suppress's threshold %d%% → %d%% (%s)", win.Signal, c.winner, about, prev, th, win.Action)
	case win.Signal == SignalSLO && th != prev:
		klog.V(2).Infof("yarn: interference control: %s: BE suppress's threshold %d%% → %d%% (%s)", about, prev, th, win.Action)
	case win.Action == Cut:
		klog.V(3).Infof("yarn: interference control: %s: BE suppress's threshold %d%% → %d%% (budget %.1f%% of the node)", about, prev, th, budget)
	case th != prev:
		klog.V(4).Infof("yarn: interference control: %s: BE suppress's threshold %d%% → %d%% (%s)", about, prev, th, win.Action)
	}
	c.sloCutting = win.Signal == SignalSLO && (win.Action == Off || win.Action == Cut || c.sloCutting && win.Action == Hold)
	c.offset, c.quiet, c.applying, c.winner = next, win.State.Quiet, true, win.Signal
	c.metrics.threshold.Set(float64(th))
	d.Signal, d.Action, d.OffsetPoints, d.ThresholdPercent = win.Signal, win.Action, next, th
	c.last = d
}

// stand stops moving the threshold (caller holds mu).
func (c *Controller) stand(why string) {
	c.last = Decision{At: c.now(), Signal: SignalStatic, Action: Release, Why: why, LSLoad: -1}
	c.unmetAtFloor(nil, false, lsslo.PodSLO{}) // not steering: no episode of its own
	c.metrics.dominant.WithLabelValues(SignalStatic).Set(1)
	c.metrics.dominant.WithLabelValues(SignalSLO).Set(0)
	c.metrics.dominant.WithLabelValues(SignalCPUWait).Set(0)
	if c.applying {
		klog.Infof("yarn: interference control: BE suppress's threshold is the NodeSLO's (%s)", why)
	}
	c.applying = false
}

// base is the NodeSLO's cpuSuppressThresholdPercent (ok false: BE
// suppress is off or has none).
func (c *Controller) base() (int64, bool) {
	if c.opts.NodeSLO == nil {
		return 0, false
	}
	slo := c.opts.NodeSLO()
	if slo == nil {
		return 0, false
	}
	s := slo.Spec.ResourceUsedThresholdWithBE
	if s == nil || s.Enable == nil || !*s.Enable || s.CPUSuppressThresholdPercent == nil {
		return 0, false
	}
	return *s.CPUSuppressThresholdPercent, true
}

// reader is the injected reader or koordlet's for this host now.
func (c *Controller) reader() resourceexecutor.CgroupReader {
	if c.opts.Reader != nil {
		return c.opts.Reader
	}
	return resourceexecutor.NewCgroupReader()
}

// batchDirs are the cgroups that hold batch: the besteffort cgroup, and the
// YARN root when it is outside it.
func batchDirs(h string) []string {
	dirs := []string{koordletutil.GetPodQoSRelativePath(corev1.PodQOSBestEffort)}
	if cgroups.OutsideBestEffort(h) {
		dirs = append(dirs, h)
	}
	return dirs
}

// budget is the BE budget in force in percent of the node: the besteffort
// cgroup's cfs quota (BE suppress's), plus the YARN root's when the budget
// is divided between them (-1: unlimited or not readable).
func (c *Controller) budget(h string, capacity int64) float64 {
	rd := c.reader()
	sum := 0.0
	for _, dir := range batchDirs(h) {
		q, err := rd.ReadCPUQuota(dir)
		if err != nil {
			return -1
		}
		p, err := rd.ReadCPUPeriod(dir)
		if err != nil {
			return -1
		}
		v := percent(q, p, capacity)
		if v < 0 {
			return -1
		}
		sum += v
	}
	return sum
}

// usage is batch's CPU use since the last step in percent of the node (-1
// unknown).
func (c *Controller) usage(h string, capacity int64) float64 {
	now, rd := c.now(), c.reader()
	var u uint64
	for _, dir := range batchDirs(h) {
		v, err := rd.ReadCPUAcctUsage(dir)
		if err != nil {
			c.lastAt = time.Time{}
			return -1
		}
		u += v
	}
	prev, at := c.lastUsage, c.lastAt
	c.lastUsage, c.lastAt = u, now
	if at.IsZero() || u < prev || !now.After(at) || capacity <= 0 {
		return -1
	}
	return float64(u-prev) / float64(now.Sub(at)) * 1000 / float64(capacity) * 100
}
