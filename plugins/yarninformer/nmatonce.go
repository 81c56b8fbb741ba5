package yarninformer

import (
	"time"

	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/backoff"
)

// DefaultLocateInterval is how often koordlet's pod list (in memory) is
// looked at for the NodeManager pod between resyncs.
const DefaultLocateInterval = 100 * time.Millisecond

// nmRetryMin is the first quick retry after an NM that did not answer at a
// newly known endpoint (an NM pod running before its web server listens);
// each retry doubles it until the periodic resync is as soon.
const nmRetryMin = 200 * time.Millisecond

// locateTicks returns the ticks at which the pod list is looked at: none
// when the NM endpoint is a flag, no pod list is given or LocateInterval
// is 0.
func (p *Plugin) locateTicks() (<-chan time.Time, func()) {
	if p.cfg.NMEndpoint != "" || p.pods == nil || p.LocateInterval <= 0 {
		return nil, func() {}
	}
	t := time.NewTicker(p.LocateInterval)
	return t.C, t.Stop
}

// nmEndpointChanged reports whether koordlet's pod list now names an NM
// endpoint other than the one the last resync used: the NM pod appeared
// (koordlet restarted before its pod list had it) or was rescheduled. A
// pod gone from the list changes nothing here; the next resync records it.
func (p *Plugin) nmEndpointChanged() bool {
	target, err := locateNM(p.pods(), p.selector, p.cfg.NMPort)
	if err != nil || target.Endpoint == p.lastEndpoint {
		return false
	}
	klog.Infof("yarn: NodeManager pod %s at %s found in koordlet's pod list; asking it now", target, target.Endpoint)
	return true
}

// nmRetry returns when to resync again for an NM that did not answer after
// its endpoint became known, or nil: no NM error, or the retries have
// caught up with the periodic resync.
func (p *Plugin) nmRetry() <-chan time.Time {
	var d time.Duration
	switch {
	case p.nmOK || p.lastEndpoint == "":
		p.nmBackoff.Reset()
		return nil
	case p.newEndpoint:
		// Capped at the resync interval: once a retry would be as late as
		// the periodic resync, the retries stop (below).
		p.nmBackoff = backoff.New(p.cfg.ResyncInterval)
		d = p.nmBackoff.Fail(nmRetryMin)
	case p.nmBackoff.Failures() > 0:
		d = p.nmBackoff.Fail(nmRetryMin)
	default:
		return nil
	}
	if d >= p.cfg.ResyncInterval {
		p.nmBackoff.Reset()
		return nil
	}
	return time.After(d)
}
