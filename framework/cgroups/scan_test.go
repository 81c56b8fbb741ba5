package cgroups

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"
)

// fakeNode is a fake cgroup and proc root for scan tests.
type fakeNode struct {
	t      *testing.T
	helper *system.FileTestUtil
	h      Hierarchy
}

func newFakeNode(t *testing.T, v2 bool, driver system.CgroupDriverType) *fakeNode {
	helper := system.NewFileTestUtil(t)
	t.Cleanup(helper.Cleanup)
	helper.SetCgroupsV2(v2)
	old := system.CgroupPathFormatter
	system.SetupCgroupPathFormatter(driver)
	t.Cleanup(func() { system.CgroupPathFormatter = old })
	h, err := ResolveHierarchy("")
	require.NoError(t, err)
	return &fakeNode{t: t, helper: helper, h: h}
}

// container creates the container's cgroup in the given controllers with pids.
func (n *fakeNode) container(name string, pids []int, ctrls ...Controller) {
	for _, c := range ctrls {
		dir := filepath.Join(n.h.RootDir(c), name)
		require.NoError(n.t, os.MkdirAll(dir, 0o755))
		var b strings.Builder
		for _, p := range pids {
			b.WriteString(strconv.Itoa(p) + "\n")
		}
		require.NoError(n.t, os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(b.String()), 0o644))
	}
}

// proc writes /proc/<pid>/cgroup.
func (n *fakeNode) proc(pid int, content string) {
	n.helper.WriteProcSubFileContents(filepath.Join(strconv.Itoa(pid), "cgroup"), content)
}

func byName(cs []Container) map[string]Container {
	m := map[string]Container{}
	for _, c := range cs {
		m[c.Name] = c
	}
	return m
}

func TestResolveHierarchy(t *testing.T) {
	tests := []struct {
		driver   system.CgroupDriverType
		override string
		want     string
		wantErr  bool
	}{
		{system.Cgroupfs, "", "kubepods/besteffort/hadoop-yarn", false},
		{system.Systemd, "", "kubepods.slice/kubepods-besteffort.slice/hadoop-yarn", false},
		{system.Cgroupfs, "/hadoop-yarn", "hadoop-yarn", false},
		{system.Systemd, "/kubepods.slice/yarn/", "kubepods.slice/yarn", false},
		{system.Cgroupfs, "/", "", true},
		{system.Cgroupfs, "../etc", "", true},
		{system.Cgroupfs, "a/../../b", "", true},
		{system.Cgroupfs, "a//b", "", true},
	}
	for _, tt := range tests {
		t.Run(string(tt.driver)+tt.override, func(t *testing.T) {
			n := newFakeNode(t, false, tt.driver)
			h, err := ResolveHierarchy(tt.override)
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, h.Dir)
			assert.False(t, h.V2)
			assert.Equal(t, filepath.Join(n.helper.TempDir, "cpu", tt.want), h.RootDir(CPU))
		})
	}
}

