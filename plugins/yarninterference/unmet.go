package yarninterference

import (
	"time"

	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/lsslo"
)

// unmetAtFloor keeps the episode of a declared SLO violated with the BE
// budget at the floor (unmet: SLORule.UnmetAtFloor at this step) and says
// so once it has lasted the pod's whole latency window: every request the
// quantile counts was then served with batch at the floor, so the cause is
// not batch's CPU. One warning per episode, the gauge for its length, and
// the step's decision carry it; the episode ends when the SLO is met or
// the budget leaves the floor, or the controller stops steering (d nil;
// caller holds mu).
func (c *Controller) unmetAtFloor(d *Decision, unmet bool, w lsslo.PodSLO) {
	now := c.now()
	if !unmet {
		if !c.unmetSince.IsZero() {
			if c.said.Forget("unmet") { // said: its end is news too
				klog.Infof("yarn: interference control: the SLO unmet at the floor ended after %v", now.Sub(c.unmetSince).Round(time.Second))
			}
			c.unmetSince = time.Time{}
		}
		c.metrics.unmet.Set(0)
		return
	}
	if c.unmetSince.IsZero() {
		c.unmetSince = now
	}
	lasted := now.Sub(c.unmetSince)
	if lasted < w.Window {
		c.metrics.unmet.Set(0)
		return
	}
	d.UnmetAtFloorSeconds = lasted.Seconds()
	c.metrics.unmet.Set(lasted.Seconds())
	c.said.Do("unmet", func() {
		klog.Warningf("yarn: interference control: LS pod %s's p%g latency %v is over its SLO %v with the BE budget at its floor (%.1f%% of the node) for %v, "+
			"the whole latency window: batch's CPU is not what the service waits for (look at its memory, I/O and own load), or the SLO is tighter than the service holds alone; the budget stays at the floor",
			w.Pod, w.Quantile*100, w.Latency, w.Target, d.BudgetPercent, lasted.Round(time.Second))
	})
}
