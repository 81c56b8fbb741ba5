// Package v2guest runs commands in a qemu guest on a real cgroup v2 kernel
// (Debian's, under TCG): make test-v2 runs the node-level e2e tests there.
// The guest shares the host's /usr and /etc and the repository read-only
// over virtio-9p, has its own kernel filesystems (cgroup2 with every
// controller) and writes only to one output directory of the run's own.
package v2guest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Kernel is a bootable kernel image and its modules.
type Kernel struct {
	// Release is the kernel release (uname -r), e.g. 6.1.0-56-amd64.
	Release string
	// Image is the vmlinuz file.
	Image string
	// ModulesDir is lib/modules/<release>.
	ModulesDir string
}

// guestModules are the modules the guest loads, with their dependencies:
// virtio over PCI and the 9p file system over it.
var guestModules = []string{"virtio_pci", "9pnet_virtio", "9p"}

// nodeModules are what a Node guest adds: overlayfs, for its writable /etc and /usr
// and containerd's overlayfs snapshotter.
var nodeModules = []string{"overlay"}

// KernelPackage is the Debian metapackage whose dependency is the kernel
// image the guest boots.
const KernelPackage = "linux-image-amd64"

// FetchKernel makes sure dir holds Debian's current kernel package
// extracted (apt-get download and dpkg-deb -x: nothing is installed on the
// host, no maintainer script runs) and returns it. A kernel already there is
// reused.
func FetchKernel(dir string) (Kernel, error) { return FetchSuiteKernel(dir, "") }

// FetchSuiteKernel is FetchKernel for the kernel of Debian's suite (a
// codename: bullseye's is 5.10), or the host's apt sources' with "". A
// suite's packages are looked up through an apt configuration of their own
// in apt-<suite> beside dir (see suiteSources): the host's sources, lists
// and pins are not touched.
func FetchSuiteKernel(dir, suite string) (Kernel, error) {
	if k, err := FindKernel(dir); err == nil {
		return k, nil
	}
	var aptArgs []string
	if suite != "" {
		var err error
		if aptArgs, err = suiteApt(filepath.Join(filepath.Dir(dir), "apt-"+suite), suite); err != nil {
			return Kernel{}, err
		}
	}
	out, err := exec.Command("apt-cache", append(aptArgs, "depends", KernelPackage)...).Output()
	if err != nil {
		return Kernel{}, fmt.Errorf("apt-cache depends %s (run apt-get update first): %w", KernelPackage, err)
	}
	var pkg string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "Depends:" && strings.HasPrefix(f[1], "linux-image-") {
			pkg = f[1]
			break
		}
	}
	if pkg == "" {
		return Kernel{}, fmt.Errorf("apt-cache depends %s names no linux-image package:\n%s", KernelPackage, out)
	}
	dl, err := os.MkdirTemp(filepath.Dir(dir), "kernel-download-")
	if err != nil {
		return Kernel{}, err
	}
	defer os.RemoveAll(dl)
	get := exec.Command("apt-get", append(aptArgs, "download", pkg)...)
	get.Dir = dl
	if b, err := get.CombinedOutput(); err != nil {
		return Kernel{}, fmt.Errorf("apt-get download %s: %w\n%s", pkg, err, b)
	}
	debs, _ := filepath.Glob(filepath.Join(dl, "*.deb"))
	if len(debs) != 1 {
		return Kernel{}, fmt.Errorf("apt-get download %s left %d packages", pkg, len(debs))
	}
	tmp := dir + ".partial"
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return Kernel{}, err
	}
	if b, err := exec.Command("dpkg-deb", "-x", debs[0], tmp).CombinedOutput(); err != nil {
		return Kernel{}, fmt.Errorf("dpkg-deb -x %s: %w\n%s", debs[0], err, b)
	}
	// The package ships no modules.dep (its postinst runs depmod): make
	// it in the extracted tree.
	mods, _ := filepath.Glob(filepath.Join(tmp, "lib/modules/*"))
	depmod, err := lookDepmod()
	if err != nil && len(mods) > 0 {
		return Kernel{}, err
	}
	for _, m := range mods {
		if b, err := exec.Command(depmod, "-b", tmp, filepath.Base(m)).CombinedOutput(); err != nil {
			return Kernel{}, fmt.Errorf("depmod -b %s %s: %w\n%s", tmp, filepath.Base(m), err, b)
		}
	}
	_ = os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return Kernel{}, err
	}
	return FindKernel(dir)
}

// debianKeyring holds the Debian archive's keys, those of older releases
// too (package debian-archive-keyring).
const debianKeyring = "/usr/share/keyrings/debian-archive-keyring.gpg"