func TestScanV1(t *testing.T) {
	n := newFakeNode(t, false, system.Cgroupfs)
	am := "container_e17_1700000000000_0042_01_000001"
	exec := "container_e17_1700000000000_0042_01_000002"
	empty := "container_e17_1700000000000_0042_01_000003"
	reused := "container_e17_1700000000000_0042_01_000004"
	n.container(am, []int{100, 101}, CPU, CPUAcct, Memory)
	n.container(exec, []int{200}, CPU, CPUAcct)
	n.container(empty, nil, CPU)
	n.container(reused, []int{400, 401}, CPU)
	// Processes keep the NM pod's cgroup in the controllers YARN does not manage.
	nmPod := "kubepods/besteffort/pod1234/nm"
	n.proc(100, "5:blkio:/"+nmPod+"\n4:memory:/kubepods/besteffort/hadoop-yarn/"+am+"\n3:cpuset:/"+nmPod+"\n2:cpuacct:/kubepods/besteffort/hadoop-yarn/"+am+"\n1:cpu:/kubepods/besteffort/hadoop-yarn/"+am+"\n0::/\n")
	n.proc(200, "5:blkio:/"+nmPod+"\n4:memory:/"+nmPod+"\n3:cpuset:/"+nmPod+"\n2:cpuacct:/kubepods/besteffort/hadoop-yarn/"+exec+"\n1:cpu:/kubepods/besteffort/hadoop-yarn/"+exec+"\n")
	// pid 400 was reused by a process elsewhere; 401 is the container's.
	n.proc(400, "4:memory:/other\n1:cpu:/other\n")
	n.proc(401, "4:memory:/"+nmPod+"\n1:cpu:/kubepods/besteffort/hadoop-yarn/"+reused+"\n")
	// Entries that are not canonical container ids are ignored.
	n.container("container_e17_1700000000000_042_01_000009", []int{900}, CPU)
	n.container("container_e17_1700000000000_00042_01_000009", []int{900}, CPU)
	n.container("pod-not-yarn", []int{901}, CPU)

	res, err := NewScanner(n.h).Scan()
	require.NoError(t, err)
	assert.True(t, res.RootFound)
	got := byName(res.Containers)
	require.Len(t, got, 4)

	own := func(name string) Ref { return Ref{Dir: "kubepods/besteffort/hadoop-yarn/" + name, Owned: true} }
	shared := Ref{Dir: nmPod}

	c := got[am]
	assert.Equal(t, []int{100, 101}, c.Pids)
	assert.Equal(t, Cgroups{CPU: own(am), CPUAcct: own(am), CPUSet: shared, Memory: own(am), Blkio: shared}, c.Cgroups)
	assert.True(t, c.ID.IsApplicationMaster())

	c = got[exec]
	assert.Equal(t, []int{200}, c.Pids)
	assert.Equal(t, Cgroups{CPU: own(exec), CPUAcct: own(exec), CPUSet: shared, Memory: shared, Blkio: shared}, c.Cgroups)

	c = got[empty]
	assert.Empty(t, c.Pids)
	assert.Equal(t, Cgroups{CPU: own(empty)}, c.Cgroups)

	c = got[reused]
	assert.Equal(t, []int{400, 401}, c.Pids)
	assert.Equal(t, Cgroups{CPU: own(reused), Memory: shared}, c.Cgroups)
}

func TestScanV1ProcGone(t *testing.T) {
	n := newFakeNode(t, false, system.Cgroupfs)
	name := "container_1700000000000_0042_01_000002"
	n.container(name, []int{300}, CPU)
	res, err := NewScanner(n.h).Scan()
	require.NoError(t, err)
	require.Len(t, res.Containers, 1)
	assert.Equal(t, []int{300}, res.Containers[0].Pids)
	assert.Equal(t, Cgroups{CPU: {Dir: n.h.ContainerRelDir(name), Owned: true}}, res.Containers[0].Cgroups)
}

func TestScanV2(t *testing.T) {
	n := newFakeNode(t, true, system.Systemd)
	name := "container_e17_1700000000000_0042_01_000002"
	dir := filepath.Join(n.helper.TempDir, "kubepods.slice/kubepods-besteffort.slice/hadoop-yarn", name)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte("7\n8\n"), 0o644))

	res, err := NewScanner(n.h).Scan()
	require.NoError(t, err)
	require.Len(t, res.Containers, 1)
	c := res.Containers[0]
	assert.Equal(t, []int{7, 8}, c.Pids)
	for ctrl := Controller(0); ctrl < NumControllers; ctrl++ {
		assert.Equal(t, Ref{Dir: "kubepods.slice/kubepods-besteffort.slice/hadoop-yarn/" + name, Owned: true}, c.Cgroups[ctrl], ctrl.String())
	}
}

func TestScanMissingHierarchy(t *testing.T) {
	n := newFakeNode(t, false, system.Cgroupfs)
	res, err := NewScanner(n.h).Scan()
	require.NoError(t, err)
	assert.False(t, res.RootFound)
	assert.Empty(t, res.Containers)
}

