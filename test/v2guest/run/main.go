// Command run boots make test-v2's guest (a real cgroup v2 kernel under
// qemu) and runs one command in it: run [flags] -- argv...
// The command's standard output is printed as it comes; the exit status is
// the command's.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
	"github.com/koordlet-yarn/koordlet-yarn/test/v2guest"
)

func main() {
	var (
		work    = flag.String("work", "build/v2guest", "the run's directory (kernel, init, initramfs, output)")
		ro      = flag.String("ro", "", "comma-separated host directories the guest sees read-only (besides /usr and /etc)")
		dir     = flag.String("dir", "/", "the command's working directory in the guest")
		env     = flag.String("env", "", "comma-separated NAME=value for the command")
		timeout = flag.Duration("timeout", 30*time.Minute, "the command's time limit in the guest")
		mem     = flag.Int("memory", 4096, "guest memory in MiB")
		cpus    = flag.Int("cpus", 2, "guest CPUs")
		v1      = flag.Bool("cgroup-v1", false, "boot the guest with cgroup v1 (a hybrid host, cpu and cpuacct apart) instead of v2: a baseline on the same kernel and emulator")
		scratch = flag.Int("scratch", 0, "a scratch disk of this many MiB (ext4, mounted at /scratch, its path in $KOORDLET_YARN_SCRATCH): files whose page cache the kernel can reclaim")
		box     = flag.Bool("box", false, "share what the node in a box needs (this repository, built on the host, and koordinator's CRDs) and tell the command where they are")
		suite   = flag.String("kernel-suite", "", "boot the kernel of this Debian suite (a codename, e.g. bullseye: 5.10; kept in <work>/kernel-<suite>) instead of the host's apt sources' (<work>/kernel)")
	)
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: run [flags] -- argv...")
		os.Exit(2)
	}
	ros, envs := split(*ro), split(*env)
	if *box {
		top, err := nodebox.RepoTop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "v2guest:", err)
			os.Exit(1)
		}
		crds, err := nodebox.KoordinatorCRDDir()
		if err != nil {
			fmt.Fprintln(os.Stderr, "v2guest:", err)
			os.Exit(1)
		}
		ros = append(ros, top, crds)
		envs = append(envs, v2guest.TopEnv+"="+top, v2guest.PrebuiltEnv+"=1", nodebox.CRDDirEnv+"="+crds)
	}
	rc, err := run(*work, *suite, v2guest.Options{ReadOnly: ros, Dir: *dir, Env: envs, Timeout: *timeout, MemoryMiB: *mem, CPUs: *cpus,
		CgroupV1: *v1, ScratchMiB: *scratch, Argv: flag.Args()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "v2guest:", err)
		os.Exit(1)
	}
	os.Exit(rc)
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// run boots the guest for o on the kernel of Debian's suite ("": the host
// apt sources'), its kernel, init and run directory under work.
func run(work, suite string, o v2guest.Options) (int, error) {
	work, err := filepath.Abs(work)
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return 0, err
	}
	kernelDir := filepath.Join(work, "kernel")
	if suite != "" {
		kernelDir += "-" + suite
	}
	k, err := v2guest.FetchSuiteKernel(kernelDir, suite)
	if err != nil {
		return 0, err
	}
	top, err := os.Getwd()
	if err != nil {
		return 0, err
	}
	initBin, err := v2guest.BuildInit(top, work)
	if err != nil {
		return 0, err
	}
	version := "v2"
	if o.CgroupV1 {
		version = "v1"
	}
	fmt.Fprintf(os.Stderr, "v2guest: booting Debian's kernel %s under qemu (TCG, %d CPUs, %d MiB, cgroup %s)\n", k.Release, o.CPUs, o.MemoryMiB, version)
	o.Kernel, o.InitBinary, o.WorkDir = k, initBin, filepath.Join(work, "runs")
	o.Console, o.Output = os.Stderr, os.Stdout
	res, err := v2guest.Run(context.Background(), o)
	fmt.Fprintf(os.Stderr, "v2guest: guest ran %s, exit status %d\n", res.Elapsed.Round(100*time.Millisecond), res.ExitStatus)
	return res.ExitStatus, err
}
