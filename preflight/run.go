package preflight

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"
)

// Run initialises koordlet's view of the system (as koordlet's start-up
// does), probes the node, writes the report to w and returns the exit code
// (0: nothing blocks; 1: something does; 2: the report could not be
// written). A cgroup or proc root that does not exist is reported before
// anything else is tried (koordlet itself would stop at it).
func Run(ctx context.Context, opts Options, w io.Writer) int {
	r := checkRoots(system.Conf.CgroupRootDir, system.Conf.ProcRootDir)
	if len(r.Findings) == 0 {
		system.InitSupportConfigs()
		r = Evaluate(Probe(ctx, opts))
	}
	write := r.Write
	if opts.JSON {
		write = func(w io.Writer) error { return r.WriteJSON(w, os.Getenv("NODE_NAME")) }
	}
	if err := write(w); err != nil {
		fmt.Fprintf(os.Stderr, "preflight: write the report: %v\n", err)
		return 2
	}
	return r.ExitCode()
}

// checkRoots reports koordlet's roots that do not exist.
func checkRoots(cgroupRoot, procRoot string) Report {
	var r Report
	if _, err := os.Stat(cgroupRoot); err != nil {
		r.Findings = append(r.Findings, Finding{Check: "cgroup", Severity: Block,
			Detail: fmt.Sprintf("--cgroup-root-dir %s: %v", cgroupRoot, err),
			Fix:    mountFix + "; outside the DaemonSet pass --cgroup-root-dir=/sys/fs/cgroup/ (and the other --*-root-dir flags)"})
	}
	if _, err := os.Stat(procRoot); err != nil {
		r.Findings = append(r.Findings, Finding{Check: "proc", Severity: Block,
			Detail: fmt.Sprintf("--proc-root-dir %s: %v", procRoot, err), Fix: "run koordlet with hostPID and --proc-root-dir=/proc/"})
	}
	return r
}
