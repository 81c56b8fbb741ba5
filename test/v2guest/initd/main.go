// Command initd is PID 1 of make test-v2's guest: it loads the modules the
// guest needs (virtio, 9p), mounts the host's shares read-only and the
// guest's own kernel filesystems (cgroup2 with every controller handed
// down, as systemd does on a node), brings lo up, runs the one command its
// configuration names, reaps every orphan meanwhile, writes the command's
// exit status to the output share and powers the guest off.
//
// It is built static (CGO_ENABLED=0) into the initramfs that
// test/v2guest makes; the configuration is /v2guest.json there.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/koordlet-yarn/koordlet-yarn/test/v2guest/guestconf"
)

func main() {
	rc := run()
	// Whatever the command left running goes, then the output share is
	// flushed and the guest powered off (qemu runs with -no-reboot).
	_ = unix.Kill(-1, unix.SIGKILL)
	reapAll()
	unix.Sync()
	logf("exit status %d; powering off", rc)
	_ = unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	select {}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "v2guest-init: "+format+"\n", args...)
}

func run() int {
	if err := earlyMounts(); err != nil {
		logf("%v", err)
		return 120
	}
	raw, err := os.ReadFile("/v2guest.json")
	if err != nil {
		logf("read configuration: %v", err)
		return 120
	}
	var cfg guestconf.Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		logf("parse configuration: %v", err)
		return 120
	}
	if len(cfg.Argv) == 0 {
		logf("the configuration names no command")
		writeRC(cfg, 120)
		return 120
	}
	if cfg.Node {
		if err := switchRoot(); err != nil {
			logf("%v", err)
			writeRC(cfg, 120)
			return 120
		}
	}
	if err := setup(cfg); err != nil {
		logf("%v", err)
		writeRC(cfg, 120)
		return 120
	}
	rc := command(cfg)
	writeRC(cfg, rc)
	return rc
}

func earlyMounts() error {
	for _, m := range []struct{ src, dst, fs, data string }{
		{"proc", "/proc", "proc", ""},
		{"sysfs", "/sys", "sysfs", ""},
		{"devtmpfs", "/dev", "devtmpfs", ""},
	} {
		if err := mount(m.src, m.dst, m.fs, 0, m.data); err != nil {
			return err
		}
	}
	return nil
}

func mount(src, dst, fstype string, flags uintptr, data string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("mkdir %s: %w", dst, err)
	}
	if err := unix.Mount(src, dst, fstype, flags, data); err != nil {
		return fmt.Errorf("mount %s (%s) on %s: %w", src, fstype, dst, err)
	}
	return nil
}

func setup(cfg guestconf.Config) error {
	for _, mod := range cfg.Modules {
		if err := loadModule(mod); err != nil {
			return err
		}
	}
	for _, d := range []string{"/tmp", "/run", "/root", "/var/tmp", "/var/run", "/var/lib", "/var/log"} {
		if d == "/var/run" && cfg.Node {
			// A node's /var/run is /run (the kubelet's pods mount
			// both; containerd's socket is in /run).
			if err := os.Symlink("/run", d); err != nil {
				return fmt.Errorf("link /var/run to /run: %w", err)
			}
			continue
		}
		if err := mount("tmpfs", d, "tmpfs", 0, "mode=1777"); err != nil {
			return err
		}
	}
	for _, s := range cfg.Shares {
		flags := uintptr(0)
		// cache=loose: the read-only host trees do not change during the
		// run and TCG makes every 9p round trip expensive; the output share
		// is written through.
		opts := "trans=virtio,version=9p2000.L,msize=524288,cache=loose"
		if s.Writable {
			opts = "trans=virtio,version=9p2000.L,msize=524288,cache=none"
		} else {
			flags |= unix.MS_RDONLY
		}
		if err := mount(s.Tag, s.Path, "9p", flags, opts); err != nil {
			return err
		}
	}
	if cfg.Scratch != "" {
		if err := mountScratch(cfg.Scratch); err != nil {
			return err
		}
	}
	if cfg.CgroupV1 {
		if err := mountV1(); err != nil {
			return err
		}
	} else {
		if err := mount("cgroup2", "/sys/fs/cgroup", "cgroup2", 0, ""); err != nil {
			return err
		}
		if err := enableControllers("/sys/fs/cgroup"); err != nil {
			return err
		}
	}
	for _, m := range []struct{ src, dst, fs, data string }{
		{"bpf", "/sys/fs/bpf", "bpf", ""},
		{"tracefs", "/sys/kernel/tracing", "tracefs", ""},
		{"debugfs", "/sys/kernel/debug", "debugfs", ""},
		{"devpts", "/dev/pts", "devpts", ""},
		{"tmpfs", "/dev/shm", "tmpfs", ""},
	} {
		if err := mount(m.src, m.dst, m.fs, 0, m.data); err != nil {
			return err
		}
	}
	if cfg.Node {
		if err := nodeMounts(); err != nil {
			return err
		}
	}
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("find lo: %w", err)
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	if cfg.Hostname != "" {
		if err := unix.Sethostname([]byte(cfg.Hostname)); err != nil {
			return fmt.Errorf("set hostname: %w", err)
		}
	}
	return nil
}

