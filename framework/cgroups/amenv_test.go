package cgroups

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

func environ(entries ...string) []byte { return []byte(strings.Join(entries, "\x00") + "\x00") }

func TestParseEnviron(t *testing.T) {
	const me = "container_e01_1700000000000_0042_01_000001"
	for _, tc := range []struct {
		name      string
		env       []byte
		truncated bool
		want      envVerdict
	}{
		{"AM: both markers", environ("PATH=/bin", "CONTAINER_ID="+me, "APP_SUBMIT_TIME_ENV=1700000000123", "APPLICATION_WEB_PROXY_BASE=/proxy/application_1700000000000_0042"), false, envAM},
		{"AM: submit time alone", environ("CONTAINER_ID="+me, "APP_SUBMIT_TIME_ENV=1"), false, envAM},
		{"AM: proxy base alone", environ("APPLICATION_WEB_PROXY_BASE=/proxy/x", "CONTAINER_ID="+me), false, envAM},
		{"not AM: id without markers", environ("CONTAINER_ID="+me, "NM_HOST=node1", "JAVA_HOME=/usr"), false, envNotAM},
		{"no CONTAINER_ID: says nothing", environ("PATH=/bin", "APP_SUBMIT_TIME_ENV=1"), false, envNoID},
		{"empty (a zombie's)", nil, false, envNoID},
		{"another container's id", environ("CONTAINER_ID=container_e01_1700000000000_0042_01_000002", "APP_SUBMIT_TIME_ENV=1"), false, envForeign},
		{"id with a suffix", environ("CONTAINER_ID=" + me + "0"), false, envForeign},
		{"marker as a value, not a key", environ("CONTAINER_ID="+me, "X=APP_SUBMIT_TIME_ENV=1"), false, envNotAM},
		{"marker name as a prefix only", environ("CONTAINER_ID="+me, "APP_SUBMIT_TIME_ENV_X=1"), false, envNotAM},
		{"entry without =", environ("garbage", "CONTAINER_ID="+me), false, envNotAM},
		{"no trailing NUL", []byte("CONTAINER_ID=" + me + "\x00APP_SUBMIT_TIME_ENV=1"), false, envAM},
		{"cut: no marker seen proves nothing", environ("CONTAINER_ID="+me, "BIG=xxxx"), true, envIncomplete},
		{"cut: a marker seen still counts", environ("CONTAINER_ID="+me, "APP_SUBMIT_TIME_ENV=1", "BIG=xxxx"), true, envAM},
		{"cut: the cut entry is dropped", []byte("A=1\x00CONTAINER_ID=" + me), true, envNoID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := parseEnviron(tc.env, me, tc.truncated)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestReadEnvironCapped(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	big := filepath.Join(dir, "big")
	require.NoError(t, os.WriteFile(small, environ("CONTAINER_ID=c"), 0o600))
	require.NoError(t, os.WriteFile(big, make([]byte, MaxEnvironBytes+1), 0o600))

	data, buf, truncated, err := readEnviron(small, nil)
	require.NoError(t, err)
	assert.False(t, truncated)
	assert.Equal(t, environ("CONTAINER_ID=c"), data)

	data, buf2, truncated, err := readEnviron(big, buf)
	require.NoError(t, err)
	assert.True(t, truncated)
	assert.Len(t, data, MaxEnvironBytes)
	assert.Same(t, &buf[0], &buf2[0], "the buffer is reused")

	_, _, _, err = readEnviron(filepath.Join(dir, "missing"), buf)
	assert.True(t, isGone(err))
}

// TestOneAMPerAttempt: several containers of one attempt claiming the AM
// markers leave only the attempt's first container (lowest epoch, then
// sequence) an AM; other attempts and applications are apart.
func TestOneAMPerAttempt(t *testing.T) {
	c := func(name string, ev AMEvidence) Container {
		id, err := yarn.ParseContainerID(name)
		require.NoError(t, err)
		return Container{Name: name, ID: id, AM: ev}
	}
	cs := []Container{
		c("container_e02_1700000000000_0042_01_000003", AMByEnvironment), // a claim after the RM restart
		c("container_e01_1700000000000_0042_01_000009", AMByEnvironment), // the attempt's first
		c("container_e01_1700000000000_0042_01_000010", AMByEnvironment),
		c("container_e01_1700000000000_0042_02_000001", AMByEnvironment), // another attempt
		c("container_1700000000000_0043_01_000002", AMByEnvironment),     // another application
		c("container_1700000000000_0043_01_000003", NotAMByEnvironment),
		c("container_1700000000000_0043_01_000004", AMUnknown),
	}
	oneAMPerAttempt(cs)
	got := map[string]AMEvidence{}
	for _, x := range cs {
		got[x.Name] = x.AM
	}
	assert.Equal(t, map[string]AMEvidence{
		"container_e02_1700000000000_0042_01_000003": NotAMByEnvironment,
		"container_e01_1700000000000_0042_01_000009": AMByEnvironment,
		"container_e01_1700000000000_0042_01_000010": NotAMByEnvironment,
		"container_e01_1700000000000_0042_02_000001": AMByEnvironment,
		"container_1700000000000_0043_01_000002":     AMByEnvironment,
		"container_1700000000000_0043_01_000003":     NotAMByEnvironment,
		"container_1700000000000_0043_01_000004":     AMUnknown,
	}, got)
}

// TestScanAMUnreadableEnvironment: an environ that cannot be read (here a
// directory on a fake proc root, for a real pid the pidfd can pin) decides
// nothing, so the sequence rule stays; a later scan that can read it
// decides. The process must be in the container's cgroup by its
// /proc/<pid>/cgroup.
func TestScanAMUnreadableEnvironment(t *testing.T) {
	n := newFakeNode(t, false, system.Cgroupfs)
	const name = "container_e01_1700000000000_0042_01_000001"
	pid := os.Getpid() // alive, so a pidfd pins it
	n.container(name, []int{pid}, CPU)
	n.proc(pid, "4:cpu:/"+n.h.ContainerRelDir(name)+"\n")
	n.helper.WriteProcSubFileContents(filepath.Join(strconv.Itoa(pid), "stat"), kerneltest.ProcStat(pid, "java", 1, 500)) // the pin reads its start time
	environPath := filepath.Join(system.Conf.ProcRootDir, strconv.Itoa(pid), "environ")
	require.NoError(t, os.MkdirAll(environPath, 0o755))

	s := NewScanner(n.h)
	res, err := s.Scan()
	require.NoError(t, err)
	assert.Equal(t, AMUnknown, byName(res.Containers)[name].AM, "unreadable: undecided")

	require.NoError(t, os.Remove(environPath))
	require.NoError(t, os.WriteFile(environPath, environ("CONTAINER_ID="+name), 0o644))
	res, err = s.Scan()
	require.NoError(t, err)
	assert.Equal(t, NotAMByEnvironment, byName(res.Containers)[name].AM, "read at a later scan: an executor")

	// Not in the container's cgroup by /proc/<pid>/cgroup: never decides.
	s = NewScanner(n.h)
	n.proc(pid, "4:cpu:/kubepods/besteffort/podnm/nm\n")
	res, err = s.Scan()
	require.NoError(t, err)
	assert.Equal(t, AMUnknown, byName(res.Containers)[name].AM)
}
