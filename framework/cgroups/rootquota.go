package cgroups

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/resourceexecutor"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"
)

// PriorQuotaXattr is the trusted xattr on the YARN hierarchy root's cpu
// cgroup dir that records the root's own CFS quota (YARN's, e.g. from
// yarn.nodemanager.resource.percentage-physical-cpu-limit, or -1) before
// koordlet's first write. It is removed once that quota is back, so it
// outlives koordlet: a later koordlet, whatever its gates, restores from
// it. One record for every writer (the BE suppress division, its gate-off
// restorer, the interference controller).
const PriorQuotaXattr = "trusted.koordlet-yarn.prior-cfs-quota"

// RootQuota is the one writer of the YARN hierarchy root's CFS quota: it
// records the root's own quota before koordlet's first write, writes
// through koordlet's resource executor (not cacheable: the value on the
// file is what counts; -1 is "max" on v2) and puts the own quota back.
//
// The record is never taken from a value koordlet wrote. The current
// quota counts as koordlet's when
//  1. a record exists: it is kept as it is, whatever the root holds now
//     (a koordlet that wrote the root and then died, or whose restore
//     failed, left both);
//  2. this process wrote that value and has not put the own quota back
//     since (the writer remembers the last quota it wrote per root): with
//     no record then (the xattr removed from outside, or not settable
//     before), YARN's own quota is unknown and -1 is recorded.
//
// Across a restart only (1) applies; where a trusted xattr cannot be set
// (koordlet without CAP_SYS_ADMIN), nothing is recorded, said once, and
// the root gets -1 back only from the process that wrote it.
type RootQuota struct {
	mu sync.Mutex
	// written is the last quota this process wrote per root (absolute
	// cpu dir), until the own quota is back.
	written map[string]int64
	// said: a record could not be made, said once.
	said bool
}

// NewRootQuota returns a writer. koordlet has one, made by Install and
// handed to every user of the YARN root's quota (BE suppress, its restorer,
// the interference controller), so that what one wrote the others know.
func NewRootQuota() *RootQuota { return &RootQuota{written: map[string]int64{}} }

// QuotaDir is the absolute cpu cgroup dir of rel ("" when koordlet's
// system configuration has no cfs quota resource).
func QuotaDir(rel string) string {
	r, err := system.GetCgroupResource(system.CPUCFSQuotaName)
	if err != nil {
		return ""
	}
	return filepath.Dir(r.Path(rel))
}

// Set records rel's own quota (unless recorded: see RootQuota) and writes
// quota. A record that cannot be made is said once; the write goes on.
func (q *RootQuota) Set(rel string, quota int64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.record(rel); err != nil && !q.said {
		q.said = true
		klog.Warningf("yarn: cannot record the own cfs quota of the YARN hierarchy %s before koordlet writes it (%v); only this koordlet can give it back (unlimited)", rel, err)
	}
	if err := write(rel, quota); err != nil {
		return err
	}
	q.written[QuotaDir(rel)] = quota
	return nil
}

// Own returns rel's own quota (-1 unlimited): the record, else the current
// quota unless this process wrote it (then -1: unknown).
func (q *RootQuota) Own(rel string) (int64, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if prior, ok := readRecord(QuotaDir(rel)); ok {
		return prior, nil
	}
	return q.current(rel)
}

// Restore writes rel's own quota back and removes the record: the
// recorded quota, else -1 when this process wrote rel's quota without a
// record. restored is false (and nothing is written) when koordlet never
// wrote it: the quota is YARN's and is left alone.
func (q *RootQuota) Restore(rel string) (restored bool, quota int64, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	dir := QuotaDir(rel)
	quota, ok := readRecord(dir)
	if !ok {
		if _, wrote := q.written[dir]; !wrote {
			return false, 0, nil
		}
		quota = -1
	}
	if err := write(rel, quota); err != nil {
		return false, quota, err
	}
	delete(q.written, dir)
	if err := unix.Removexattr(dir, PriorQuotaXattr); err != nil && !errors.Is(err, unix.ENODATA) {
		// Harmless: the record is the value just written; the next restore writes it again.
		klog.V(4).Infof("yarn: remove %s from %s: %v", PriorQuotaXattr, dir, err)
	}
	return true, quota, nil
}

// record records rel's own quota unless a record exists (caller holds mu).
func (q *RootQuota) record(rel string) error {
	dir := QuotaDir(rel)
	if dir == "" {
		return fmt.Errorf("no cfs quota resource for %s", rel)
	}
	if _, err := unix.Getxattr(dir, PriorQuotaXattr, make([]byte, 32)); err == nil {
		return nil
	}
	own, err := q.current(rel)
	if err != nil {
		return err
	}
	if err := unix.Setxattr(dir, PriorQuotaXattr, []byte(strconv.FormatInt(own, 10)), 0); err != nil {
		return fmt.Errorf("record the cfs quota of %s (xattr %s): %w", dir, PriorQuotaXattr, err)
	}
	return nil
}

// current is rel's quota now, or -1 when this process wrote it (caller
// holds mu).
func (q *RootQuota) current(rel string) (int64, error) {
	// koordlet's reader: cpu.cfs_quota_us on v1, cpu.max on v2 ("max" is -1).
	cur, err := resourceexecutor.NewCgroupReader().ReadCPUQuota(rel)
	if err != nil {
		return 0, fmt.Errorf("read the cfs quota of %s: %w", rel, err)
	}
	if w, ok := q.written[QuotaDir(rel)]; ok && w == cur {
		return -1, nil // koordlet's own value: YARN's is unknown
	}
	return cur, nil
}

// readRecord returns the quota recorded on dir.
func readRecord(dir string) (int64, bool) {
	if dir == "" {
		return 0, false
	}
	buf := make([]byte, 32)
	n, err := unix.Getxattr(dir, PriorQuotaXattr, buf)
	if err != nil {
		return 0, false
	}
	quota, err := strconv.ParseInt(strings.TrimSpace(string(buf[:n])), 10, 64)
	if err != nil || quota == 0 || quota < -1 {
		quota = -1
	}
	return quota, true
}

// write sets rel's cfs quota through koordlet's resource executor (not
// cacheable: upstream's suppress and other koordlets write quotas too, so
// a cached value may be stale).
func write(rel string, quota int64) error {
	u, err := resourceexecutor.DefaultCgroupUpdaterFactory.New(system.CPUCFSQuotaName, rel, strconv.FormatInt(quota, 10), nil)
	if err == nil {
		_, err = resourceexecutor.NewResourceUpdateExecutor().Update(false, u)
	}
	if err != nil {
		return fmt.Errorf("set the cfs quota of %s to %d: %w", rel, quota, err)
	}
	return nil
}

// QuotaRecorded reports whether the YARN root rel still carries the record
// of its own quota (PriorQuotaXattr): koordlet wrote the quota and has not
// put the own one back.
func QuotaRecorded(rel string) bool {
	_, ok := readRecord(QuotaDir(rel))
	return ok
}
