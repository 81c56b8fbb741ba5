package yarninterference

import (
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/resourceexecutor"
	koordletutil "github.com/koordinator-sh/koordinator/pkg/koordlet/util"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/lswait"
	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/config"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
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
	// Quota writes the YARN root's quota and keeps the record of its own
	// (nil: the process's one writer, shared with BE suppress).
	Quota *cgroups.RootQuota
}

// Controller is the framework loop that sets the YARN CPU budget.
type Controller struct {
	opts    Options
	metrics *metrics

	mu sync.Mutex
	// budget is the current budget (milli-CPU); 0 before the first step.
	budget int64
	// resume is the budget before a signal gap released YARN (0: none):
	// the budget comes back there with the signal.
	resume int64
	// dir is the YARN root the budget was last written to ("" none).
	dir       string
	lastUsage uint64
	lastAt    time.Time
	said      map[string]bool
	// now is the clock (tests).
	now func() time.Time
	// stopped: Stop ran; no step writes again.
	stopped bool
}

// New returns the controller; its metrics are registered on opts.Registerer.
func New(opts Options) (*Controller, error) {
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	if opts.Quota == nil {
		opts.Quota = cgroups.NewRootQuota()
	}
	return &Controller{opts: opts, metrics: m, said: map[string]bool{}, now: time.Now}, nil
}

// Name names the loop.
func (c *Controller) Name() string { return "YARN interference control" }

// Enabled follows YARNInterferenceControl.
func (c *Controller) Enabled() bool { return features.Enabled(features.YARNInterferenceControl) }

// Run adjusts the budget every interval until stopCh closes, then gives
// the YARN root its own quota back.
func (c *Controller) Run(stopCh <-chan struct{}) {
	klog.Infof("yarn: interference control: the YARN CPU budget follows the LS CPU wait (target %v, floor %d%%, step %d%% of the node every %v)",
		c.opts.Config.Target, c.opts.Config.MinPercent, c.opts.Config.StepPercent, c.opts.Config.Interval)
	go func() {
		wait.Until(c.Step, c.opts.Config.Interval, stopCh)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.release("koordlet stops")
	}()
}

// RestoreDisabled gives the YARN root its own quota back when koordlet runs
// with the gate off after one that controlled it, unless BE suppress
// divides its budget onto the root (the controller's stand-down case): the
// division owns the quota then, and the record of the root's own.
func (c *Controller) RestoreDisabled() int {
	h := c.opts.Hierarchy()
	if h == "" || (cgroups.OutsideBestEffort(h) && features.Enabled(features.YARNBECPUSuppress)) {
		return 0
	}
	if c.restore(h) {
		klog.Infof("yarn: %s is off: the cfs quota of the YARN hierarchy %s is back to its value before the interference controller", features.YARNInterferenceControl, h)
		return 1
	}
	return 0
}

// quota is the YARN root's writer.
func (c *Controller) quota() *cgroups.RootQuota {
	return c.opts.Quota
}

