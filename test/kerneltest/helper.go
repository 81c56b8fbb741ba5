package kerneltest

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// helperEnv selects a helper mode in a re-executed test binary.
const helperEnv = "KOORDLET_YARN_TEST_HELPER"

// RunHelperIfRequested turns this process into a workload when it was
// started by HelperScript; call it first in TestMain. Modes: "burn" spins on
// one CPU; "alloc=<MiB>" allocates and touches that much memory;
// "grow=<MiB>@<MiB/s>" allocates it gradually, like an executor filling its
// heap; all then run until killed. A "noterm:" prefix makes the workload
// ignore SIGTERM.
func RunHelperIfRequested() {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		return
	}
	if m, ok := strings.CutPrefix(mode, "noterm:"); ok {
		// A process that does not end on SIGTERM (a JVM stuck in a
		// shutdown hook): only SIGKILL or cgroup.kill ends it.
		signal.Ignore(syscall.SIGTERM)
		mode = m
	}
	switch {
	case mode == "burn":
		x := 0
		for {
			x++
		}
	case strings.HasPrefix(mode, "spin="):
		// A CPU-bound latency-sensitive stand-in: one worker per CPU counts
		// loop iterations for the duration; the total is printed.
		d, err := time.ParseDuration(strings.TrimPrefix(mode, "spin="))
		if err != nil {
			fmt.Fprintln(os.Stderr, "bad spin duration:", err)
			os.Exit(2)
		}
		deadline := time.Now().Add(d)
		counts := make(chan uint64)
		for w := 0; w < runtime.NumCPU(); w++ {
			go func() {
				n := uint64(0)
				for time.Now().Before(deadline) {
					for i := 0; i < 1000; i++ {
						n++
					}
				}
				counts <- n
			}()
		}
		total := uint64(0)
		for w := 0; w < runtime.NumCPU(); w++ {
			total += <-counts
		}
		fmt.Println(total)
		os.Exit(0)
	case strings.HasPrefix(mode, "grow="):
		var total, rate int
		if _, err := fmt.Sscanf(strings.TrimPrefix(mode, "grow="), "%d@%d", &total, &rate); err != nil || rate <= 0 {
			fmt.Fprintln(os.Stderr, "bad grow spec:", mode)
			os.Exit(2)
		}
		var chunks [][]byte
		step := rate << 20 / 20 // 20 steps a second
		for grown := 0; grown < total<<20; grown += step {
			c := make([]byte, step)
			for i := 0; i < len(c); i += 4096 {
				c[i] = 1
			}
			chunks = append(chunks, c)
			time.Sleep(50 * time.Millisecond)
		}
		for {
			time.Sleep(time.Hour)
			chunks[0][0]++
		}
	case strings.HasPrefix(mode, "alloc="):
		mib, err := strconv.Atoi(strings.TrimPrefix(mode, "alloc="))
		if err != nil {
			fmt.Fprintln(os.Stderr, "bad alloc size:", err)
			os.Exit(2)
		}
		buf := make([]byte, mib<<20)
		for i := 0; i < len(buf); i += 4096 {
			buf[i] = 1
		}
		for {
			time.Sleep(time.Hour)
			buf[0]++
		}
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
	os.Exit(2)
}

// HelperScript returns a shell command that execs this test binary as a
// workload of the given mode (see RunHelperIfRequested).
func HelperScript(mode string) string {
	self, err := os.Executable()
	if err != nil {
		self = os.Args[0]
	}
	return fmt.Sprintf("exec env %s=%s %q -test.run=^$", helperEnv, mode, self)
}
