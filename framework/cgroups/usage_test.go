package cgroups

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/resourceexecutor"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"
)

// TestUsageReaderMatchesKoordlet checks that UsageReader returns exactly
// what koordlet's CgroupReader returns for the same files, on v1 and v2.
func TestUsageReaderMatchesKoordlet(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("v2=%v", v2), func(t *testing.T) {
			helper := system.NewFileTestUtil(t)
			defer helper.Cleanup()
			helper.SetCgroupsV2(v2)
			dir := "kubepods/besteffort/hadoop-yarn/container_1700000000000_0042_01_000002"
			if v2 {
				helper.WriteCgroupFileContents(dir, system.CPUStatV2, "usage_usec 123456\nuser_usec 1\nsystem_usec 2\nnr_periods 40\nnr_throttled 7\nthrottled_usec 900\n")
				helper.WriteCgroupFileContents(dir, system.MemoryStatV2, "anon 300\nfile 200\nkernel_stack 9\nactive_anon 250\ninactive_anon 50\nactive_file 120\ninactive_file 80\nunevictable 5\n")
			} else {
				helper.WriteCgroupFileContents(dir, system.CPUAcctUsage, "987654321\n")
				helper.WriteCgroupFileContents(dir, system.CPUStat, "nr_periods 40\nnr_throttled 7\nthrottled_time 900000\n")
				helper.WriteCgroupFileContents(dir, system.MemoryStat, "cache 1\nrss 2\ntotal_cache 200\ntotal_rss 300\ntotal_inactive_file 80\ntotal_active_file 120\ntotal_inactive_anon 50\ntotal_active_anon 250\ntotal_unevictable 5\n")
			}
			koord := resourceexecutor.NewCgroupReader()
			ours := NewUsageReader(helper.TempDir, v2)

			wantCPU, err := koord.ReadCPUAcctUsage(dir)
			require.NoError(t, err)
			gotCPU, err := ours.CPUUsage(dir)
			require.NoError(t, err)
			assert.Equal(t, wantCPU, gotCPU)

			wantStat, err := koord.ReadCPUStat(dir)
			require.NoError(t, err)
			gotStat, err := ours.CPUStat(dir)
			require.NoError(t, err)
			assert.Equal(t, *wantStat, gotStat)

			wantMem, err := koord.ReadMemoryStat(dir)
			require.NoError(t, err)
			gotMem, err := ours.MemoryStat(dir)
			require.NoError(t, err)
			assert.Equal(t, *wantMem, gotMem)
			assert.Equal(t, wantMem.Usage(), gotMem.Usage())
			assert.Equal(t, wantMem.UsageWithPageCache(), gotMem.UsageWithPageCache())

			// Files stay open between reads and see new content.
			wantOpen := 3 // cpuacct.usage, cpu.stat, memory.stat
			if v2 {
				wantOpen = 2 // cpu.stat serves both CPU reads
			}
			assert.Equal(t, wantOpen, ours.OpenFiles())
			if v2 {
				helper.WriteCgroupFileContents(dir, system.CPUStatV2, "usage_usec 2\nnr_periods 1\nnr_throttled 0\nthrottled_usec 0\n")
			} else {
				helper.WriteCgroupFileContents(dir, system.CPUAcctUsage, "2000\n")
			}
			gotCPU, err = ours.CPUUsage(dir)
			require.NoError(t, err)
			assert.Equal(t, uint64(2000), gotCPU)
			ours.Forget(dir)
			assert.Equal(t, 0, ours.OpenFiles())

			_, err = ours.CPUUsage(dir + "-gone")
			assert.True(t, IsGone(err))
			_, err = ours.MemoryStat(dir + "-gone")
			assert.True(t, IsGone(err))
		})
	}
}

func TestUsageReaderMalformed(t *testing.T) {
	helper := system.NewFileTestUtil(t)
	defer helper.Cleanup()
	helper.SetCgroupsV2(false)
	dir := "x"
	helper.WriteCgroupFileContents(dir, system.CPUAcctUsage, "abc")
	helper.WriteCgroupFileContents(dir, system.CPUStat, "nr_periods 1\n")
	helper.WriteCgroupFileContents(dir, system.MemoryStat, "total_rss 1\n")
	r := NewUsageReader(helper.TempDir, false)
	_, err := r.CPUUsage(dir)
	assert.Error(t, err)
	_, err = r.CPUStat(dir)
	assert.Error(t, err)
	_, err = r.MemoryStat(dir)
	assert.Error(t, err)
	assert.False(t, IsGone(err))
}

// TestUsageReaderFaultsAndHighEvents: the page faults (hierarchical on v1)
// and memory.events' high, and a clear error where a field or the file is
// missing.
func TestUsageReaderFaultsAndHighEvents(t *testing.T) {
	dir := "kubepods/besteffort/hadoop-yarn"
	t.Run("v1", func(t *testing.T) {
		helper := system.NewFileTestUtil(t)
		defer helper.Cleanup()
		helper.SetCgroupsV2(false)
		helper.WriteCgroupFileContents(dir, system.MemoryStat, "pgfault 3\npgmajfault 1\ntotal_pgfault 4096\ntotal_pgmajfault 9\n")
		r := NewUsageReader(helper.TempDir, false)
		n, err := r.PageFaults(dir)
		require.NoError(t, err)
		assert.Equal(t, int64(4096), n, "the hierarchy's, not the root's own tasks'")
		n, err = r.MajorFaults(dir)
		require.NoError(t, err)
		assert.Equal(t, int64(9), n, "the hierarchy's major faults")
		_, err = r.MemoryHighEvents(dir)
		assert.ErrorContains(t, err, "cgroup v1 has no memory.high")
		helper.WriteCgroupFileContents(dir, system.MemoryStat, "pgfault 3\n")
		_, err = r.PageFaults(dir)
		assert.ErrorContains(t, err, "lacks total_pgfault")
		_, err = r.MajorFaults(dir)
		assert.ErrorContains(t, err, "lacks total_pgmajfault")
	})
	t.Run("v2", func(t *testing.T) {
		helper := system.NewFileTestUtil(t)
		defer helper.Cleanup()
		helper.SetCgroupsV2(true)
		helper.WriteCgroupFileContents(dir, system.MemoryStatV2, "anon 1\npgfault 777\npgmajfault 2\n")
		r := NewUsageReader(helper.TempDir, true)
		n, err := r.PageFaults(dir)
		require.NoError(t, err)
		assert.Equal(t, int64(777), n)
		n, err = r.MajorFaults(dir)
		require.NoError(t, err)
		assert.Equal(t, int64(2), n)
		_, err = r.MemoryHighEvents(dir)
		assert.True(t, IsGone(err), "no memory.events: %v", err)
		require.NoError(t, os.WriteFile(filepath.Join(helper.TempDir, dir, "memory.events"), []byte("low 0\nhigh 12\nmax 0\noom 0\noom_kill 0\n"), 0o644))
		n, err = r.MemoryHighEvents(dir)
		require.NoError(t, err)
		assert.Equal(t, int64(12), n)
	})
}
