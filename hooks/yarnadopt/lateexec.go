package yarnadopt

import (
	"time"

	"golang.org/x/sys/unix"
)

// A scan may move a process before the exec watch's event of it is
// handled: the event waits in the ring buffer or in the loop's queue while
// the scan, which found the process in the NodeManager pod's cgroup, moves
// it. The event still comes, with the exec time; lateExec gives the
// container its launch → cgroup time from it. Before, such a container
// kept time 0 (the v2 guest's e2e, 2 of 3 containers in some runs).

// blindMove is a process a scan moved without knowing its exec time.
type blindMove struct {
	container string
	// forkMono is when the process was forked, CLOCK_MONOTONIC ns, from
	// its start time (clock ticks): an exec at that pid before it was
	// another process's.
	forkMono uint64
	// at is when it was moved (pruned after pendingMaxAge).
	at time.Time
}

// userHZ is the unit of /proc's start times (USER_HZ, 100 on Linux).
const userHZ = 100

// maxBlind bounds the moves remembered for their late exec events.
const maxBlind = 4096

// monoNow is CLOCK_MONOTONIC, the clock of the exec watch's events; false
// when it cannot be read.
func monoNow() (uint64, bool) {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil || ts.Nano() < 0 {
		return 0, false
	}
	return uint64(ts.Nano()), true
}

// forkMono converts a process's start time (clock ticks since boot,
// CLOCK_BOOTTIME) to CLOCK_MONOTONIC ns, one tick early (its resolution);
// false when the clocks cannot be read.
func forkMono(startTicks int64) (uint64, bool) {
	var boot, mono unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot) != nil || unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono) != nil {
		return 0, false
	}
	start := startTicks*int64(time.Second/userHZ) - (boot.Nano() - mono.Nano()) - int64(time.Second/userHZ)
	return uint64(max(start, 0)), true
}

// launchToCgroup is the launch → cgroup time an exec at ktime gives the
// container of the process m moved, whose cgroup was made at madeMono:
// only an exec of that process (after its fork) before the cgroup was
// made counts.
func (m blindMove) launchToCgroup(ktime, madeMono uint64) (time.Duration, bool) {
	if ktime < m.forkMono || ktime > madeMono {
		return 0, false
	}
	return time.Duration(madeMono - ktime), true
}

// noteBlind remembers a process a scan moved without its exec time, while
// an exec watch runs (a.mu held).
func (a *Adopter) noteBlind(pid int, startTicks int64, container string) {
	if a.exec == nil || len(a.blind) >= maxBlind {
		return
	}
	if fork, ok := forkMono(startTicks); ok {
		a.blind[pid] = blindMove{container: container, forkMono: fork, at: a.opts.Now()}
	}
}

// lateExec handles the exec event of a process a scan already moved: the
// container's launch → cgroup time is from its earliest exec known. It
// reports whether the event was such a late one (a.mu held).
func (a *Adopter) lateExec(ev ExecEvent) bool {
	m, ok := a.blind[ev.Pid]
	if !ok {
		return false
	}
	ad := a.adoptions[m.container]
	if ad == nil {
		return false
	}
	d, ok := m.launchToCgroup(ev.KtimeNs, ad.madeMono)
	if !ok {
		return false
	}
	if int64(d) > ad.LaunchToCgroupNanos {
		if ad.LaunchToCgroupNanos == 0 {
			a.metrics.launch.Observe(d.Seconds())
		}
		ad.LaunchToCgroupNanos = int64(d)
	}
	return true
}

// pruneBlind forgets the moves older than pendingMaxAge (a.mu held).
func (a *Adopter) pruneBlind() {
	now := a.opts.Now()
	for pid, m := range a.blind {
		if now.Sub(m.at) > pendingMaxAge {
			delete(a.blind, pid)
		}
	}
}
