package cgroups

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// TestProcessStartTime reads field 22 (starttime) of a fake
// /proc/<pid>/stat through procfs: the command may hold spaces and
// parentheses; a truncated record, a field that is not a number or a
// missing process is an error.
func TestProcessStartTime(t *testing.T) {
	boot := time.Unix(1700000000, 0)
	tests := []struct {
		name    string
		stat    string
		want    time.Duration
		wantErr bool
	}{
		{"plain", stat(42, "java", 123456), 1234560 * time.Millisecond, false},
		{"command with spaces and parens", stat(42, "a) b (c", 77), 770 * time.Millisecond, false},
		{"truncated", "42 (java) S 1 2 3", 0, true},
		{"no command", "42 java S", 0, true},
		{"not a number", strings.Replace(stat(42, "java", 5), " 5 10000000 ", " x 10000000 ", 1), 0, true},
		{"missing", "", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			helper := system.NewFileTestUtil(t)
			defer helper.Cleanup()
			if tt.stat != "" {
				helper.WriteProcSubFileContents(filepath.Join("42", "stat"), tt.stat)
			}
			got, err := ProcessStartTime(system.Conf.ProcRootDir, 42, boot)
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, boot.Add(tt.want), got)
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
