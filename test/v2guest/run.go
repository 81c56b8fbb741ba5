package v2guest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/test/v2guest/guestconf"
)

// Options describe one guest run.
type Options struct {
	// Kernel boots the guest.
	Kernel Kernel
	// InitBinary is the static guest init (test/v2guest/initd).
	InitBinary string
	// ReadOnly are host directories the guest sees at the same paths,
	// read-only (besides /usr and /etc, always shared).
	ReadOnly []string
	// WorkDir is where the run makes its own directory (run-*, removed at
	// the end) for the initramfs and the output share: runs side by side
	// do not meet.
	WorkDir string
	// Argv, Dir, Env: the command the guest runs.
	Argv []string
	Dir  string
	Env  []string
	// Timeout bounds the command in the guest (default 30 minutes); the
	// guest as a whole gets two minutes more to boot and power off.
	Timeout time.Duration
	// MemoryMiB and CPUs size the guest (defaults 4096, 2).
	MemoryMiB int
	CPUs      int
	// CgroupV1 boots the guest with cgroup v1 (a hybrid host) instead of
	// v2: a baseline on the same kernel and emulator.
	CgroupV1 bool
	// Console receives the guest's console (kernel and init messages and
	// the command's standard error unless StderrToOutput).
	Console io.Writer
	// StderrToOutput sends the command's standard error to Output with its
	// standard output, through the output share instead of the emulated
	// serial console (about 11 KB/s: a hung test's goroutine dump takes
	// minutes there).
	StderrToOutput bool
	// ScratchMiB, when positive, gives the guest a scratch disk of that
	// size: a sparse ext4 image in the run's directory (removed with it),
	// a virtio block device mounted at guestconf's Scratch path, named to
	// the command in ScratchEnv. The guest's own files are otherwise in
	// memory (tmpfs), where page cache cannot be reclaimed.
	ScratchMiB int
	// Node makes the guest a node a real kubelet can own (guestconf's
	// Node: a shared root, writable /etc and /usr; the overlay module).
	Node bool
	// Output receives the command's standard output as it is written
	// (besides the output share's file, which goes with the run's
	// directory).
	Output io.Writer
}

// Result is what a guest run gives back.
type Result struct {
	// ExitStatus is the command's (124: past its timeout, 120: the guest
	// could not be set up).
	ExitStatus int
	// Elapsed is boot to power-off.
	Elapsed time.Duration
}

// QEMU is the emulator binary.
const QEMU = "qemu-system-x86_64"

// qboot is the minimal firmware Debian's qemu ships.
const qboot = "/usr/share/qemu/qboot.rom"

