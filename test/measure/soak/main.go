// Command soak runs the churn soak (test/soak) on the node in a box: the
// real koordlet with every YARN feature gate (and upstream's BE evict and
// suppress gates) on, while -containers YARN containers with real processes
// are created and removed over -duration by the NodeManager emulator under
// the real cgroup hierarchy, at most -concurrency alive at once. It prints
// koordlet's open fds, goroutines and heap after the warm-up and at the end,
// the flatness checks, the store against cgroupfs once the churn drained,
// and the top of koordlet's heap growth and CPU profile; it exits non-zero
// when a check fails. Needs root and cgroup v1.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
	"github.com/koordlet-yarn/koordlet-yarn/test/soak"
)

func main() {
	containers := flag.Int("containers", 5000, "YARN containers to create and remove")
	duration := flag.Duration("duration", 5*time.Minute, "time over which they are launched")
	concurrency := flag.Int("concurrency", 100, "most containers alive at once")
	linger := flag.Duration("linger", 3*time.Minute, "wait after the end sample for one more (past koordlet's bounded retentions); 0: none")
	profiles := flag.String("profiles", "", "directory for koordlet's heap and CPU profiles (default: a new temporary directory, kept)")
	flag.Parse()
	ok, err := run(*containers, *duration, *concurrency, *linger, *profiles)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
	if !ok {
		fmt.Println("soak: FAILED")
		os.Exit(1)
	}
	fmt.Println("soak: ok")
}

func run(containers int, duration time.Duration, concurrency int, linger time.Duration, profiles string) (bool, error) {
	top, err := nodebox.Prepare(os.Stderr)
	if err != nil {
		return false, err
	}
	if profiles == "" {
		if profiles, err = os.MkdirTemp("", "koordlet-soak-"); err != nil {
			return false, err
		}
	} else if err := os.MkdirAll(profiles, 0o755); err != nil {
		return false, err
	}
	port, err := soak.FreePort()
	if err != nil {
		return false, err
	}
	if err := os.Setenv("GODEBUG", soak.Godebug()); err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), duration+linger+15*time.Minute)
	defer cancel()
	// Only one box runs on a machine: wait for one that runs (an e2e test).
	box, err := nodebox.Start(ctx, nodebox.Options{Top: top, KoordletArgs: soak.KoordletArgs(port), NodeSLO: soak.NodeSLO(),
		LockWait: 30 * time.Minute})
	if err != nil {
		return false, err
	}
	defer box.Stop()
	fmt.Printf("koordlet %s\n", soak.FeatureGates())
	rep, err := soak.Run(ctx, box, soak.Config{Containers: containers, Duration: duration, Concurrency: concurrency,
		PprofPort: port, ProfileDir: profiles, Linger: linger, Log: os.Stdout})
	if err != nil {
		return false, err
	}
	fmt.Println()
	rep.Print(os.Stdout)
	fmt.Printf("\nkoordlet's profiles: %s\n", profiles)
	pprof := func(title string, args ...string) {
		out, err := exec.Command("go", append([]string{"tool", "pprof", "-top", "-nodecount=15"}, args...)...).CombinedOutput()
		if err != nil {
			fmt.Printf("%s: go tool pprof: %v\n%s", title, err, out)
			return
		}
		fmt.Printf("\n%s\n%s", title, out)
	}
	pprof("heap in use, end − start (top 15):", "-sample_index=inuse_space",
		"-diff_base="+filepath.Join(profiles, "heap-start.pb.gz"), filepath.Join(profiles, "heap-end.pb.gz"))
	last := "end"
	if linger > 0 {
		last = "later"
	}
	pprof("heap in use outside koordlet's metric cache, "+last+" − start (top 15, cumulative):", "-sample_index=inuse_space", "-cum",
		"-ignore=prometheus/prometheus/tsdb|koordlet/metriccache",
		"-diff_base="+filepath.Join(profiles, "heap-start.pb.gz"), filepath.Join(profiles, "heap-"+last+".pb.gz"))
	pprof("heap in use at the end (top 15):", "-sample_index=inuse_space", filepath.Join(profiles, "heap-end.pb.gz"))
	pprof("CPU, 20 s of churn (top 15):", filepath.Join(profiles, "cpu.pb.gz"))
	return rep.OK(), nil
}
