package yarninformer

import (
	"context"
	"runtime"
	"testing"
)

// maxResyncAllocsPerContainer bounds the allocations of one steady-state
// resync (NM list, decode, scan, store merge) per container, as
// BenchmarkResync's fixture builds them (owned in cpu, cpuacct and memory;
// no /proc/<pid>/stat, so start times stay unknown and are retried). At
// 2a14299 a resync of 300 such containers made 27.5 allocations per
// container (the boot time read again, through procfs, for every container
// whose start time is unknown: issue 31); with the boot time tried once per
// scan, 19.6. Allocations do not depend on the machine's load, so this is
// a structural bound, not a timing: it fails on that regression.
const maxResyncAllocsPerContainer = 24

func TestResyncAllocationsPerContainer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 300 container cgroups")
	}
	const n = 300
	root := newFakeRoot(t)
	nm := newFakeNM(t)
	p, st := resyncFixture(t, root, nm, n, []string{"cpu", "cpuacct", "memory"})
	p.Resync(context.Background()) // past any first-scans-only work (AM decisions)
	allocs := testing.AllocsPerRun(5, func() { p.Resync(context.Background()) })
	if st.Len() != n || p.Status().NMError != "" {
		t.Fatalf("store has %d containers, NM error %q", st.Len(), p.Status().NMError)
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	const runs = 10
	for i := 0; i < runs; i++ {
		p.Resync(context.Background())
	}
	runtime.ReadMemStats(&m1)
	bytesPer := float64(m1.TotalAlloc-m0.TotalAlloc) / runs / n
	t.Logf("%.0f bytes per container per resync (bound %d)", bytesPer, maxResyncBytesPerContainer)
	if bytesPer > maxResyncBytesPerContainer {
		t.Errorf("a resync allocates %.0f bytes per container, more than %d: something on the resync path grew", bytesPer, maxResyncBytesPerContainer)
	}
	per := allocs / n
	t.Logf("%.0f allocations per resync of %d containers (%.1f per container; bound %d)", allocs, n, per, maxResyncAllocsPerContainer)
	if per > maxResyncAllocsPerContainer {
		t.Errorf("a resync allocates %.1f times per container, more than %d: something on the resync path grew (profile with make bench BENCH=Resync PKGS=./plugins/yarninformer/ and -memprofile)", per, maxResyncAllocsPerContainer)
	}
}

// maxResyncBytesPerContainer bounds the bytes one steady-state resync
// allocates per container in the same fixture: about 1,800 with the
// environment buffer (256 KiB) made only once the environ file is open;
// 5,300 at 2a14299, which made it before the open, for every try at a
// process already gone (issue 31).
const maxResyncBytesPerContainer = 2500