// Run boots the guest, runs the command in it and returns when the guest
// has powered off. qemu dies with the calling thread (PR_SET_PDEATHSIG),
// and an earlier run's guest whose runner is gone is reaped first (see
// ReapOrphans).
func Run(ctx context.Context, o Options) (Result, error) {
	if o.MemoryMiB == 0 {
		o.MemoryMiB = 4096
	}
	if o.CPUs == 0 {
		o.CPUs = 2
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Minute
	}
	if len(o.Argv) == 0 {
		return Result{}, errors.New("no command to run in the guest")
	}
	if _, err := exec.LookPath(QEMU); err != nil {
		return Result{}, fmt.Errorf("%s not found (apt-get install qemu-system-x86): %w", QEMU, err)
	}
	if err := ReapOrphans(os.Stderr); err != nil {
		return Result{}, err
	}
	if err := os.MkdirAll(o.WorkDir, 0o755); err != nil {
		return Result{}, err
	}
	runDir, err := os.MkdirTemp(o.WorkDir, "run-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(runDir)
	outDir := filepath.Join(runDir, "out")
	if err := os.Mkdir(outDir, 0o755); err != nil {
		return Result{}, err
	}
	shares := []guestconf.Share{{Tag: "usr", Path: "/usr"}, {Tag: "etc", Path: "/etc"}}
	for i, d := range o.ReadOnly {
		shares = append(shares, guestconf.Share{Tag: "ro" + strconv.Itoa(i), Path: d})
	}
	shares = append(shares, guestconf.Share{Tag: "out", Path: outDir, Writable: true})
	modNames := guestModules
	var scratchImg string
	if o.ScratchMiB > 0 {
		modNames = append(append([]string(nil), guestModules...), scratchModules...)
		scratchImg = filepath.Join(runDir, "scratch.img")
		if err := makeScratch(scratchImg, o.ScratchMiB); err != nil {
			return Result{}, err
		}
	}
	if o.Node {
		modNames = append(append([]string(nil), modNames...), nodeModules...)
	}
	mods, err := o.Kernel.moduleFiles(modNames)
	if err != nil {
		return Result{}, err
	}
	initrd := filepath.Join(runDir, "initramfs.cpio")
	// The host's name: the guest shares its /etc (hosts), where that name
	// resolves, as Hadoop needs its own host name to (a name the guest
	// cannot resolve stops the NodeManager's web server).
	hostname, err := os.Hostname()
	if err != nil || hostname == "" {
		hostname = "localhost"
	}
	cfg := guestconf.Config{Shares: shares, OutDir: outDir, Hostname: hostname, Argv: o.Argv, Dir: o.Dir, Env: o.Env, Timeout: o.Timeout, CgroupV1: o.CgroupV1, StderrToOutput: o.StderrToOutput, Node: o.Node}
	if scratchImg != "" {
		cfg.Scratch = scratchMount
		cfg.Env = append(append([]string(nil), cfg.Env...), guestconf.ScratchEnv+"="+scratchMount)
	}
	if err := writeInitramfs(initrd, o.InitBinary, mods, cfg); err != nil {
		return Result{}, err
	}
	rec, err := newRecord()
	if err != nil {
		return Result{}, err
	}
	defer rec.remove()

	// KOORDLET_YARN_V2GUEST_MONITOR: a diagnosis of a hung guest, qemu's
	// human monitor on that unix socket ("info registers -a" gives each
	// vCPU's RIP), the kernel booted with nokaslr so that the RIPs read
	// there map onto its /proc/kallsyms.
	monitor, nokaslr := "none", ""
	if sock := os.Getenv("KOORDLET_YARN_V2GUEST_MONITOR"); sock != "" {
		monitor, nokaslr = "unix:"+sock+",server,nowait", " nokaslr"
	}
	args := []string{
		"-name", rec.name,
		"-machine", "q35", "-accel", "tcg,thread=" + tcgThread(), "-cpu", "max",
		"-smp", strconv.Itoa(o.CPUs), "-m", strconv.Itoa(o.MemoryMiB),
		"-kernel", o.Kernel.Image, "-initrd", initrd,
		// quiet: the console carries the init's and the command's lines;
		// loglevel=5 after it keeps the kernel's warnings, a soft lockup's
		// registers and call trace among them; softlockup_panic=1 turns a
		// CPU stuck in the kernel into a panic, and panic=-1 with
		// -no-reboot ends qemu on it: a lockup fails the run in seconds,
		// with its trace, instead of at the guest's timeout (CI,
		// 2026-11-29: koordlet stuck on a CPU for 45 minutes).
		"-append", "console=ttyS0 quiet loglevel=5 softlockup_panic=1 panic=-1 rdinit=/init" + nokaslr,
		"-no-reboot", "-nographic", "-nodefaults", "-serial", "stdio", "-monitor", monitor,
		"-nic", "none",
		"-pidfile", rec.pidfile(),
	}
	if _, err := os.Stat(qboot); err == nil {
		// qboot boots a -kernel straight away, without SeaBIOS's screen
		// control codes on the console.
		args = append(args, "-bios", qboot)
	}
	for _, s := range shares {
		ro := ",readonly=on"
		if s.Writable {
			ro = ""
		}
		args = append(args, "-virtfs", fmt.Sprintf("local,path=%s,mount_tag=%s,security_model=none%s", s.Path, s.Tag, ro))
	}
	if scratchImg != "" {
		// cache=unsafe: the image is thrown away with the run.
		args = append(args, "-drive", "file="+scratchImg+",format=raw,if=virtio,cache=unsafe")
	}
	cmd := exec.Command(QEMU, args...)
	cmd.Stdout, cmd.Stderr = o.Console, o.Console
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}

	start := time.Now()
	done := make(chan error, 1)
	started := make(chan error, 1)
	go func() {
		// PR_SET_PDEATHSIG fires when the thread that forked qemu ends:
		// keep this goroutine on its thread until qemu is gone.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		done <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return Result{}, fmt.Errorf("start %s: %w", QEMU, err)
	}
	if err := rec.writeOwner(cmd.Process.Pid); err != nil {
		_ = cmd.Process.Kill()
		<-done
		return Result{}, err
	}
	tailDone := make(chan struct{})
	tailStop := make(chan struct{})
	go func() {
		defer close(tailDone)
		follow(filepath.Join(outDir, guestconf.OutputFile), o.Output, tailStop)
	}()
	limit := time.NewTimer(o.Timeout + 2*time.Minute)
	defer limit.Stop()
	var werr error
	select {
	case werr = <-done:
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		werr = fmt.Errorf("guest stopped: %w", ctx.Err())
		<-done
	case <-limit.C:
		_ = cmd.Process.Kill()
		werr = fmt.Errorf("guest did not power off within %s", o.Timeout+2*time.Minute)
		<-done
	}
	close(tailStop)
	<-tailDone
	res := Result{Elapsed: time.Since(start), ExitStatus: -1}
	b, err := os.ReadFile(filepath.Join(outDir, guestconf.RCFile))
	if err != nil {
		if werr == nil {
			werr = errors.New("the guest powered off without an exit status (see its console)")
		}
		return res, werr
	}
	res.ExitStatus, err = strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return res, fmt.Errorf("the guest's exit status %q: %w", b, err)
	}
	if werr != nil {
		var ee *exec.ExitError
		if !errors.As(werr, &ee) {
			return res, werr
		}
	}
	return res, nil
}

