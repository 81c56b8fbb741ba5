package kerneltest

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeTB records what Skip does to a test.
type fakeTB struct {
	testing.TB
	fatal, skip string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) { f.fatal = fmt.Sprintf(format, args...) }

func (f *fakeTB) Skip(args ...any) { f.skip = fmt.Sprint(args...) }

func TestSkipFailsUnderNoSkip(t *testing.T) {
	for _, v := range []string{"1", "true", "yes"} {
		t.Setenv(NoSkipEnv, v)
		f := &fakeTB{}
		Skipf(f, "no %s here", "BTF")
		assert.Empty(t, f.skip, "%s=%s: not skipped", NoSkipEnv, v)
		assert.Contains(t, f.fatal, "must run in CI")
		assert.Contains(t, f.fatal, "no BTF here")
	}
}

func TestSkipSkipsWithoutNoSkip(t *testing.T) {
	for _, v := range []string{"", "0", "false"} {
		t.Setenv(NoSkipEnv, v)
		f := &fakeTB{}
		Skip(f, "needs root")
		assert.Equal(t, "needs root", f.skip)
		assert.Empty(t, f.fatal)
	}
}

// skipChildEnv makes TestSkipChild call Skip for real.
const skipChildEnv = "KOORDLET_YARN_SKIP_CHILD"

// TestSkipChild is the test TestForcedSkipFailsTheRun runs in a child
// process; in the parent's own run it does nothing (and does not skip).
func TestSkipChild(t *testing.T) {
	if os.Getenv(skipChildEnv) == "" {
		return
	}
	Skip(t, "forced skip")
}

// TestForcedSkipFailsTheRun runs a real test that skips in a child test
// binary: with NoSkipEnv set the child run fails, naming the reason;
// without it the test skips and the run passes.
func TestForcedSkipFailsTheRun(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	run := func(noSkip string) (string, error) {
		cmd := exec.Command(self, "-test.run=^TestSkipChild$", "-test.v")
		cmd.Env = append(os.Environ(), skipChildEnv+"=1", NoSkipEnv+"="+noSkip)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("1")
	require.Error(t, err, "the run fails:\n%s", out)
	assert.Contains(t, out, "--- FAIL: TestSkipChild")
	assert.Contains(t, out, "must run in CI on this machine kind, but it would skip: forced skip")

	out, err = run("")
	require.NoError(t, err, out)
	assert.Contains(t, out, "--- SKIP: TestSkipChild")
}