func TestScanUnreadableHierarchy(t *testing.T) {
	n := newFakeNode(t, false, system.Cgroupfs)
	// A file where the hierarchy directory should be cannot be listed.
	require.NoError(t, os.MkdirAll(filepath.Dir(n.h.RootDir(CPU)), 0o755))
	require.NoError(t, os.WriteFile(n.h.RootDir(CPU), nil, 0o644))
	_, err := NewScanner(n.h).Scan()
	assert.Error(t, err)
}

func TestScanReusesBuffers(t *testing.T) {
	n := newFakeNode(t, false, system.Cgroupfs)
	n.container("container_1700000000000_0042_01_000002", []int{1}, CPU)
	s := NewScanner(n.h)
	for i := 0; i < 3; i++ {
		res, err := s.Scan()
		require.NoError(t, err)
		require.Len(t, res.Containers, 1)
	}
	n.container("container_1700000000000_0042_01_000003", []int{2}, CPU)
	res, err := s.Scan()
	require.NoError(t, err)
	names := []string{}
	for _, c := range res.Containers {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	assert.Equal(t, []string{"container_1700000000000_0042_01_000002", "container_1700000000000_0042_01_000003"}, names)
}

func TestParsePids(t *testing.T) {
	assert.Nil(t, parsePids(nil))
	assert.Equal(t, []int{1, 22, 333}, parsePids([]byte("1\n22\n333\n")))
	assert.Equal(t, []int{1, 2}, parsePids([]byte("1\nx2\n\n2")))
	assert.Equal(t, []int{5}, parsePids([]byte("0\n-3\n5\n")))
}

func TestScanCachesProcResolution(t *testing.T) {
	n := newFakeNode(t, false, system.Cgroupfs)
	name := "container_1700000000000_0042_01_000002"
	n.container(name, []int{500}, CPU)
	n.proc(500, "4:memory:/nm-a\n1:cpu:/"+n.h.ContainerRelDir(name)+"\n")
	s := NewScanner(n.h)
	res, err := s.Scan()
	require.NoError(t, err)
	assert.Equal(t, Ref{Dir: "nm-a"}, res.Containers[0].Cgroups[Memory])

	// Same live pid: /proc is not read again.
	n.proc(500, "4:memory:/nm-b\n1:cpu:/"+n.h.ContainerRelDir(name)+"\n")
	res, err = s.Scan()
	require.NoError(t, err)
	assert.Equal(t, Ref{Dir: "nm-a"}, res.Containers[0].Cgroups[Memory])

	// The resolving pid left the container: resolve again from a live pid.
	n.container(name, []int{501}, CPU)
	n.proc(501, "4:memory:/nm-c\n1:cpu:/"+n.h.ContainerRelDir(name)+"\n")
	res, err = s.Scan()
	require.NoError(t, err)
	assert.Equal(t, Ref{Dir: "nm-c"}, res.Containers[0].Cgroups[Memory])

	// A removed container leaves the cache.
	require.NoError(t, os.RemoveAll(filepath.Join(n.h.RootDir(CPU), name)))
	_, err = s.Scan()
	require.NoError(t, err)
	assert.Empty(t, s.procCache)
}

func TestCgroupsJSON(t *testing.T) {
	in := Cgroups{CPU: {Dir: "a/container_x", Owned: true}, Memory: {Dir: "kubepods/nm"}}
	b, err := json.Marshal(in)
	require.NoError(t, err)
	assert.JSONEq(t, `{"cpu":{"dir":"a/container_x","owned":true},"memory":{"dir":"kubepods/nm","owned":false}}`, string(b))
	var out Cgroups
	require.NoError(t, json.Unmarshal(b, &out))
	assert.Equal(t, in, out)
	assert.Error(t, json.Unmarshal([]byte(`{"gpu":{"dir":"x"}}`), &out))
}
