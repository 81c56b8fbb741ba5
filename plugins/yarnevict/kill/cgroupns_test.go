package kill

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/test/cgtree"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// unifiedRoot is this machine kind's cgroup2 mount (hybrid mode).
const unifiedRoot = "/sys/fs/cgroup/unified"

// nsKillEnv makes a re-executed test binary the checking side in a private
// cgroup namespace: "<hierarchy dir>|<container>|<target pid>".
const nsKillEnv = "KOORDLET_YARN_TEST_NS_KILL"

// nsKillReport is what the checking side found.
type nsKillReport struct {
	SelfCgroup      string
	Root            string
	RootErr         string
	HostPathsMatch  bool
	NamespacedMatch bool
	Signalled       int
	Atomic          bool
	Err             string
}

// runNamespacedKillerIfRequested is the checking side; call it first in
// TestMain.
func runNamespacedKillerIfRequested() {
	spec := os.Getenv(nsKillEnv)
	if spec == "" {
		return
	}
	f := strings.Split(spec, "|")
	pid, _ := strconv.Atoi(f[2])
	var r nsKillReport
	b, _ := os.ReadFile("/proc/self/cgroup")
	r.SelfCgroup = strings.TrimSpace(string(b))
	ns := cgroups.NewNamespace("/proc", unifiedRoot, true)
	root, err := ns.Root(cgroups.CPU)
	r.Root = root
	if err != nil {
		r.RootErr = err.Error()
	}
	h := cgroups.Hierarchy{CgroupRoot: unifiedRoot, ProcRoot: "/proc", V2: true, Dir: f[0]}
	dir := h.ContainerRelDir(f[1])
	r.HostPathsMatch = h.Contains(pid, cgroups.CPU, dir)
	h.NS = ns
	r.NamespacedMatch = h.Contains(pid, cgroups.CPU, dir)
	own := cgroups.Ref{Dir: dir, Owned: true}
	res, err := (&Killer{H: h, Grace: 2 * time.Second}).Kill(&store.Container{Name: f[1], Cgroups: cgroups.Cgroups{cgroups.CPU: own}})
	r.Signalled, r.Atomic = res.Signalled, res.Atomic
	if err != nil {
		r.Err = err.Error()
	}
	_ = json.NewEncoder(os.Stdout).Encode(r)
	os.Exit(0)
}

// TestRealKernelKillFromPrivateCgroupNamespace runs the checking side (the
// killer) in a private cgroup namespace rooted at its own cgroup of the
// host's unified hierarchy, as container runtimes start koordlet on cgroup
// v2 hosts: /proc/<pid>/cgroup of the container's process then reads
// "0::/../hadoop-yarn/container_…". The namespace root is found on the
// mount, the process is proven to be the container's, gets SIGTERM (its
// graceful shutdown runs) and the kill succeeds.
func TestRealKernelKillFromPrivateCgroupNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		kerneltest.Skip(t, "real-kernel test: needs root")
	}
	if _, err := os.Stat(filepath.Join(unifiedRoot, "cgroup.procs")); err != nil {
		kerneltest.Skip(t, "real-kernel test: needs a cgroup2 hierarchy at "+unifiedRoot)
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		kerneltest.Skip(t, "real-kernel test: needs unshare (util-linux)")
	}
	top := kerneltest.UniqueRoot(t)
	hier := top + "/hadoop-yarn"
	name := "container_e17_1700000000000_0042_01_000002"
	var created cgtree.Tracker
	t.Cleanup(func() { assert.NoError(t, created.RemoveAll()) })
	koordletDir := filepath.Join(unifiedRoot, top, "koordlet")
	containerDir := filepath.Join(unifiedRoot, hier, name)
	require.NoError(t, created.MkdirAll(koordletDir))
	require.NoError(t, created.MkdirAll(containerDir))

	marks := t.TempDir()
	p := kerneltest.Start(t, "trap 'echo TERM > "+marks+"/term; exit 0' TERM; sleep 3600 & wait", containerDir)
	require.NoError(t, p.Release())

	dirFd, err := syscall.Open(koordletDir, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	require.NoError(t, err)
	defer syscall.Close(dirFd)
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command("unshare", "--cgroup", self, "-test.run=^$")
	cmd.Env = append(os.Environ(), nsKillEnv+"="+strings.Join([]string{hier, name, strconv.Itoa(p.Pid())}, "|"))
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: dirFd}
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	var r nsKillReport
	require.NoError(t, json.Unmarshal(out, &r), "%s", out)
	t.Logf("checking side: %+v", r)

	assert.True(t, strings.HasSuffix(r.SelfCgroup, "\n0::/"), "the checker runs at the root of its own cgroup namespace")
	assert.Empty(t, r.RootErr)
	assert.Equal(t, top+"/koordlet", r.Root, "the namespace root is found on the mount")
	assert.False(t, r.HostPathsMatch, "read as host paths, the namespaced /proc/<pid>/cgroup never matches")
	assert.True(t, r.NamespacedMatch, "read through the namespace, it does")
	assert.Empty(t, r.Err)
	assert.GreaterOrEqual(t, r.Signalled, 1, "the container's processes were proven and signalled")
	_, err = os.Stat(filepath.Join(marks, "term"))
	assert.NoError(t, err, "SIGTERM reached the container: its graceful shutdown ran")
	assert.Empty(t, kerneltest.Pids(containerDir))
}
