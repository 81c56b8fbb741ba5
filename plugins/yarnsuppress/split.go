package yarnsuppress

import (
	"math"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"
)

// The BE budget and how it is divided, when the YARN hierarchy is not below
// the besteffort cgroup.
//
// A suppress caps BE CPU to what LS work leaves: upstream's cpuSuppress
// computes that budget and writes it as the besteffort cgroup's cfs quota.
// Below besteffort, YARN shares it with the BE pods inside one cgroup. A
// YARN hierarchy elsewhere is a second cgroup, and copying the budget onto
// it would give BE pods and YARN twice the budget together; so the budget is
// divided between the two cgroups and their quotas sum to it exactly.
//
// How it is divided, and why: by request under contention, by usage
// otherwise — the behaviour of the one shared cgroup it replaces, where CFS
// gives each busy child its weighted share and lets an idle child's share go
// to the others.
//   - Each side's demand is its recent usage plus a headroom (a tenth of the
//     budget). A side using at least 90% of its current quota is capped: its
//     real demand is unknown, so it is treated as unbounded.
//   - The budget is water-filled by weight, the weights being the sides'
//     CPU requests (batch-cpu of the BE pods, the NM's vcores of the YARN
//     containers): a side whose demand is below its weighted share gets its
//     demand, the other side the rest; two capped sides get their weighted
//     shares; two sides with slack split the surplus by weight too.
//
// Why not by usage alone: usage is bounded by the quota, so under contention
// each side's usage mirrors the quota it was given and the split freezes
// wherever it happens to be; a side squeezed once stays squeezed. Why not by
// request alone: an idle side's share would sit unused while the other side
// is throttled. With the headroom, a side that is idle now and starts uses
// its whole (small) quota at once, is seen capped at the next round and gets
// its weighted share — no starvation. The result is a function of demands
// that only moves when usage crosses the capped mark, and a side with slack
// keeps a headroom above its usage so it is not flagged capped by its own
// quota: no oscillation; the caller also skips changes smaller than
// upstream's own suppress bypass (1% of the node's CPU). Without known
// requests (both zero or unknown) the weights are equal.
//
// Each side keeps at least system.CFSQuotaMinValue (the kernel's and
// koordlet's smallest cfs quota); upstream's smallest BE budget (its
// cpuSuppress minimum, 2000 µs) is exactly two of them, so both floors and
// the exact sum always hold for a budget set by upstream.

// Side is the BE pods or the YARN containers, in µs of CPU per cfs period
// (milli-cores × 100 with koordlet's 100 ms period).
type Side struct {
	// Usage is the recent CPU usage.
	Usage int64
	// Request is the CPU request; negative when unknown.
	Request int64
	// Quota is the cfs quota the side has now; 0 when not set by us.
	Quota int64
}

const (
	// minSideQuota is the smallest cfs quota either side gets.
	minSideQuota = system.CFSQuotaMinValue
	// headroomPercent of the budget is added to a side's usage as its
	// demand, so that a side with slack is not capped by its own quota.
	headroomPercent = 10
	// cappedPercent: a side using this share of its quota is capped.
	cappedPercent = 90
)

// Divide splits budget (µs per period, positive) between the BE pods and
// YARN. be + yarn == budget whenever budget ≥ 2 × minSideQuota; a smaller
// budget (never set by upstream) gives each side minSideQuota.
func Divide(budget int64, be, yarn Side) (beQuota, yarnQuota int64) {
	if budget < 2*minSideQuota {
		return minSideQuota, minSideQuota
	}
	headroom := max(budget*headroomPercent/100, minSideQuota)
	demand := func(s Side) int64 {
		if s.Quota > 0 && s.Usage*100 >= s.Quota*cappedPercent {
			return math.MaxInt64 // capped: wants more than it has
		}
		return max(s.Usage, 0) + headroom
	}
	wBE, wYARN := be.Request, yarn.Request
	if wBE < 0 || wYARN < 0 || wBE+wYARN == 0 {
		wBE, wYARN = 1, 1
	}
	// budget ≤ 2^20 cores × 10^5 and requests of the same order: the
	// products stay far below 2^63.
	share := budget * wBE / (wBE + wYARN) // the BE pods' weighted share
	dBE, dYARN := demand(be), demand(yarn)
	switch {
	case dBE <= share && dYARN <= budget-share:
		// Both have slack: each its demand, the surplus by weight.
		beQuota = dBE + (budget-dBE-dYARN)*wBE/(wBE+wYARN)
	case dBE < share:
		beQuota = dBE
	case dYARN < budget-share:
		beQuota = budget - dYARN
	default:
		beQuota = share
	}
	beQuota = min(max(beQuota, minSideQuota), budget-minSideQuota)
	return beQuota, budget - beQuota
}
