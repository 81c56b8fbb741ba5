package yarnsuppress

import (
	"errors"
	"fmt"

	"k8s.io/klog/v2"

	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
)

// The YARN hierarchy root's quota is written only through the framework's
// one writer (cgroups.RootQuota): it records the root's own quota (YARN's,
// e.g. from yarn.nodemanager.resource.percentage-physical-cpu-limit, or -1)
// before koordlet's first write, in cgroups.PriorQuotaXattr. When the
// division ends (upstream's suppress off, the hierarchy below besteffort
// again, the gate off, even after a koordlet restart) that quota goes back and the record goes.

// Runs reports whether koordlet runs the YARN-aware BE suppress, which
// divides the BE budget onto the YARN root and so owns its cfs quota:
// YARNBECPUSuppress on (this strategy in koordlet's cpuSuppress slot) and
// koordlet's own BECPUSuppress on (upstream runs the slot's strategy only
// then). Otherwise the root's quota is YARN's: a value koordlet left there
// is given back (Restorer) and /yarn/restore
// counts it.
func Runs() bool {
	return features.Enabled(features.YARNBECPUSuppress) && features.Enabled(koordfeatures.BECPUSuppress)
}

// ErrNoQuotaWriter is a BE suppress or Restorer built without koordlet's
// one writer of the YARN root's quota. A writer of its own would remember
// its own writes only, so a record taken by one could come from koordlet's
// value written by the other.
var ErrNoQuotaWriter = errors.New("no writer of the YARN root's cfs quota given (the one cgroups.RootQuota is required)")

// restoreRoot gives rel its own quota back (nothing when koordlet never
// wrote it); why names the occasion in the log line.
func restoreRoot(q *cgroups.RootQuota, rel, why string) bool {
	restored, quota, err := q.Restore(rel)
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
	// hierarchy returns the YARN hierarchy dir ("" when unknown).
	hierarchy func() string
	// quota is the root's writer, shared with suppress.
	quota *cgroups.RootQuota
}

// NewRestorer returns the restorer of the YARN root hierarchy() names,
// writing through quota, the one writer BE suppress shares (required:
// ErrNoQuotaWriter).
func NewRestorer(hierarchy func() string, quota *cgroups.RootQuota) (*Restorer, error) {
	if quota == nil {
		return nil, fmt.Errorf("BE suppress restorer: %w", ErrNoQuotaWriter)
	}
	return &Restorer{hierarchy: hierarchy, quota: quota}, nil
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
	if Runs() || r.hierarchy == nil {
		return 0
	}
	h := r.hierarchy()
	if h == "" {
		return 0
	}
	why := string(features.YARNBECPUSuppress) + " is off"
	if features.Enabled(features.YARNBECPUSuppress) {
		why = "koordlet's " + string(koordfeatures.BECPUSuppress) + " is off (BE suppress does not run)"
	}
	if restoreRoot(r.quota, h, why) {
		return 1
	}
	return 0
}
