package yarnevict

import (
	"fmt"
	"strings"

	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/growth"
)

// GrowingMinBytes is the growth over growth.Window that makes a victim
// "growing": well above the noise of an idle JVM, well below what an
// executor filling its heap adds in a second.
const GrowingMinBytes = 32 << 20

// MarkMemoryCause marks v as a cause of memory pressure when it uses more
// memory than it requested, or its memory grew at least GrowingMinBytes
// over growth.Window, and says which in v.CauseText.
func MarkMemoryCause(v *Victim) {
	var why []string
	if v.MemoryRequest > 0 && v.MemoryUsed > v.MemoryRequest {
		why = append(why, fmt.Sprintf("using %dMi, over its %dMi request", v.MemoryUsed>>20, v.MemoryRequest>>20))
	}
	if v.MemoryGrowth >= GrowingMinBytes {
		why = append(why, fmt.Sprintf("growing: +%dMi in the last %v", v.MemoryGrowth>>20, growth.Window))
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
