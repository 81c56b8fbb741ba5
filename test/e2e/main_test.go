// Package e2e holds the node-level end-to-end tests: a real koordlet built
// from this repository, a real API server and etcd, the real kernel's
// cgroups and real processes (see test/nodebox). They run as root on cgroup
// v1 hosts and skip, saying why, elsewhere.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/test/colocation"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
	"github.com/koordlet-yarn/koordlet-yarn/test/v2guest"
)

var skipReason string

func TestMain(m *testing.M) {
	kerneltest.RunHelperIfRequested() // workloads (burners, allocators) re-exec this binary
	colocation.RunHelperIfRequested() // so do the co-location smoke test's LS service and load generator
	flag.Parse()
	if v2guest.RequestedKubelet() && !v2guest.InGuest() {
		// make test-kubelet: the same binary runs in a guest of its own
		// that a real kubelet and containerd own (TestKubelet).
		os.Exit(runKubeletGuest())
	}
	if (v2guest.Requested() && !nodebox.PureV2()) || (v2guest.RequestedV1() && !v2guest.InGuest()) {
		// make test-v2 on a host without cgroup v2: the same binary, with
		// the same arguments, runs in the guest on a real v2 kernel; or,
		// for the tests that need a node of their own on cgroup v1
		// (TestV1Guest), in the guest booted with cgroup v1.
		if err := nodebox.EnsureBinaries(repoTop(), os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			os.Exit(1)
		}
		crds, err := nodebox.KoordinatorCRDDir()
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			os.Exit(1)
		}
		g := v2guest.Guest{}
		if v2guest.RequestedV1() {
			g = v1Guest
		}
		os.Exit(v2guest.RunSelfIn(g, repoTop(), []string{crds}, []string{nodebox.CRDDirEnv + "=" + crds}))
	}
	if err := nodebox.Prerequisites(); err != nil {
		skipReason = err.Error()
	} else if testing.Short() {
		skipReason = "node-level e2e tests do not run with -short"
	} else if v2guest.InGuest() {
		// The host built them; the guest sees the repository read-only.
		if err := nodebox.CheckBinaries(repoTop()); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			os.Exit(1)
		}
	} else if err := nodebox.EnsureBinaries(repoTop(), os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	code := m.Run()
	if shared.server != nil {
		shared.server.Stop()
	}
	os.Exit(code)
}

// shared is the control plane the package's boxes share, started by the
// first box and stopped when the tests end (nodebox.Options.APIServer: in
// the v2 guest a control plane of its own costs each box about a minute).
var shared struct {
	once   sync.Once
	server *nodebox.APIServer
	err    error
}

// sharedAPIServer starts the shared control plane once.
func sharedAPIServer() (*nodebox.APIServer, error) {
	shared.once.Do(func() { shared.server, shared.err = nodebox.StartAPIServer(repoTop()) })
	return shared.server, shared.err
}

func repoTop() string {
	if top := os.Getenv(v2guest.TopEnv); top != "" {
		return top
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		wd, _ := os.Getwd()
		return filepath.Join(wd, "../..")
	}
	return strings.TrimSpace(string(out))
}

// startBox starts a node in a box for t and stops it when t ends; the
// koordlet log is printed when t fails.
func startBox(t *testing.T, opts nodebox.Options) *nodebox.Box {
	t.Helper()
	if skipReason != "" {
		kerneltest.Skip(t, "node-level e2e: "+skipReason)
	}
	opts.Top = repoTop()
	if opts.LockWait == 0 {
		opts.LockWait = 20 * time.Minute // another box (a soak, a demo) may be running
	}
	// The lock wait (another box may run) comes before the 3 minutes of start-up.
	ctx, cancel := context.WithTimeout(context.Background(), opts.LockWait+3*time.Minute)
	defer cancel()
	began := time.Now()
	var err error
	if opts.APIServer, err = sharedAPIServer(); err != nil {
		t.Fatalf("start the boxes' control plane: %v", err)
	}
	b, err := nodebox.Start(ctx, opts)
	if err != nil {
		t.Fatalf("start the node in a box: %v", err)
	}
	t.Logf("the node in a box up in %v (%s)", time.Since(began).Round(time.Millisecond), b.StartSteps())
	t.Cleanup(func() {
		if b.KoordletCrashed() {
			t.Errorf("koordlet exited during the test (see its log below)")
		}
		if errs, rounds := b.KubeletErrors(); len(errs) > 0 {
			t.Errorf("the box's kubelet could not write its QoS and pod cgroups' cpu.shares (%d failed in %d rounds): %s", len(errs), rounds, strings.Join(errs, "\n"))
		}
		if t.Failed() {
			if log, err := os.ReadFile(b.KoordletLog()); err == nil {
				t.Logf("koordlet log tail (upstream's every-second lines left out; the whole log is gone with the box):\n%s", logTail(string(log), 40))
				t.Logf("koordlet's YARN lines since the box started (last 80):\n%s", yarnLines(string(log), 80))
			}
		}
		stopping := time.Now()
		b.Stop()
		t.Logf("the node in a box stopped in %v", time.Since(stopping).Round(time.Millisecond))
	})
	return b
}

// upstreamChatter marks the koordlet log lines upstream's loops print every
// second or minute; a failure's log tail leaves them out so that the test's
// own failure message stays in view of a CI summary.
var upstreamChatter = []string{"cpu_suppress.go:", "predict_server.go:"}

// yarnLines returns the last n lines of log that the plugin set wrote
// ("yarn: ..."), from every koordlet the box ran: a failure that happened
// before a restart keeps its story.
func yarnLines(log string, n int) string {
	var kept []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "] yarn: ") {
			kept = append(kept, l)
		}
	}
	if len(kept) > n {
		kept = kept[len(kept)-n:]
	}
	return strings.Join(kept, "\n")
}

// logTail returns the last n lines of log that are not upstream chatter.
func logTail(log string, n int) string {
	var kept []string
	for _, l := range strings.Split(log, "\n") {
		chatter := false
		for _, c := range upstreamChatter {
			if strings.Contains(l, c) && strings.HasPrefix(l, "I") {
				chatter = true
				break
			}
		}
		if !chatter {
			kept = append(kept, l)
		}
	}
	if len(kept) > n {
		kept = kept[len(kept)-n:]
	}
	return strings.Join(kept, "\n")
}
