package yarnledger

import "time"

// NoticeDelay is how long an over-commit takes to reach the
// ResourceManager: the RM sync notices it within its interval and the push
// takes up to the RM's request timeout. Without a sync running
// (YARNRMNodeResourceSync off, no RM endpoint) nothing is waited for: 0.
func NoticeDelay(syncRunning bool, syncInterval, rmTimeout time.Duration) time.Duration {
	if !syncRunning {
		return 0
	}
	return syncInterval + rmTimeout
}

// ReleaseDelay is how long the ResourceManager takes to release once
// asked: the ask is pushed at the sync's next step (within its interval
// and the RM's request timeout), the RM preempts after the over-commit
// timeout, and the grace covers the NodeManager's report. The grace is
// the one the RM sync derived from the RM's node heartbeat for its last
// ask (derivedGrace, 0 until it has asked), else flagGrace
// (--yarn-rm-preemption-grace).
func ReleaseDelay(syncInterval, rmTimeout, preemptionTimeout, flagGrace, derivedGrace time.Duration) time.Duration {
	grace := flagGrace
	if derivedGrace > 0 {
		grace = derivedGrace
	}
	return syncInterval + rmTimeout + preemptionTimeout + grace
}

// MemoryMiBCeil is b's memory in MiB, rounded up.
func (b Batch) MemoryMiBCeil() int64 {
	return (b.MemoryBytes + 1<<20 - 1) >> 20
}
