package colocation

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseVMStat(t *testing.T) {
	tests := []struct {
		name                       string
		in                         string
		stalls, scan, refaultsWant int64
	}{
		{"per-zone allocstall, pgscan_direct, file refaults (5.9 and later)",
			"nr_free_pages 10\nallocstall_dma 0\nallocstall_dma32 2\nallocstall_normal 5\nallocstall_movable 1\npgscan_kswapd 900\npgscan_direct 40\npgscan_direct_throttle 7\nworkingset_refault_anon 3\nworkingset_refault_file 11\n",
			8, 40, 11},
		{"old kernels: one allocstall, pgscan_direct per zone, one refault counter",
			"allocstall 4\npgscan_direct_dma 1\npgscan_direct_normal 20\npgscan_direct_movable 2\npgscan_direct_throttle 9\nworkingset_refault 6\n",
			4, 23, 6},
		{"nothing to count", "nr_free_pages 10\ngarbage\nallocstall_normal x\n", 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stalls, scan, refaults := parseVMStat([]byte(tt.in))
			assert.Equal(t, tt.stalls, stalls, "direct reclaims")
			assert.Equal(t, tt.scan, scan, "pages scanned by direct reclaim")
			assert.Equal(t, tt.refaultsWant, refaults, "file refaults")
		})
	}
}

func TestStallsSub(t *testing.T) {
	from := Stalls{LSRunQueueWait: 5 * time.Millisecond, LSMajorFaults: 3, AllocStalls: 1, CPUPressure: time.Second}
	to := Stalls{LSRunQueueWait: 2 * time.Millisecond, LSMajorFaults: 10, AllocStalls: 4, DirectScan: 9, CPUPressure: 3 * time.Second, IOPressure: time.Millisecond, Steal: 300 * time.Millisecond}
	d := to.Sub(from)
	assert.Equal(t, Stalls{LSMajorFaults: 7, AllocStalls: 3, DirectScan: 9, CPUPressure: 2 * time.Second, IOPressure: time.Millisecond, Steal: 300 * time.Millisecond}, d,
		"a counter that went down (a thread of the service exited) is 0, not negative")
	assert.Equal(t, "LS run-queue wait 0 ms/s, LS major faults 7; node: direct reclaims 3 (9 pages scanned), refaults 0, pressure cpu/memory/io 1000/0/0 ms/s, steal 150 ms/s",
		d.Per(2*time.Second))
}

// TestReadStallsThisKernel reads the counters of this process and this
// kernel: twice as many spinning threads as CPUs wait in the run queue, and
// the wait is read from their schedstat; /proc/vmstat parses; a missing LS
// cgroup is not an error (the pod gone); a process gone reads 0.
func TestReadStallsThisKernel(t *testing.T) {
	if _, err := os.Stat("/proc/self/schedstat"); err != nil {
		t.Skipf("this kernel has no schedstat (CONFIG_SCHED_INFO): %v", err)
	}
	before := runQueueWait(os.Getpid())
	n := 2 * runtime.NumCPU()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
	var wg sync.WaitGroup
	stop := time.Now().Add(300 * time.Millisecond)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for time.Now().Before(stop) {
			}
		}()
	}
	wg.Wait()
	s, err := readStalls(cgroupFS{root: t.TempDir()}, os.Getpid(), "no-such-pod")
	require.NoError(t, err)
	assert.Greater(t, s.LSRunQueueWait-before, 10*time.Millisecond, "%d threads spinning on %d CPUs waited in the run queue", n, runtime.NumCPU())
	assert.Zero(t, s.LSMajorFaults)
	assert.Zero(t, runQueueWait(1<<30), "a process gone reads 0")
	assert.InDelta(t, procStatSteal(t).Seconds(), s.Steal.Seconds(), 1, "the node's steal, /proc/stat's cpu line")
}

// procStatSteal reads /proc/stat's cpu line's eighth value (steal, in
// USER_HZ, 100 on Linux) without procfs.
func procStatSteal(t *testing.T) time.Duration {
	b, err := os.ReadFile("/proc/stat")
	require.NoError(t, err)
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	require.Greater(t, len(f), 8, "cpu line %q", line)
	require.Equal(t, "cpu", f[0])
	ticks, err := strconv.ParseInt(f[8], 10, 64)
	require.NoError(t, err)
	return time.Duration(ticks) * 10 * time.Millisecond
}