// nodeMounts makes the guest a node a kubelet can own: /etc and /usr
// overlays of a tmpfs over the host's read-only shares (the kubelet makes
// the pods' DirectoryOrCreate hostPaths there, as the chart's
// /usr/local/vgpu/containers; the host's files stay untouched), then every
// mount shared, as systemd makes them (the kubelet refuses Bidirectional
// mounts of a private one).
func nodeMounts() error {
	if err := mount("tmpfs", "/run/node-overlay", "tmpfs", 0, "mode=755"); err != nil {
		return err
	}
	for _, top := range []string{"/etc", "/usr"} {
		base := filepath.Join("/run/node-overlay", filepath.Base(top))
		for _, d := range []string{"upper", "work"} {
			if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
				return fmt.Errorf("mkdir the %s overlay's %s: %w", top, d, err)
			}
		}
		if err := mount("overlay", top, "overlay", 0, "lowerdir="+top+",upperdir="+base+"/upper,workdir="+base+"/work"); err != nil {
			return err
		}
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SHARED, ""); err != nil {
		return fmt.Errorf("make / a shared mount: %w", err)
	}
	logf("node: /etc and /usr writable (overlays of a tmpfs over the host's shares), every mount shared")
	return nil
}

// switchRoot moves the guest onto a tmpfs root, as an initramfs's
// switch_root does: the initramfs's files copied there, /proc, /sys and
// /dev moved, then the tmpfs moved over / and chrooted into. A container
// runtime's pivot_root(2) refuses a root on the initramfs itself (and runc
// without pivot_root masks the host's /proc through a shared root).
func switchRoot() error {
	const nr = "/newroot"
	if err := mount("tmpfs", nr, "tmpfs", 0, "mode=755"); err != nil {
		return err
	}
	skip := map[string]bool{"/proc": true, "/sys": true, "/dev": true, nr: true}
	err := filepath.WalkDir("/", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "/" {
			return nil
		}
		if skip[p] {
			return filepath.SkipDir
		}
		dst := filepath.Join(nr, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.Type()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, dst)
		case d.IsDir():
			return os.Mkdir(dst, info.Mode().Perm())
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(dst, b, info.Mode().Perm())
		}
	})
	if err != nil {
		return fmt.Errorf("copy the initramfs to the new root: %w", err)
	}
	for _, m := range []string{"/proc", "/sys", "/dev"} {
		if err := os.MkdirAll(nr+m, 0o755); err != nil {
			return err
		}
		if err := unix.Mount(m, nr+m, "", unix.MS_MOVE, ""); err != nil {
			return fmt.Errorf("move %s to the new root: %w", m, err)
		}
	}
	if err := unix.Chdir(nr); err != nil {
		return err
	}
	if err := unix.Mount(".", "/", "", unix.MS_MOVE, ""); err != nil {
		return fmt.Errorf("move the new root over /: %w", err)
	}
	if err := unix.Chroot("."); err != nil {
		return fmt.Errorf("chroot into the new root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	logf("node: root switched to a tmpfs")
	return nil
}

// mountScratch mounts the scratch disk (ext4, made on the host) at dir,
// waiting for its device to appear once its driver is loaded.
func mountScratch(dir string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := os.Stat(guestconf.ScratchDevice)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the scratch disk %s did not appear: %w", guestconf.ScratchDevice, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := mount(guestconf.ScratchDevice, dir, "ext4", 0, ""); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o1777); err != nil {
		return fmt.Errorf("chmod the scratch disk: %w", err)
	}
	logf("scratch disk %s (ext4) at %s", guestconf.ScratchDevice, dir)
	return nil
}

