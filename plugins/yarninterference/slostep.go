package yarninterference

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	koordletutil "github.com/koordinator-sh/koordinator/pkg/koordlet/util"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/lsslo"
	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
)

// The declared SLOs' side of a step (YARNLSSLOControl): the signal's
// mode, the LS load, the log lines.

// about says what the winning signal saw, for the log.
func (c *Controller) about(signal string, d Decision) string {
	switch signal {
	case SignalCPUWait:
		return fmt.Sprintf("LS CPU wait %v, target %v", time.Duration(d.CPUWaitSeconds*1e9), time.Duration(d.CPUWaitTargetSeconds*1e9))
	case SignalSLO:
		if d.Slack == nil {
			return fmt.Sprintf("the %d declared LS SLOs quiet (too few requests)", d.SLOPods)
		}
		load := "unknown"
		if d.LSLoad >= 0 {
			load = fmt.Sprintf("%.0f%%", d.LSLoad*100)
		}
		return fmt.Sprintf("LS pod %s p%g %v, SLO %v, slack %.1f%%, LS load %s", d.Pod, d.Quantile*100,
			time.Duration(d.LatencySeconds*1e9), time.Duration(d.TargetSeconds*1e9), *d.Slack*100, load)
	}
	return fmt.Sprintf("static suppress: %d of %d declared LS SLOs unknown, or their signal stale", d.SLOUnknown, d.SLOPods)
}

// sloSignal reads the declared SLOs (mode sloNone: the gate off, the
// signal not installed, or no pod declares one).
func (c *Controller) sloSignal() (lsslo.Signal, bool, sloMode) {
	if c.opts.SLO == nil || !features.Enabled(features.YARNLSSLOControl) {
		c.sloDeclared = 0
		return lsslo.Signal{}, false, sloNone
	}
	s, ok := c.opts.SLO()
	mode := modeOf(s, ok, c.sloDeclared)
	if ok {
		c.sloDeclared = s.Declared
	}
	return s, ok, mode
}

// enterStatic logs once on entering and once on leaving static suppress
// for a declared SLO unknown (caller holds mu).
func (c *Controller) enterStatic(static bool, s lsslo.Signal, ok bool) {
	switch {
	case static && !c.static && !ok:
		klog.Infof("yarn: interference control: the declared LS SLOs' signal is stale (%d pods declared): static suppress, BE suppress's threshold at most the NodeSLO's until it is back", c.sloDeclared)
	case static && !c.static:
		klog.Infof("yarn: interference control: %d of %d declared LS SLOs unknown: static suppress, BE suppress's threshold at most the NodeSLO's until they are known", s.Unknown, s.Declared)
	case !static && c.static:
		klog.Infof("yarn: interference control: the declared LS SLOs are known again: static suppress ends")
	}
	c.static = static
}

// lsLoad is the LS pods' CPU use since the last step that read it, in
// share of capacity × the NodeSLO's threshold base (percent): the CPU
// static suppress leaves LS and batch together (-1: unknown). The LS
// pods' use is the kubepods cgroup's cpuacct less the besteffort
// cgroup's and, for a YARN root outside besteffort but below kubepods
// (the NodeManager pod's own cgroup, say), the root's: YARN's work is
// batch wherever its root sits.
func (c *Controller) lsLoad(h string, capacity, base int64) float64 {
	now, rd := c.now(), c.reader()
	kube := filepath.Clean(koordletutil.GetPodQoSRelativePath(corev1.PodQOSGuaranteed))
	dirs := []string{koordletutil.GetPodQoSRelativePath(corev1.PodQOSBestEffort)}
	if cgroups.OutsideBestEffort(h) && strings.HasPrefix(filepath.Clean(h)+"/", kube+"/") {
		dirs = append(dirs, h)
	}
	all, err := rd.ReadCPUAcctUsage(kube)
	var batch uint64
	for _, dir := range dirs {
		if err != nil {
			break
		}
		var v uint64
		v, err = rd.ReadCPUAcctUsage(dir)
		batch += v
	}
	if err != nil || batch > all {
		c.lastLSAt = time.Time{}
		return -1
	}
	u := all - batch
	prev, at := c.lastLS, c.lastLSAt
	c.lastLS, c.lastLSAt = u, now
	if at.IsZero() || u < prev || !now.After(at) || capacity <= 0 || base <= 0 {
		return -1
	}
	pct := float64(u-prev) / float64(now.Sub(at)) * 1000 / float64(capacity) * 100
	return pct / float64(base)
}

// sloProposal is the declared SLOs' proposal from state st (caller holds
// mu):
//   - a positive offset is earned by known slack only: when the SLO did not
//     decide the last step (koordlet starting, a pod declaring anew after
//     none did, the CPU wait or static deciding), the rule starts from at
//     most the NodeSLO's threshold;
//   - the budget in force is BE suppress's at the offset it last read
//     (Threshold), which lags a step taken since: the rule moves from that
//     offset and never above the one in force, so that two steps before
//     suppress's next round do not cut (or grow) twice for one reading;
//   - no growth while a declared pod is quiet (too few requests to tell).
func (c *Controller) sloProposal(st State, base, budget, usage float64, in SLOInput, quiet bool) Proposal {
	if !c.applying || c.winner != SignalSLO {
		st.Offset = min(st.Offset, 0)
	}
	from := st
	r := c.read
	if r != nil && c.now().Sub(r.at) < readSettle {
		r = c.prevRead // suppress may be between its compute and its write
	}
	if r != nil {
		from.Offset = r.offset
	}
	n, act := sloRule(c.opts.Config).Next(from, base, budget, usage, in)
	if act == Grow && (quiet && in.Known || from.Offset != st.Offset) {
		n, act = State{Offset: st.Offset, Quiet: n.Quiet}, Hold
	}
	if act != Grow && n.Offset > st.Offset {
		n.Offset = st.Offset // a hold from an older reading never raises
	}
	return Proposal{Signal: SignalSLO, State: n, Action: act}
}

// reading is an offset BE suppress computed with, and when.
type reading struct {
	offset float64
	at     time.Time
}

// readSettle is how long after BE suppress read the threshold its budget
// is taken to be written: a round computes and writes within
// milliseconds; a step in between reads the quota of the round before.
const readSettle = 250 * time.Millisecond
