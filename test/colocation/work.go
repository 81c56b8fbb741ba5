package colocation

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// workWindow is the slice of the service's memory one pass reads and
// writes: 64 KiB, one cache line in 64 bytes touched.
const workWindow = 64 << 10

// work is the LS service's request handler body: a fixed number of passes
// over a window of its memory (a hash over one byte per cache line, one
// byte written back per pass), the window moving through the service's
// memory from request to request, so the work is CPU and cache bound as a
// real service's is.
type work struct {
	buf  []byte
	next atomic.Uint64
}

// newWork allocates and touches mib MiB.
func newWork(mib int) *work {
	if mib < 1 {
		mib = 1
	}
	w := &work{buf: make([]byte, mib<<20)}
	for i := 0; i < len(w.buf); i += 4096 {
		w.buf[i] = byte(i)
	}
	return w
}

// do runs passes passes and returns the hash (so nothing is optimised away).
func (w *work) do(passes int) uint64 {
	windows := uint64(len(w.buf) / workWindow)
	off := (w.next.Add(1) % windows) * workWindow
	region := w.buf[off : off+workWindow]
	h := uint64(1469598103934665603)
	for p := 0; p < passes; p++ {
		for i := 0; i < len(region); i += 64 {
			h ^= uint64(region[i])
			h *= 1099511628211
		}
		region[p%len(region)] = byte(h)
	}
	return h
}

// threadCPU is the calling thread's CPU time.
func threadCPU() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, fmt.Errorf("thread CPU clock: %w", err)
	}
	return time.Duration(ts.Nano()), nil
}

// CalibratePasses returns the number of passes whose CPU time (the thread's
// own, so other load on the machine does not inflate it) is about target:
// the best of five trials, as the least disturbed.
func CalibratePasses(target time.Duration) (int, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	w := newWork(8)
	const trial = 2000
	best := time.Duration(0)
	for i := 0; i < 5; i++ {
		t0, err := threadCPU()
		if err != nil {
			return 0, err
		}
		w.do(trial)
		t1, err := threadCPU()
		if err != nil {
			return 0, err
		}
		if d := t1 - t0; best == 0 || d < best {
			best = d
		}
	}
	if best <= 0 {
		return 0, fmt.Errorf("calibration: %d passes took no CPU time", trial)
	}
	passes := int(float64(trial) * float64(target) / float64(best))
	if passes < 1 {
		passes = 1
	}
	return passes, nil
}
