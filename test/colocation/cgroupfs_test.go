package colocation

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseCPUMax(t *testing.T) {
	for _, tc := range []struct {
		in            string
		quota, period int64
		err           string
	}{
		{in: "max 100000\n", quota: -1, period: 100000},
		{in: "50000 100000", quota: 50000, period: 100000},
		{in: "max", err: "want"},
		{in: "50000 0", err: "bad period"},
		{in: "-1 100000", err: "bad quota"},
		{in: "lots 100000", err: "bad quota"},
	} {
		q, p, err := parseCPUMax(tc.in)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.quota, q, tc.in)
		assert.Equal(t, tc.period, p, tc.in)
	}
}

func TestCgroupFSLayouts(t *testing.T) {
	root := t.TempDir()
	v1 := cgroupFS{root: root}
	v2 := cgroupFS{root: root, unified: true}
	assert.Equal(t, filepath.Join(root, "cpu", "kubepods/pod1"), v1.dir("cpu", "kubepods/pod1"))
	assert.Equal(t, filepath.Join(root, "kubepods/pod1"), v2.dir("cpu", "kubepods/pod1"))

	write := func(rel, file, v string) {
		require.NoError(t, os.MkdirAll(filepath.Join(root, rel), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, rel, file), []byte(v), 0o644))
	}
	write("cpuacct/be", "cpuacct.usage", "2500000000\n")
	write("cpu/be", "cpu.cfs_quota_us", "50000\n")
	write("cpu/be", "cpu.cfs_period_us", "100000\n")
	write("be", "cpu.stat", "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n")
	write("be", "cpu.max", "max 100000\n")

	s, err := v1.usageSeconds("be")
	require.NoError(t, err)
	assert.InDelta(t, 2.5, s, 1e-9)
	s, err = v2.usageSeconds("be")
	require.NoError(t, err)
	assert.InDelta(t, 1.5, s, 1e-9)
	s, err = v2.usageSeconds("gone")
	require.NoError(t, err, "a cgroup not made yet used nothing")
	assert.Zero(t, s)

	q, p, err := v1.quota("be")
	require.NoError(t, err)
	assert.Equal(t, [2]int64{50000, 100000}, [2]int64{q, p})
	q, p, err = v2.quota("be")
	require.NoError(t, err)
	assert.Equal(t, [2]int64{-1, 100000}, [2]int64{q, p})
	assert.Equal(t, "50000", v1.quotaText("be"))
	assert.Equal(t, "max 100000", v2.quotaText("be"))
	assert.Equal(t, "-", v2.quotaText("gone"))
	assert.Equal(t, "max", v2.unlimited()["cpu.max"])
	assert.Equal(t, "-1", v1.unlimited()["cpu.cfs_quota_us"])

	write("bad", "cpu.stat", "user_usec 1\n")
	_, err = v2.usageSeconds("bad")
	assert.ErrorContains(t, err, "no usage_usec")
}
