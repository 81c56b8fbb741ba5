package yarnsuppress

import (
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/klog/v2"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
)

// PriorQuotaXattr is the trusted xattr on the YARN hierarchy root's cpu
// cgroup that records its CFS quota before koordlet's first write (YARN's
// own, e.g. from yarn.nodemanager.resource.percentage-physical-cpu-limit,
// or -1). When the division ends (upstream's suppress off, the hierarchy
// below besteffort again, the gate off, even after a koordlet restart)
// that value is written back and the xattr removed.
const PriorQuotaXattr = "trusted.koordlet-yarn.prior-cfs-quota"

// quotaDir is the absolute cpu cgroup dir of rel.
func quotaDir(rel string) string { return cgroups.QuotaDir(rel) }

// recordPrior records rel's current quota once (nothing when a record is
// there already). A record that cannot be made is said once; the write goes
// on, and the quota is restored to unlimited then.
func (s *Strategy) recordPrior(rel string) {
	if err := cgroups.RecordPriorQuota(rel, PriorQuotaXattr); err != nil && !s.priorSaid {
		s.priorSaid = true
		klog.Warningf("yarn: cannot record the YARN hierarchy's cfs quota before dividing the BE budget (%v); it will be set unlimited when the division ends", err)
	}
}

// RestorePriorQuota writes back the quota recorded on rel (PriorQuotaXattr)
// through write and removes the record; restored is false when there was no
// record (koordlet never wrote rel's quota: it is left alone).
func RestorePriorQuota(rel string, write func(dir string, quota int64) bool) (restored bool) {
	return cgroups.RestorePriorQuota(rel, PriorQuotaXattr, write)
}

// Restorer gives the YARN hierarchy root its own CFS quota back when
// koordlet runs with YARNBECPUSuppress off after a koordlet that divided the
// BE budget (a framework loop that is never enabled; see the framework's
// Restorer).
type Restorer struct {
	// Hierarchy returns the YARN hierarchy dir ("" when unknown).
	Hierarchy func() string
}

// Name names the loop.
func (r *Restorer) Name() string { return "YARN BE CPU suppress restore" }

// Enabled is always false: it only restores.
func (r *Restorer) Enabled() bool { return false }

// Run does nothing.
func (r *Restorer) Run(<-chan struct{}) {}

// RestoreDisabled restores the quota when the gate is off.
func (r *Restorer) RestoreDisabled() int {
	if features.Enabled(features.YARNBECPUSuppress) || r.Hierarchy == nil {
		return 0
	}
	h := r.Hierarchy()
	if h == "" {
		return 0
	}
	write := func(dir string, quota int64) bool {
		if err := os.WriteFile(filepath.Join(quotaDir(dir), system.CPUCFSQuotaName), []byte(strconv.FormatInt(quota, 10)), 0); err != nil {
			klog.Warningf("yarn: %s is off: restore the cfs quota of the YARN hierarchy %s to %d: %v", features.YARNBECPUSuppress, dir, quota, err)
			return false
		}
		klog.Infof("yarn: %s is off: the cfs quota of the YARN hierarchy %s is back to %d, its value before koordlet divided the BE budget", features.YARNBECPUSuppress, dir, quota)
		return true
	}
	if RestorePriorQuota(h, write) {
		return 1
	}
	return 0
}
