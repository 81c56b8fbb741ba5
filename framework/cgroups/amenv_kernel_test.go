package cgroups

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// amMarkers is what the ResourceManager's AMLauncher adds to an AM's
// environment.
var amMarkers = []string{"APP_SUBMIT_TIME_ENV=1700000000123", "APPLICATION_WEB_PROXY_BASE=/proxy/application_1700000000000_0042"}

// realYARN is a YARN hierarchy in the host's cgroup v1 cpu controller.
type realYARN struct {
	h Hierarchy
}

func newRealYARN(t *testing.T) *realYARN {
	kerneltest.RequireCgroupV1(t, "cpu")
	dir := kerneltest.UniqueRoot(t) + "/hadoop-yarn"
	kerneltest.MakeCgroup(t, "cpu", dir)
	return &realYARN{h: Hierarchy{CgroupRoot: kerneltest.CgroupRoot, ProcRoot: "/proc", Dir: dir,
		NS: NewNamespace("/proc", kerneltest.CgroupRoot, false)}}
}

// container makes the container's cpu cgroup and starts one process in it
// with env.
func (y *realYARN) container(t *testing.T, name string, env []string, cred *syscall.Credential) int {
	dir := kerneltest.MakeCgroup(t, "cpu", y.h.Dir+"/"+name)
	return kerneltest.StartEnv(t, env, cred, dir)
}

func scanAM(t *testing.T, s *Scanner) map[string]AMEvidence {
	t.Helper()
	res, err := s.Scan()
	require.NoError(t, err)
	out := map[string]AMEvidence{}
	for _, c := range res.Containers {
		out[c.Name] = c.AM
	}
	return out
}

// TestScanAMFromEnvironmentRealKernel starts real processes with YARN-like
// environments in real container cgroups and checks what the scan reads:
// the markers make an AM whatever the sequence; an epoch executor numbered
// 000001 with only its CONTAINER_ID is not one; an environment naming
// another container, one without CONTAINER_ID, an empty one and one cut at
// the cap before a marker could be seen decide nothing (the sequence rule
// stays); of two containers of one attempt with the markers, the first is
// the AM.
func TestScanAMFromEnvironmentRealKernel(t *testing.T) {
	y := newRealYARN(t)
	const (
		am          = "container_e01_1700000000000_0042_02_000001"
		amLater     = "container_e01_1700000000000_0043_01_000005" // an AM whose sequence is not 1
		epochExec   = "container_e01_1700000000000_0044_01_000001"
		foreign     = "container_e01_1700000000000_0045_01_000001"
		launcher    = "container_e01_1700000000000_0046_01_000001"
		emptyEnv    = "container_e01_1700000000000_0049_01_000001"
		oversized   = "container_e01_1700000000000_0047_01_000001"
		sameAttempt = "container_e01_1700000000000_0043_01_000007" // claims the markers too: amLater came first
	)
	big := strings.Repeat("x", 100_000) // execve takes at most 128 KiB per string
	cases := map[string]struct {
		env  []string
		want AMEvidence
	}{
		am:          {append([]string{"PATH=/bin", "CONTAINER_ID=" + am}, amMarkers...), AMByEnvironment},
		amLater:     {append([]string{"CONTAINER_ID=" + amLater}, amMarkers...), AMByEnvironment},
		epochExec:   {[]string{"PATH=/bin", "CONTAINER_ID=" + epochExec, "NM_HOST=node1"}, NotAMByEnvironment},
		foreign:     {append([]string{"CONTAINER_ID=" + am}, amMarkers...), AMUnknown},
		launcher:    {[]string{"PATH=/bin", "HOME=/home/yarn"}, AMUnknown},
		emptyEnv:    {nil, AMUnknown}, // what a process without an mm (exiting) shows
		oversized:   {append([]string{"CONTAINER_ID=" + oversized, "A=" + big, "B=" + big, "C=" + big}, amMarkers...), AMUnknown},
		sameAttempt: {[]string{"CONTAINER_ID=" + sameAttempt, "APP_SUBMIT_TIME_ENV=1"}, NotAMByEnvironment},
	}
	for name, tc := range cases {
		y.container(t, name, tc.env, nil)
	}
	s := NewScanner(y.h)
	got := scanAM(t, s)
	for name, tc := range cases {
		assert.Equal(t, tc.want, got[name], name)
	}
	id, err := yarn.ParseContainerID(epochExec)
	require.NoError(t, err)
	assert.True(t, id.IsApplicationMaster(), "the sequence rule alone would take the epoch executor for the AM")

	// Decided ones are cached; undecided ones are tried again, a bounded
	// number of scans.
	assert.Equal(t, 1, s.am[am].scans)
	for i := 0; i < maxAMScans+3; i++ {
		got = scanAM(t, s)
	}
	assert.Equal(t, AMByEnvironment, got[am])
	assert.Equal(t, 1, s.am[am].scans, "read once")
	assert.Equal(t, maxAMScans, s.am[foreign].scans, "retried, bounded")
	assert.Equal(t, AMUnknown, got[foreign])
}

// TestAMOnlyFromProcessesInTheContainerRealKernel: a pid listed for the
// container whose process is no longer in the container's cgroup (it moved,
// or its number now names another process) never decides, even when its
// environment names the container.
func TestAMOnlyFromProcessesInTheContainerRealKernel(t *testing.T) {
	y := newRealYARN(t)
	const name = "container_e01_1700000000000_0042_01_000003"
	kerneltest.MakeCgroup(t, "cpu", y.h.Dir+"/"+name)
	outside := kerneltest.MakeCgroup(t, "cpu", y.h.Dir+"/elsewhere")
	pid := kerneltest.StartEnv(t, append([]string{"CONTAINER_ID=" + name}, amMarkers...), nil, outside)

	id, err := yarn.ParseContainerID(name)
	require.NoError(t, err)
	c := Container{Name: name, ID: id, Pids: []int{pid}}
	c.Cgroups[CPU] = Ref{Dir: y.h.ContainerRelDir(name), Owned: true}
	s := NewScanner(y.h)
	s.fillAM(&c)
	assert.Equal(t, AMUnknown, c.AM)

	// The same process inside the container decides.
	s = NewScanner(y.h)
	require.NoError(t, os.WriteFile(y.h.AbsDir(CPU, y.h.ContainerRelDir(name))+"/cgroup.procs", []byte(strconv.Itoa(pid)), 0o644))
	s.fillAM(&c)
	assert.Equal(t, AMByEnvironment, c.AM)
}