// v1Controllers are mounted each on its own, as on this project's hosts
// (cpu and cpuacct apart).
var v1Controllers = []string{"cpu", "cpuacct", "memory", "cpuset", "freezer", "pids", "blkio", "devices", "hugetlb", "perf_event", "net_cls", "net_prio"}

// mountV1 lays /sys/fs/cgroup out as a hybrid host: a tmpfs with one cgroup
// v1 hierarchy per controller and a cgroup2 without controllers at
// unified.
func mountV1() error {
	if err := mount("tmpfs", "/sys/fs/cgroup", "tmpfs", 0, "mode=755"); err != nil {
		return err
	}
	for _, c := range v1Controllers {
		if err := mount("cgroup", filepath.Join("/sys/fs/cgroup", c), "cgroup", 0, c); err != nil {
			return err
		}
	}
	if err := mount("cgroup2", "/sys/fs/cgroup/unified", "cgroup2", 0, ""); err != nil {
		return err
	}
	logf("cgroup v1 at /sys/fs/cgroup (%s apart), cgroup2 without controllers at /sys/fs/cgroup/unified", strings.Join(v1Controllers, ", "))
	return nil
}

// enableControllers hands every controller of the root down to its
// children, as systemd does on a node (the kubelet needs cpu, cpuset,
// memory, io, pids, hugetlb).
func enableControllers(root string) error {
	b, err := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("read the cgroup2 root's controllers: %w", err)
	}
	var plus []string
	for _, c := range strings.Fields(string(b)) {
		plus = append(plus, "+"+c)
	}
	if err := os.WriteFile(filepath.Join(root, "cgroup.subtree_control"), []byte(strings.Join(plus, " ")), 0o644); err != nil {
		return fmt.Errorf("enable %s in the cgroup2 root: %w", strings.Join(plus, " "), err)
	}
	logf("cgroup2 at %s, controllers enabled for children: %s", root, strings.TrimSpace(string(b)))
	return nil
}

func loadModule(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open module: %w", err)
	}
	defer f.Close()
	if err := unix.FinitModule(int(f.Fd()), "", 0); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("load module %s: %w", filepath.Base(path), err)
	}
	return nil
}

// command runs the configured command to its end, reaping every other
// process that ends meanwhile (PID 1 inherits the orphans), and returns its
// exit status; past the deadline it is killed (status 124).
func command(cfg guestconf.Config) int {
	out, err := os.OpenFile(filepath.Join(cfg.OutDir, guestconf.OutputFile), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		logf("create the output file: %v", err)
		return 120
	}
	defer out.Close()
	env := append([]string{"HOME=/root", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, cfg.Env...)
	attr := &os.ProcAttr{Dir: cfg.Dir, Env: env, Files: []*os.File{os.Stdin, out, os.Stderr}}
	if cfg.StderrToOutput {
		attr.Files[2] = out
	}
	p, err := os.StartProcess(cfg.Argv[0], cfg.Argv, attr)
	if err != nil {
		logf("start %s: %v", cfg.Argv[0], err)
		return 127
	}
	logf("started %s (pid %d)", strings.Join(cfg.Argv, " "), p.Pid)
	deadline := time.Now().Add(cfg.Timeout)
	killed := false
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if err != nil && !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.ECHILD) {
			logf("wait: %v", err)
		}
		if pid == p.Pid {
			switch {
			case killed:
				return 124
			case ws.Exited():
				return ws.ExitStatus()
			case ws.Signaled():
				return 128 + int(ws.Signal())
			}
			return 125
		}
		if pid > 0 {
			continue
		}
		if !killed && cfg.Timeout > 0 && time.Now().After(deadline) {
			logf("the command ran past %s: killing it", cfg.Timeout)
			_ = p.Signal(syscall.SIGQUIT) // a Go test binary prints its goroutines
			time.Sleep(5 * time.Second)
			_ = p.Kill()
			killed = true
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func reapAll() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

func writeRC(cfg guestconf.Config, rc int) {
	if cfg.OutDir == "" {
		return
	}
	if err := os.WriteFile(filepath.Join(cfg.OutDir, guestconf.RCFile), []byte(strconv.Itoa(rc)+"\n"), 0o644); err != nil {
		logf("write the exit status: %v", err)
	}
}
