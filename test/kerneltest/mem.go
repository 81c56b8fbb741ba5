package kerneltest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// RssAnon returns the anonymous resident memory of process pid in bytes,
// from /proc/<pid>/status.
func RssAnon(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("pid %d: RssAnon %q: %w", pid, v, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("pid %d: no RssAnon in status", pid)
}

// HelperBaseline returns the anonymous memory a helper workload of this
// test binary holds beyond what its mode allocates (the Go runtime and the
// binary's package state), measured on an "alloc=1" helper outside any
// cgroup of the test: a workload allocating N MiB holds N MiB plus this.
func HelperBaseline(t testing.TB) int64 {
	t.Helper()
	pid := StartPlain(t, HelperScript("alloc=1"))
	var prev, anon int64 = -1, 0
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := RssAnon(pid)
		// Settled: two reads 100 ms apart agree and the 1 MiB is there.
		if err == nil && v > 1<<20 && v == prev {
			anon = v
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("helper %d did not settle: RssAnon %d (%v)", pid, v, err)
		}
		prev = v
		time.Sleep(100 * time.Millisecond)
	}
	return anon - 1<<20
}
