package v2guest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Env variables between the host and the guest side of a test binary.
const (
	// GuestEnv asks a test binary on a host without cgroup v2 to run itself
	// in the guest (make test-v2 sets it to "v2").
	GuestEnv = "KOORDLET_YARN_E2E_GUEST"
	// TopEnv tells the test binary in the guest the repository top (the
	// guest has no go command to ask).
	TopEnv = "KOORDLET_YARN_TOP"
	// PrebuiltEnv tells the test binary in the guest that the host built
	// koordlet and the e2e tools (the guest sees the repository read-only).
	PrebuiltEnv = "KOORDLET_YARN_PREBUILT"
)

// Requested reports whether GuestEnv asks for the v2 guest.
func Requested() bool { return os.Getenv(GuestEnv) == "v2" }

// RequestedKubelet reports whether GuestEnv asks for the real-kubelet
// guest ("kubelet": a cgroup v2 node that a kubelet and containerd own,
// which this shared host must never be).
func RequestedKubelet() bool { return os.Getenv(GuestEnv) == "kubelet" }

// RequestedV1 reports whether GuestEnv asks for the guest booted with
// cgroup v1 ("v1": tests that need a kernel of their own on a v1 node, as
// global memory pressure does, which this shared host must never see).
func RequestedV1() bool { return os.Getenv(GuestEnv) == "v1" }

// Guest sizes a RunSelf guest.
type Guest struct {
	// CgroupV1 boots it with cgroup v1 (a hybrid host) instead of v2.
	CgroupV1 bool
	// MemoryMiB is its memory (0: 8192, what the v2 scenarios allocate).
	MemoryMiB int
	// ScratchMiB gives it a scratch disk (Options.ScratchMiB).
	ScratchMiB int
	// Node makes it a node a real kubelet can own (Options.Node).
	Node bool
}

// InGuest reports whether this process runs in the guest (its init set
// PrebuiltEnv and TopEnv).
func InGuest() bool { return os.Getenv(PrebuiltEnv) == "1" && os.Getenv(TopEnv) != "" }

// Memory and CPUs of the test guest: the pressure scenarios allocate
// gigabytes; TCG runs one host thread per guest CPU.
const (
	testMemoryMiB = 8192
	testCPUs      = 2
)

// RunSelf runs this test binary, with its arguments, in the guest and
// returns its exit status; its standard output (the test events go test
// reads) is this process's. top is the repository top: the guest sees it,
// the test binary's directory and ro read-only; the kernel, the init and
// the run's files go to top/build/v2guest. env is added to the test's
// environment (with every KOORDLET_YARN_ variable of this one). The guest
// is the v2 one of testMemoryMiB; RunSelfIn sizes it.
func RunSelf(top string, ro, env []string) int { return RunSelfIn(Guest{}, top, ro, env) }

// RunSelfIn is RunSelf in the guest g.
func RunSelfIn(g Guest, top string, ro, env []string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "v2guest:", err)
		return 1
	}
	work := filepath.Join(top, "build/v2guest")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return fail(err)
	}
	k, err := FetchKernel(filepath.Join(work, "kernel"))
	if err != nil {
		return fail(err)
	}
	initBin, err := BuildInit(top, work)
	if err != nil {
		return fail(err)
	}
	self, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		return fail(err)
	}
	budget := 30 * time.Minute
	if f := flag.Lookup("test.timeout"); f != nil {
		if d, err := time.ParseDuration(f.Value.String()); err == nil && d > 0 {
			budget = d
		}
	}
	testTimeout, guestTimeout := GuestTimeouts(budget)
	env = append([]string{TopEnv + "=" + top, PrebuiltEnv + "=1"}, env...)
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "KOORDLET_YARN_") && !strings.HasPrefix(kv, GuestEnv+"=") {
			env = append(env, kv)
		}
	}
	mem, version := testMemoryMiB, "v2"
	if g.MemoryMiB > 0 {
		mem = g.MemoryMiB
	}
	if g.CgroupV1 {
		version = "v1"
	}
	fmt.Fprintf(os.Stderr, "v2guest: running %s in a guest on Debian's kernel %s (qemu TCG, %d CPUs, %d MiB, cgroup %s)\n",
		filepath.Base(self), k.Release, testCPUs, mem, version)
	res, err := Run(context.Background(), Options{
		Kernel: k, InitBinary: initBin, ReadOnly: append([]string{top, filepath.Dir(self)}, ro...),
		WorkDir: filepath.Join(work, "runs"), Argv: append([]string{self}, WithTestTimeout(os.Args[1:], testTimeout)...), Dir: wd, Env: env,
		Timeout: guestTimeout, MemoryMiB: mem, CPUs: testCPUs, Console: os.Stderr, Output: os.Stdout,
		CgroupV1: g.CgroupV1, ScratchMiB: g.ScratchMiB, Node: g.Node,
		// go test reads the test binary's standard output and error as one
		// stream, as here.
		StderrToOutput: true,
	})
	fmt.Fprintf(os.Stderr, "v2guest: the guest ran %s; the tests' exit status %d\n", res.Elapsed.Round(time.Second), res.ExitStatus)
	if err != nil {
		return fail(err)
	}
	return res.ExitStatus
}

// The host's share of the test binary's -test.timeout: the guest's boot
// (a minute or two under TCG), its power-off, and the margin before go test
// kills this process (it runs the guest before testing.M.Run, so its own
// alarm never starts).
const (
	bootMargin     = 5 * time.Minute
	powerOffMargin = 2 * time.Minute
)

// GuestTimeouts splits the host test binary's -test.timeout (budget): the
// tests in the guest get budget less bootMargin, so that a hung test
// panics there with every goroutine's stack while the host still reads the
// guest's output; the guest's command is killed at budget less
// powerOffMargin, and Run gives qemu two more minutes to power off, which
// still ends before go test's own kill of this process. Budgets too small
// to split are kept whole.
func GuestTimeouts(budget time.Duration) (test, guest time.Duration) {
	if budget <= 2*bootMargin {
		return budget, budget
	}
	return budget - bootMargin, budget - powerOffMargin
}

// WithTestTimeout returns args with -test.timeout set to d (replaced where
// it is given; first, before any argument that ends the flags).
func WithTestTimeout(args []string, d time.Duration) []string {
	out := []string{"-test.timeout=" + d.String()}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name := strings.TrimLeft(a, "-")
		switch {
		case strings.HasPrefix(name, "test.timeout="):
			continue
		case name == "test.timeout" && (a == "-test.timeout" || a == "--test.timeout"):
			i++ // its value
			continue
		}
		out = append(out, a)
	}
	return out
}

// BuildInit builds the guest's init (static) into work/init.
func BuildInit(top, work string) (string, error) {
	out := filepath.Join(work, "init")
	b := exec.Command("go", "build", "-o", out, "./test/v2guest/initd")
	b.Dir = top
	b.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := b.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the guest init: %w\n%s", err, msg)
	}
	return out, nil
}
