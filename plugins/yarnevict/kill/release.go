package kill

import (
	"errors"
	"time"
)

// ErrNothingReleased: the container's processes were killed, but its memory
// was not released (a kill that released nothing is a failure).
var ErrNothingReleased = errors.New("no memory was released")

// ReleaseWait bounds how long an eviction waits, after the kill, for the
// killed processes' memory to be freed (exiting processes free their
// address space in exit) before it reports what was released.
const ReleaseWait = 3 * time.Second

// Held is what a killed container still holds: memory (koordlet's usage, no
// page cache), whether any of its threads is still there (exiting), and
// whether those threads' memory cannot be read (Unmeasured: no memory
// cgroup, and only threads of processes whose /proc shows no address space
// left, one of them possibly still freeing it).
type Held struct {
	Bytes      int64
	Running    bool
	Unmeasured bool
}

// MeasureRelease waits, up to wait, until the victim holds nothing or has no
// thread left (page cache left in its cgroup is not released by waiting),
// and returns what its eviction released: its usage at the decision,
// before, minus what it still holds (never below 0 nor above before), and
// what its exiting threads still hold (0 once none is left). A victim still
// Unmeasured at the deadline is taken to hold all it held (nothing claimed
// released). known is false when what it holds cannot be read: then
// nothing is claimed.
func MeasureRelease(before int64, held func() (Held, bool), wait time.Duration, sleep func(time.Duration)) (released, still int64, known bool) {
	deadline := time.Now().Add(wait)
	for {
		h, ok := held()
		if !ok {
			return 0, 0, false
		}
		if !h.Running {
			// No thread holds it: waiting frees nothing more.
			return min(max(before-max(h.Bytes, 0), 0), before), 0, true
		}
		late := !time.Now().Before(deadline)
		if h.Unmeasured && late {
			return 0, before, true
		}
		if (h.Bytes <= 0 && !h.Unmeasured) || late {
			return min(max(before-max(h.Bytes, 0), 0), before), max(h.Bytes, 0), true
		}
		sleep(20 * time.Millisecond)
	}
}
