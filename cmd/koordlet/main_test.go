package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
)

// built is the koordlet binary the tests of this package share (one build).
var built struct {
	once sync.Once
	dir  string
	err  error
	out  []byte
}

// buildKoordlet builds the koordlet once per test binary and returns its path.
func buildKoordlet(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "koordlet-bin-"); built.err != nil {
			return
		}
		built.out, built.err = exec.Command("go", "build", "-ldflags", "-X "+versionVar+"="+testVersion,
			"-o", filepath.Join(built.dir, "koordlet"), ".").CombinedOutput()
	})
	require.NoError(t, built.err, string(built.out))
	return filepath.Join(built.dir, "koordlet")
}

// The version the test binary is stamped with, as make build stamps it.
const (
	versionVar  = "github.com/koordlet-yarn/koordlet-yarn/framework/version.version"
	testVersion = "v0.1.0-test"
)

// TestBinaryVersion: --version says the stamped version, the Koordinator
// the binary links and the Go toolchain, and exits 0.
func TestBinaryVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the koordlet binary")
	}
	out, err := exec.Command(buildKoordlet(t), "--version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Regexp(t, `^koordlet-yarn v0\.1\.0-test \(Koordinator v1\.8\.0, go1\.\d+`, string(out))
}

// TestBinaryPolicyCheck: --yarn-qos-policy-check validates a policy file
// offline: the example in deploy/ is valid (exit 0); a rule naming an
// unknown tier is refused with where (exit 1).
func TestBinaryPolicyCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the koordlet binary")
	}
	bin := buildKoordlet(t)
	out, err := exec.Command(bin, "--yarn-qos-policy-check", "../../deploy/koordlet/components/qos-policy/policy.yaml").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "valid, 4 rules, 2 tiers")

	bad := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("rules:\n- name: r1\n  match: {queue: root.a}\n  tier: nope\n"), 0o644))
	out, err = exec.Command(bin, "--yarn-qos-policy-check", bad).CombinedOutput()
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr, "%s", out)
	assert.Equal(t, 1, exitErr.ExitCode())
	assert.Contains(t, string(out), "INVALID")
	assert.Contains(t, string(out), "nope")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// TestBinaryFlags builds the koordlet and checks, the way a user meets it,
// that our flags and gates sit beside upstream's and that bad values are
// refused with a clear message.
func TestBinaryFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the koordlet binary")
	}
	bin := buildKoordlet(t)
	out, err := exec.Command(bin, "--help").CombinedOutput()
	require.NoError(t, err, "--help exits 0")
	help := string(out)
	for _, want := range []string{"-yarn-nm-endpoint", "-yarn-nm-pod-selector", "-yarn-nm-port", "-yarn-nm-timeout",
		"-yarn-nm-max-response-bytes", "-yarn-cgroup-hierarchy", "-yarn-resync-interval",
		"-cgroup-root-dir", "YARNContainerInformer=true|false (BETA - default=true)", "BECPUSuppress"} {
		assert.Contains(t, help, want)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--yarn-cgroup-hierarchy=../etc"}, "invalid flag: --yarn-cgroup-hierarchy"},
		{[]string{"--yarn-nm-endpoint=nm:8042"}, "invalid flag: --yarn-nm-endpoint"},
		{[]string{"--feature-gates=YARNNoSuchGate=true"}, "unrecognized feature gate"},
	} {
		out, err := exec.Command(bin, tc.args...).CombinedOutput()
		var exitErr *exec.ExitError
		require.ErrorAs(t, err, &exitErr, strings.Join(tc.args, " "))
		assert.Equal(t, 2, exitErr.ExitCode())
		assert.Contains(t, string(out), tc.want)
	}
}

// TestBinaryPreflight runs --yarn-preflight the way an operator does: with
// the DaemonSet's default roots, which do not exist outside it, it prints a
// blocking finding with its fix and exits 1; it never starts the daemon.
func TestBinaryPreflight(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the koordlet binary")
	}
	bin := buildKoordlet(t)
	out, err := exec.Command(bin, "--yarn-preflight", "--cgroup-root-dir=/nonexistent-cgroup-root/").Output()
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr)
	assert.Equal(t, 1, exitErr.ExitCode())
	report := string(out)
	assert.Contains(t, report, "koordlet-yarn preflight")
	assert.Contains(t, report, "BLOCK  cgroup")
	assert.Contains(t, report, "--cgroup-root-dir /nonexistent-cgroup-root/")
	assert.Contains(t, report, "fix: mount the host's /sys/fs/cgroup")
	assert.Contains(t, report, "1 blocking problem(s)")
}

// TestBinaryAllAlphaActsOnNothing: a release that sets AllAlpha=true (to
// try Koordinator's own alpha features) on top of the observe-only gates
// turns on none of koordlet-yarn's acting gates: the preflight, which
// reports every YARN gate on, names none of them, and koordlet says once
// which it held off. A named acting gate is still on.
func TestBinaryAllAlphaActsOnNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the koordlet binary")
	}
	bin := buildKoordlet(t)
	gatesOn := func(gates string) ([]string, string) {
		t.Helper()
		cmd := exec.Command(bin, "--yarn-preflight", "--yarn-preflight-output=json", "--feature-gates="+gates,
			"--cgroup-root-dir=/sys/fs/cgroup/", "--yarn-nm-endpoint=http://127.0.0.1:1")
		cmd.Env = append(os.Environ(), "NODE_NAME=")
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exitErr *exec.ExitError
		if err != nil {
			require.ErrorAs(t, err, &exitErr, "stderr: %s", stderr.String())
		}
		var report struct {
			Gates []struct {
				Gate string `json:"gate"`
			} `json:"gates"`
		}
		require.NoError(t, json.Unmarshal([]byte(stdout.String()), &report), "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
		var on []string
		for _, g := range report.Gates {
			on = append(on, g.Gate)
		}
		return on, stderr.String()
	}

	on, logs := gatesOn("AllAlpha=true,BECPUEvict=true,BEMemoryEvict=true,YARNContainerInformer=true,YARNMetricsCollector=true")
	for g, what := range features.Acts {
		assert.NotContains(t, on, string(g), "AllAlpha=true turned on %s (%s)", g, what)
	}
	assert.Contains(t, on, string(features.YARNContainerInformer), "the observing gates are on")
	assert.Contains(t, logs, "held off: [")
	assert.Contains(t, logs, string(features.YARNBEMemoryEvict))

	on, _ = gatesOn("AllAlpha=true,YARNBEMemoryEvict=true,BEMemoryEvict=true")
	assert.Contains(t, on, string(features.YARNBEMemoryEvict), "a named acting gate is on")
	assert.NotContains(t, on, string(features.YARNBECPUEvict))
}
