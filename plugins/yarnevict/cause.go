package yarnevict

import (
	"fmt"
	"strings"
	"time"
)

// GrowthWindow is how far back a victim's memory growth is measured, from
// the usage collector's samples in koordlet's metric cache.
const GrowthWindow = 10 * time.Second

// GrowingMinBytes is the growth over GrowthWindow that makes a victim
// "growing": well above the noise of an idle JVM, well below what an
// executor filling its heap adds in a second.
const GrowingMinBytes = 32 << 20

// MarkMemoryCause marks v as a cause of memory pressure when it uses more
// memory than it requested, or its memory grew at least GrowingMinBytes
// over GrowthWindow, and says which in v.CauseText.
func MarkMemoryCause(v *Victim) {
	var why []string
	if v.MemoryRequest > 0 && v.MemoryUsed > v.MemoryRequest {
		why = append(why, fmt.Sprintf("using %dMi, over its %dMi request", v.MemoryUsed>>20, v.MemoryRequest>>20))
	}
	if v.MemoryGrowth >= GrowingMinBytes {
		why = append(why, fmt.Sprintf("growing: +%dMi in the last %v", v.MemoryGrowth>>20, GrowthWindow))
	}
	v.Cause, v.CauseText = len(why) > 0, strings.Join(why, ", ")
}

// MarkCPUCause marks v as a cause of CPU pressure when it uses more CPU
// than it requested.
func MarkCPUCause(v *Victim) {
	v.Cause = v.MilliCPURequest > 0 && v.MilliCPUUsed > v.MilliCPURequest
	v.CauseText = ""
	if v.Cause {
		v.CauseText = fmt.Sprintf("using %dm CPU, over its %dm request", v.MilliCPUUsed, v.MilliCPURequest)
	}
}

// Growth returns how much usage grew over a window from samples (oldest
// first, values in bytes) and now, the usage read at decision time: now
// minus the smallest sample. A victim that started within the window grew
// from nothing. ok is false when nothing is known (no samples and it did
// not start within the window).
func Growth(samples []float64, now int64, startedWithinWindow bool) (growth int64, ok bool) {
	if startedWithinWindow {
		return max(now, 0), true
	}
	if len(samples) == 0 {
		return 0, false
	}
	lowest := samples[0]
	for _, s := range samples[1:] {
		lowest = min(lowest, s)
	}
	return max(now-int64(lowest), 0), true
}
