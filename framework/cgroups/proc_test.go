package cgroups

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// stat renders a /proc/<pid>/stat line with the given command and starttime
// (field 22).
func stat(pid int, comm string, startTicks int64) string {
	return fmt.Sprintf("%d (%s) S 1 %d %d 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 %d 10000000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n",
		pid, comm, pid, pid, startTicks)
}

func TestParseStartTicks(t *testing.T) {
	tests := []struct {
		name string
		stat string
		want int64
		ok   bool
	}{
		{"plain", stat(42, "java", 123456), 123456, true},
		{"command with spaces and parens", stat(42, "a) b (c", 77), 77, true},
		{"truncated", "42 (java) S 1 2 3", 0, false},
		{"no command", "42 java S", 0, false},
		{"not a number", "42 (java) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 x 20\n", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseStartTicks([]byte(tt.stat))
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestBootTime(t *testing.T) {
	helper := system.NewFileTestUtil(t)
	defer helper.Cleanup()
	_, err := BootTime(system.Conf.ProcRootDir)
	assert.Error(t, err, "no stat file")
	helper.WriteProcSubFileContents("stat", "cpu  1 2 3\nintr 5\nbtime 1700000000\nprocesses 9\n")
	boot, err := BootTime(system.Conf.ProcRootDir)
	require.NoError(t, err)
	assert.Equal(t, time.Unix(1700000000, 0), boot)
	helper.WriteProcSubFileContents("stat", "cpu  1 2 3\nbtime x\n")
	_, err = BootTime(system.Conf.ProcRootDir)
	assert.Error(t, err)
}

// TestScanStarted: a container's start time is its oldest process's start
// time, read once; a container whose processes cannot be read has none.
func TestScanStarted(t *testing.T) {
	n := newFakeNode(t, false, system.Cgroupfs)
	boot := time.Unix(1700000000, 0)
	n.helper.WriteProcSubFileContents("stat", "cpu  1 2 3\nbtime 1700000000\n")
	a, b := "container_1700000000000_0042_01_000002", "container_1700000000000_0042_01_000003"
	n.container(a, []int{700, 300, 500}, CPU, CPUAcct)
	for pid, ticks := range map[int]int64{700: 9000, 300: 1234, 500: 5000} {
		n.helper.WriteProcSubFileContents(filepath.Join(strconv.Itoa(pid), "stat"), stat(pid, "bash", ticks))
	}
	n.container(b, []int{900}, CPU, CPUAcct) // no /proc entry: exited
	s := NewScanner(n.h)
	res, err := s.Scan()
	require.NoError(t, err)
	got := byName(res.Containers)
	assert.Equal(t, boot.Add(12340*time.Millisecond), got[a].Started, "the oldest of the three processes")
	assert.True(t, got[b].Started.IsZero())

	// Read once: the launcher exiting does not make the container younger.
	n.container(a, []int{700}, CPU, CPUAcct)
	require.NoError(t, os.RemoveAll(filepath.Join(system.Conf.ProcRootDir, "300")))
	res, err = s.Scan()
	require.NoError(t, err)
	assert.Equal(t, boot.Add(12340*time.Millisecond), byName(res.Containers)[a].Started)

	// A removed container leaves the cache.
	require.NoError(t, os.RemoveAll(filepath.Join(n.h.RootDir(CPU), a)))
	require.NoError(t, os.RemoveAll(filepath.Join(n.h.RootDir(CPUAcct), a)))
	_, err = s.Scan()
	require.NoError(t, err)
	assert.NotContains(t, s.started, a)
}

// TestProcessStartTimeRealKernel reads this test process's own start time
// from the real /proc: it started before now and not long ago, which checks
// the clock-tick unit and the boot time together.
func TestProcessStartTimeRealKernel(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		kerneltest.Skipf(t, "no /proc on this host: %v", err)
	}
	boot, err := BootTime("/proc")
	require.NoError(t, err)
	started, err := ProcessStartTime("/proc", os.Getpid(), boot)
	require.NoError(t, err)
	assert.False(t, started.After(time.Now().Add(time.Second)), "started %v, in the future", started)
	assert.WithinDuration(t, time.Now(), started, 10*time.Minute)
}
