package cgroups

import (
	"github.com/koordinator-sh/koordinator/pkg/koordlet/resourceexecutor"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"
)

// PriorQuotaXattr is the trusted xattr on the YARN hierarchy root's cpu
// cgroup dir that records the root's own CFS quota (YARN's, e.g. from
// yarn.nodemanager.resource.percentage-physical-cpu-limit, or -1) before
// koordlet's first write. It is removed once that quota is back, so it
// outlives koordlet: a later koordlet, whatever its gates, restores from
// it. One record for every writer (the BE suppress division, its gate-off
// restorer).
const PriorQuotaXattr = "trusted.koordlet-yarn.prior-cfs-quota"

// RootQuota is the one writer of the YARN hierarchy root's CFS quota (a
// RootFile): it records the root's own quota before koordlet's first
// write, writes through koordlet's resource executor (-1 is "max" on v2)
// and puts the own quota back.
type RootQuota struct{ *RootFile }

// quotaSpec is the CFS quota's RootFile: cpu.cfs_quota_us on v1, cpu.max
// on v2, -1 unlimited; a record of 0 or below -1 is no quota.
var quotaSpec = RootFileSpec{
	Name:     "cfs quota",
	Resource: func() (system.Resource, error) { return system.GetCgroupResource(system.CPUCFSQuotaName) },
	Xattr:    PriorQuotaXattr,
	// koordlet's reader: cpu.cfs_quota_us on v1, cpu.max on v2 ("max" is -1).
	Read:      func(rel string) (int64, error) { return resourceexecutor.NewCgroupReader().ReadCPUQuota(rel) },
	Unlimited: -1,
	Valid:     func(v int64) bool { return v > 0 || v == -1 },
	Update:    resourceexecutor.CgroupUpdateWithUnlimitedFunc,
}

// NewRootQuota returns a writer. koordlet has one, made by Install and
// handed to every user of the YARN root's quota (BE suppress and its
// restorer), so that what one wrote the other knows.
func NewRootQuota() *RootQuota { return &RootQuota{NewRootFile(quotaSpec)} }

// QuotaDir is the absolute cpu cgroup dir of rel ("" when koordlet's
// system configuration has no cfs quota resource).
func QuotaDir(rel string) string { return (&RootFile{spec: quotaSpec}).Dir(rel) }

// QuotaRecorded reports whether the YARN root rel still carries the record
// of its own quota (PriorQuotaXattr): koordlet wrote the quota and has not
// put the own one back.
func QuotaRecorded(rel string) bool { return (&RootFile{spec: quotaSpec}).Recorded(rel) }