// suiteApt makes dir an apt configuration of its own for Debian's suite
// (sources, lists, cache; no pins, no dpkg status), brings its lists up to
// date, and returns the options that make apt-get and apt-cache use it.
func suiteApt(dir, suite string) ([]string, error) {
	targets, err := exec.Command("apt-get", "indextargets", "--format", "$(REPO_URI) $(ORIGIN) $(RELEASE)", "Identifier: Packages").Output()
	if err != nil {
		return nil, fmt.Errorf("apt-get indextargets (the host's Debian mirrors): %w", err)
	}
	sources, err := suiteSources(string(targets), suite)
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"lists/partial", "cache/archives/partial", "sources.list.d", "preferences.d"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	list := filepath.Join(dir, "sources.list")
	if err := os.WriteFile(list, []byte(sources), 0o644); err != nil {
		return nil, err
	}
	var args []string
	for _, o := range []string{
		"Dir::Etc::SourceList=" + list,
		"Dir::Etc::SourceParts=" + filepath.Join(dir, "sources.list.d"),
		"Dir::Etc::Preferences=" + filepath.Join(dir, "preferences"),
		"Dir::Etc::PreferencesParts=" + filepath.Join(dir, "preferences.d"),
		"Dir::State::Lists=" + filepath.Join(dir, "lists"),
		"Dir::Cache=" + filepath.Join(dir, "cache"),
		"Dir::State::status=/dev/null",
		// The download goes to a directory _apt cannot write.
		"APT::Sandbox::User=root",
	} {
		args = append(args, "-o", o)
	}
	if b, err := exec.Command("apt-get", append(args, "update")...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("apt-get update for Debian %s (%s): %w\n%s", suite, list, err, b)
	}
	return args, nil
}

// suiteSources is a sources.list for Debian's suite on the host's Debian
// mirrors: targets is apt-get indextargets' "REPO_URI ORIGIN RELEASE" for
// the host's Packages indexes, and each Debian release there (bookworm,
// bookworm-security, bookworm-updates) gives one line for the same
// release of suite (bullseye, bullseye-security, bullseye-updates), main.
func suiteSources(targets, suite string) (string, error) {
	var b strings.Builder
	seen := map[string]bool{}
	for _, line := range strings.Split(targets, "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[1] != "Debian" {
			continue
		}
		release := suite
		if _, part, ok := strings.Cut(f[2], "-"); ok {
			release += "-" + part
		}
		entry := fmt.Sprintf("deb [signed-by=%s] %s %s main\n", debianKeyring, f[0], release)
		if !seen[entry] {
			seen[entry] = true
			b.WriteString(entry)
		}
	}
	if b.Len() == 0 {
		return "", fmt.Errorf("the host's apt sources name no Debian mirror (apt-get indextargets):\n%s", targets)
	}
	return b.String(), nil
}

// lookDepmod finds depmod (package kmod), also in the sbin directories a
// non-root PATH lacks.
func lookDepmod() (string, error) {
	p, err := lookSbin("depmod")
	if err != nil {
		return "", fmt.Errorf("depmod not found: the guest's kernel modules need their index (apt-get install kmod; make deps-v2 does): %w", err)
	}
	return p, nil
}

// FindKernel finds the one kernel of an extracted kernel package (or a
// root: boot/vmlinuz-* and lib/modules/*) under dir.
func FindKernel(dir string) (Kernel, error) {
	images, _ := filepath.Glob(filepath.Join(dir, "boot", "vmlinuz-*"))
	sort.Strings(images)
	for i := len(images) - 1; i >= 0; i-- {
		rel := strings.TrimPrefix(filepath.Base(images[i]), "vmlinuz-")
		for _, mods := range []string{filepath.Join(dir, "lib/modules", rel), filepath.Join(dir, "usr/lib/modules", rel)} {
			if _, err := os.Stat(filepath.Join(mods, "modules.dep")); err == nil {
				return Kernel{Release: rel, Image: images[i], ModulesDir: mods}, nil
			}
		}
	}
	return Kernel{}, fmt.Errorf("no kernel (boot/vmlinuz-* with lib/modules/<release>/modules.dep) under %s", dir)
}

// moduleFiles resolves names (as modprobe spells them, - or _) to module
// files under k.ModulesDir, dependencies first, each once. A module built
// into the kernel needs no file and is left out.
func (k Kernel) moduleFiles(names []string) ([]string, error) {
	deps, err := readModulesDep(filepath.Join(k.ModulesDir, "modules.dep"))
	if err != nil {
		return nil, err
	}
	byName := map[string]string{}
	for path := range deps {
		byName[moduleName(path)] = path
	}
	builtin := map[string]bool{}
	if f, err := os.Open(filepath.Join(k.ModulesDir, "modules.builtin")); err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			builtin[moduleName(s.Text())] = true
		}
		f.Close()
	}
	var order []string
	seen := map[string]bool{}
	var visit func(path string)
	visit = func(path string) {
		if seen[path] {
			return
		}
		seen[path] = true
		for _, d := range deps[path] {
			visit(d)
		}
		order = append(order, filepath.Join(k.ModulesDir, path))
	}
	for _, n := range names {
		n = strings.ReplaceAll(n, "-", "_")
		path, ok := byName[n]
		switch {
		case ok:
			visit(path)
		case builtin[n]:
		default:
			return nil, fmt.Errorf("kernel %s has no module %s (modules.dep, modules.builtin)", k.Release, n)
		}
	}
	return order, nil
}

func moduleName(path string) string {
	base := filepath.Base(path)
	if i := strings.Index(base, ".ko"); i >= 0 {
		base = base[:i]
	}
	return strings.ReplaceAll(base, "-", "_")
}

func readModulesDep(path string) (map[string][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read modules.dep: %w", err)
	}
	defer f.Close()
	deps := map[string][]string{}
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64*1024), 1024*1024)
	for s.Scan() {
		mod, rest, ok := strings.Cut(s.Text(), ":")
		if !ok {
			continue
		}
		deps[mod] = strings.Fields(rest)
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(deps) == 0 {
		return nil, errors.New("modules.dep lists no module: " + path)
	}
	return deps, nil
}
