package yarnsuppress

import (
	"k8s.io/klog/v2"

	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
)

// The YARN hierarchy root's quota is written only through the framework's
// one writer (cgroups.RootQuota): it records the root's own quota (YARN's,
// e.g. from yarn.nodemanager.resource.percentage-physical-cpu-limit, or -1)
// before koordlet's first write, in cgroups.PriorQuotaXattr (the record an
// earlier interference controller, which wrote the root's quota, shared). When the division ends (upstream's
// suppress off, the hierarchy below besteffort again, the gate off, even
// after a koordlet restart) that quota goes back and the record goes.

// Runs reports whether koordlet runs the YARN-aware BE suppress, which
// divides the BE budget onto the YARN root and so owns its cfs quota:
// YARNBECPUSuppress on (this strategy in koordlet's cpuSuppress slot) and
// koordlet's own BECPUSuppress on (upstream runs the slot's strategy only
// then). Otherwise the root's quota is YARN's: a value koordlet left there
// is given back (Restorer, the interference controller) and /yarn/restore
// counts it.
func Runs() bool {
	return features.Enabled(features.YARNBECPUSuppress) && features.Enabled(koordfeatures.BECPUSuppress)
}

// rootQuota is the writer in use: the one given, or (a restorer built
// without one) a fresh one, which restores from the record alone.
func rootQuota(q *cgroups.RootQuota) *cgroups.RootQuota {
	if q != nil {
		return q
	}
	return cgroups.NewRootQuota()
}

// restoreRoot gives rel its own quota back (nothing when koordlet never
// wrote it); why names the occasion in the log line.
func restoreRoot(q *cgroups.RootQuota, rel, why string) bool {
	restored, quota, err := rootQuota(q).Restore(rel)
	if err != nil {
		klog.Warningf("yarn: %s: restore the own cfs quota of the YARN hierarchy %s: %v", why, rel, err)
		return false
	}
	if restored {
		klog.Infof("yarn: %s: the cfs quota of the YARN hierarchy %s is back to %d, its value before koordlet divided the BE budget", why, rel, quota)
	}
	return restored
}

// Restorer gives the YARN hierarchy root its own CFS quota back when
// koordlet runs without the YARN-aware BE suppress (Runs: YARNBECPUSuppress
// off, or koordlet's BECPUSuppress off) after a koordlet that divided the BE
// budget (a framework loop that is never enabled; see the framework's
// Restorer).
type Restorer struct {
	// Hierarchy returns the YARN hierarchy dir ("" when unknown).
	Hierarchy func() string
	// Quota is the root's writer, shared with suppress (nil: a fresh one, which restores from the record alone).
	Quota *cgroups.RootQuota
}

// Name names the loop.
func (r *Restorer) Name() string { return "YARN BE CPU suppress restore" }

// Enabled is always false: it only restores.
func (r *Restorer) Enabled() bool { return false }

// Run does nothing.
func (r *Restorer) Run(<-chan struct{}) {}

// RestoreDisabled restores the quota when BE suppress does not own it (the
// interference controller moves suppress's threshold and writes no quota:
// nothing else owns the root's).
func (r *Restorer) RestoreDisabled() int {
	if Runs() || r.Hierarchy == nil {
		return 0
	}
	h := r.Hierarchy()
	if h == "" {
		return 0
	}
	why := string(features.YARNBECPUSuppress) + " is off"
	if features.Enabled(features.YARNBECPUSuppress) {
		why = "koordlet's " + string(koordfeatures.BECPUSuppress) + " is off (BE suppress does not run)"
	}
	if restoreRoot(r.Quota, h, why) {
		return 1
	}
	return 0
}