func (c *Controller) sayOnce(key, format string, args ...any) {
	if !c.said[key] {
		c.said[key] = true
		klog.Warningf(format, args...)
	}
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

// Stop gives the YARN root its own quota back and ends the steps. The
// framework calls it as koordlet exits (after its daemon returned, before
// the process ends: the loop's own exit path may not get to run).
func (c *Controller) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	c.release("koordlet stops")
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
	if cgroups.OutsideBestEffort(h) && features.Enabled(features.YARNBECPUSuppress) {
		c.sayOnce("outside", "yarn: interference control stands down: the YARN hierarchy %s is outside the besteffort cgroup and YARNBECPUSuppress divides the BE budget onto its root's quota", h)
		c.release("the hierarchy is outside besteffort")
		return
	}
	if c.dir != "" && c.dir != h {
		c.release("the YARN hierarchy moved")
	}
	rd := c.reader()
	period, err := rd.ReadCPUPeriod(h)
	if err != nil || period <= 0 {
		// Before the NodeManager creates the root, or a real fault: said once.
		c.sayOnce("period", "yarn: interference control: read the cfs period of the YARN hierarchy %s: %v (period %d); no budget until it reads", h, err, period)
		return
	}
	delete(c.said, "period")
	capacity := c.capacity()
	beBudget := int64(0) // BE suppress's budget on the besteffort cgroup
	beDir := koordletutil.GetPodQoSRelativePath(corev1.PodQOSBestEffort)
	if !cgroups.OutsideBestEffort(h) {
		if q, err := rd.ReadCPUQuota(beDir); err == nil && q > 0 {
			if bp, err := rd.ReadCPUPeriod(beDir); err == nil && bp > 0 {
				beBudget = q * 1000 / bp
			}
		}
	}
	// YARN's own limit: the record of it, never a value koordlet wrote.
	own, err := c.quota().Own(h)
	if err != nil {
		c.sayOnce("own", "yarn: interference control: %v; YARN's own limit is not known", err)
		own = -1
	}
	ceil := ceiling(capacity, beBudget, milli(own, period))
	current := int64(-1) // what YARN has now (milli-CPU; -1 unlimited)
	if q, err := rd.ReadCPUQuota(h); err == nil {
		current = milli(q, period)
	}
	usage := c.usage(h)
	sig, ok := c.opts.Signal()
	cfg := c.opts.Config
	a := AIMD{Target: c.Target(), HoldBelow: 0.7, Decrease: 0.5,
		Step: capacity * cfg.StepPercent / 100, Floor: capacity * cfg.MinPercent / 100}
	next, act := a.Next(start(c.budget, c.resume, current, a.Floor, ceil), ceil, usage, sig.Value(), ok)
	if !ok {
		c.sayOnce("nosignal", "yarn: interference control: no LS CPU wait signal; the YARN budget is released to what BE suppress allows until there is one")
	} else {
		delete(c.said, "nosignal")
	}
	c.metrics.observe(a.Target, sig.Value(), ceil, act)
	if act == Release {
		resume := max(c.budget, c.resume)
		c.release("no signal")
		c.resume = resume // the budget comes back there with the signal
		return
	}
	minDelta := capacity / 100
	if c.dir == h && act != Cut && abs(next-c.budget) < minDelta {
		c.metrics.budget.Set(float64(c.budget) / 1000)
		return
	}
	quota := max(next*period/1000, system.CFSQuotaMinValue)
	if !c.write(h, quota) {
		return
	}
	if act == Cut {
		klog.V(3).Infof("yarn: interference control: LS CPU wait %v above %v: YARN budget %dm → %dm", sig.Value(), a.Target, c.budget, next)
	} else {
		klog.V(4).Infof("yarn: interference control: LS CPU wait %v (target %v): YARN budget %dm → %dm (%s)", sig.Value(), a.Target, c.budget, next, act)
	}
	if c.dir == "" {
		klog.Infof("yarn: interference control: first YARN budget %dm on %s (LS CPU wait %v, target %v, ceiling %dm)", next, h, sig.Value(), a.Target, ceil)
	}
	c.budget, c.dir, c.resume = next, h, 0
	c.metrics.budget.Set(float64(next) / 1000)
}

// reader is the injected reader or koordlet's for this host now.
func (c *Controller) reader() resourceexecutor.CgroupReader {
	if c.opts.Reader != nil {
		return c.opts.Reader
	}
	return resourceexecutor.NewCgroupReader()
}

// usage is YARN's CPU use since the last step in milli-CPU (-1 unknown).
func (c *Controller) usage(h string) int64 {
	now := c.now()
	u, err := c.reader().ReadCPUAcctUsage(h)
	if err != nil {
		return -1
	}
	prev, at := c.lastUsage, c.lastAt
	c.lastUsage, c.lastAt = u, now
	if at.IsZero() || u < prev || !now.After(at) {
		return -1
	}
	return int64(float64(u-prev) / float64(now.Sub(at)) * 1000)
}

// release gives the YARN root its own quota back (caller holds mu).
func (c *Controller) release(why string) {
	if c.dir == "" {
		return
	}
	if c.restore(c.dir) {
		klog.Infof("yarn: interference control: the YARN hierarchy %s has its own cfs quota back (%s)", c.dir, why)
	}
	c.dir, c.budget, c.resume = "", 0, 0
	c.metrics.budget.Set(0)
}

// restore gives dir its own quota back through the one writer.
func (c *Controller) restore(dir string) bool {
	restored, _, err := c.quota().Restore(dir)
	if err != nil {
		klog.Warningf("yarn: interference control: %v", err)
	}
	return restored
}

// write sets dir's cfs quota through the one writer of the YARN root's
// quota (which records the root's own first).
func (c *Controller) write(dir string, quota int64) bool {
	if err := c.quota().Set(dir, quota); err != nil {
		klog.Warningf("yarn: interference control: %v", err)
		return false
	}
	return true
}

// Budget returns the current budget in milli-CPU (0: none written).
func (c *Controller) Budget() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.budget
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