// follow copies path to w as it grows until stop, then what is left.
func follow(path string, w io.Writer, stop <-chan struct{}) {
	if w == nil {
		return
	}
	var f *os.File
	buf := make([]byte, 64*1024)
	for {
		if f == nil {
			f, _ = os.Open(path)
		}
		if f != nil {
			for {
				n, _ := f.Read(buf)
				if n == 0 {
					break
				}
				_, _ = w.Write(buf[:n])
			}
		}
		select {
		case <-stop:
			if f != nil {
				_, _ = io.CopyBuffer(w, f, buf)
				f.Close()
			}
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// tcgThread is qemu's TCG threading: multi (a host thread per vCPU) or
// single (one host thread runs every vCPU in turn), chosen by
// KOORDLET_YARN_V2GUEST_TCG_THREAD, else by qemu's version (see
// safeTCGThread). Multi-threaded TCG in qemu 7.2 (Debian bookworm's) was
// seen to livelock the guest while the kernel patched its text (2026-11-29:
// a vCPU looping on the int3 of a tracepoint site in __schedule, holding
// its runqueue lock, while the other freed koordlet's BPF program and spun
// on that lock; 3 in 11 guest runs of one e2e layout); qemu 10.0
// (bookworm-backports, which make deps-v2 installs) ran the same loop
// without it. Single serializes the vCPUs, at the cost of one host CPU for
// the guest.
func tcgThread() string {
	switch v := os.Getenv("KOORDLET_YARN_V2GUEST_TCG_THREAD"); v {
	case "single", "multi":
		return v
	}
	out, err := exec.Command(QEMU, "--version").Output()
	thread, why := safeTCGThread(string(out), err)
	if why != "" {
		fmt.Fprintf(os.Stderr, "v2guest: %s\n", why)
	}
	return thread
}

// minMultiTCG is the first qemu major version whose multi-threaded TCG ran
// the guest without the livelock tcgThread describes.
const minMultiTCG = 10

// safeTCGThread picks the TCG threading for the output of qemu --version
// ("QEMU emulator version 10.0.2 (Debian …)"): multi from minMultiTCG on,
// else single, with why (a line for the log) when it is not multi.
func safeTCGThread(version string, err error) (thread, why string) {
	if err != nil {
		return "single", fmt.Sprintf("qemu --version: %v; running the guest's vCPUs on one TCG thread", err)
	}
	first, _, _ := strings.Cut(version, "\n")
	var major, minor int
	_, num, found := strings.Cut(first, "version ")
	if _, err := fmt.Sscanf(num, "%d.%d", &major, &minor); !found || err != nil {
		return "single", fmt.Sprintf("no version in qemu's %q; running the guest's vCPUs on one TCG thread", first)
	}
	if major < minMultiTCG {
		return "single", fmt.Sprintf("qemu %d.%d: multi-threaded TCG before qemu %d is not known to be free of the livelock seen with 7.2 while a guest patched kernel text; running the guest's vCPUs on one TCG thread (slower; make deps-v2 installs qemu %d on Debian bookworm; KOORDLET_YARN_V2GUEST_TCG_THREAD=multi overrides)", major, minor, minMultiTCG, minMultiTCG)
	}
	return "multi", ""
}
