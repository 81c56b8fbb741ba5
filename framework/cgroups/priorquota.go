package cgroups

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/resourceexecutor"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"
)

// The prior CFS quota of a cgroup koordlet writes the quota of but does
// not own (the YARN hierarchy root, whose quota may be YARN's own) is kept
// in a trusted xattr on its cpu cgroup dir before the first write, so that
// the value goes back when koordlet stops writing it — even from a later
// koordlet.

// QuotaDir is the absolute cpu cgroup dir of rel ("" when koordlet's
// system configuration has no cfs quota resource).
func QuotaDir(rel string) string {
	r, err := system.GetCgroupResource(system.CPUCFSQuotaName)
	if err != nil {
		return ""
	}
	return filepath.Dir(r.Path(rel))
}

// RecordPriorQuota records rel's current cfs quota in xattr, unless a
// record is there already.
func RecordPriorQuota(rel, xattr string) error {
	dir := QuotaDir(rel)
	if dir == "" {
		return fmt.Errorf("no cfs quota resource for %s", rel)
	}
	if _, err := unix.Getxattr(dir, xattr, make([]byte, 32)); err == nil {
		return nil
	}
	// koordlet's reader: cpu.cfs_quota_us on v1, cpu.max on v2 ("max" is -1).
	q, err := resourceexecutor.NewCgroupReader().ReadCPUQuota(rel)
	if err != nil {
		return fmt.Errorf("read the cfs quota of %s: %w", dir, err)
	}
	if err := unix.Setxattr(dir, xattr, []byte(strconv.FormatInt(q, 10)), 0); err != nil {
		return fmt.Errorf("record the cfs quota of %s (xattr %s): %w", dir, xattr, err)
	}
	return nil
}

// PriorQuota returns the quota recorded on rel in xattr.
func PriorQuota(rel, xattr string) (int64, bool) {
	dir := QuotaDir(rel)
	if dir == "" {
		return 0, false
	}
	buf := make([]byte, 32)
	n, err := unix.Getxattr(dir, xattr, buf)
	if err != nil {
		return 0, false
	}
	quota, err := strconv.ParseInt(strings.TrimSpace(string(buf[:n])), 10, 64)
	if err != nil || quota == 0 || quota < -1 {
		quota = -1
	}
	return quota, true
}

// RestorePriorQuota writes back the quota recorded on rel in xattr through
// write and removes the record; restored is false when there was no record
// (koordlet never wrote rel's quota: it is left alone).
func RestorePriorQuota(rel, xattr string, write func(rel string, quota int64) bool) (restored bool) {
	quota, ok := PriorQuota(rel, xattr)
	if !ok || !write(rel, quota) {
		return false
	}
	if err := unix.Removexattr(QuotaDir(rel), xattr); err != nil && !errors.Is(err, unix.ENODATA) {
		klog.V(4).Infof("yarn: remove %s from %s: %v", xattr, QuotaDir(rel), err)
	}
	return true
}
