package nodebox

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
)

// Preflight runs bin/koordlet --yarn-preflight on the box as StartKoordlet
// runs koordlet (its API server, cgroup and sysfs roots, NodeManager port,
// NODE_NAME and the box's koordlet args), with extra args last, and returns
// the report and the exit code.
func (b *Box) Preflight(ctx context.Context, extra ...string) (report string, exit int, err error) {
	nmPort := b.NMAddr[strings.LastIndex(b.NMAddr, ":")+1:]
	args := []string{
		"--yarn-preflight",
		"--kubeconfig=" + b.cp.kubeconfig,
		"--cgroup-root-dir=" + b.cgroupRoot + "/",
		"--sys-root-dir=/sys/",
		"--sys-fs-root-dir=" + b.sysFSRoot + "/",
		"--proc-root-dir=/proc/",
		"--yarn-nm-port=" + nmPort,
	}
	args = append(append(args, b.opts.KoordletArgs...), extra...)
	cmd := exec.CommandContext(ctx, filepath.Join(b.opts.Top, "bin/koordlet"), args...)
	cmd.Env = []string{"NODE_NAME=" + NodeName, "PATH=/usr/bin:/bin"}
	out, err := cmd.Output()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return string(out), exitErr.ExitCode(), nil
	}
	if err != nil {
		return string(out), -1, err
	}
	return string(out), 0, nil
}
