package kerneltest

import (
	"fmt"
	"os"
	"testing"
)

// NoSkipEnv names the environment variable that turns environment-dependent
// skips into failures. CI on this machine kind (root, cgroup v1, a freezer,
// BTF and CAP_BPF) sets it: there every real-kernel and e2e test can run, and
// a skip would hide the kill, freeze, eBPF or evict path behind an "ok".
const NoSkipEnv = "KOORDLET_YARN_NO_SKIP"

// NoSkip reports whether NoSkipEnv is set (to anything but "", "0" or
// "false").
func NoSkip() bool {
	switch os.Getenv(NoSkipEnv) {
	case "", "0", "false":
		return false
	}
	return true
}

// Skip skips t because this environment cannot run it (no root, no cgroup
// v1, no freezer, no BTF, a missing kernel file...), saying why. With
// NoSkipEnv set it fails t instead, with the same reason. Every
// environment-dependent skip goes through it; a skip chosen by the run
// itself (-short) stays a plain t.Skip, and under -short this is one too:
// a -short run leaves the slow, environment-bound tests out by choice, and
// CI never passes -short.
func Skip(t testing.TB, reason string) {
	t.Helper()
	if NoSkip() && !testing.Short() {
		t.Fatalf("%s is set: this test must run in CI on this machine kind, but it would skip: %s", NoSkipEnv, reason)
		return
	}
	t.Skip(reason)
}

// Skipf is Skip with a format.
func Skipf(t testing.TB, format string, args ...any) {
	t.Helper()
	Skip(t, fmt.Sprintf(format, args...))
}
