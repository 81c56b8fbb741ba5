package cgroups

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"
)

func TestRootMemoryFiles(t *testing.T) {
	for _, tc := range []struct {
		name      string
		v2        bool
		r         system.Resource
		f         func() *RootFile
		xattr     string
		own       string
		unlimited string // as the kernel shows no limit
	}{
		{name: "memory.high v2", v2: true, r: system.MemoryHighV2, f: NewRootMemoryHigh, xattr: PriorMemoryHighXattr, own: "max", unlimited: "max"},
		{name: "memory.high v2, YARN's own value", v2: true, r: system.MemoryHighV2, f: NewRootMemoryHigh, xattr: PriorMemoryHighXattr, own: "8589934592"},
		{name: "soft limit v1", r: softLimit, f: NewRootSoftLimit, xattr: PriorSoftLimitXattr, own: "9223372036854771712", unlimited: "-1"},
		{name: "soft limit v1, YARN's own value", r: softLimit, f: NewRootSoftLimit, xattr: PriorSoftLimitXattr, own: "4294967296"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			helper := system.NewFileTestUtil(t)
			t.Cleanup(helper.Cleanup)
			helper.SetCgroupsV2(tc.v2)
			helper.WriteCgroupFileContents(quotaRoot, tc.r, tc.own)
			f := tc.f()
			dir := f.Dir(quotaRoot)
			require.Equal(t, filepath.Dir(tc.r.Path(quotaRoot)), dir)

			require.NoError(t, f.Set(quotaRoot, 3<<30))
			assert.Equal(t, "3221225472", strings.TrimSpace(helper.ReadCgroupFileContents(quotaRoot, tc.r)))
			require.NoError(t, f.Set(quotaRoot, 2<<30))
			buf := make([]byte, 32)
			n, err := unix.Getxattr(dir, tc.xattr, buf)
			require.NoError(t, err, "the own value is recorded")
			want, err := ParseMemoryValue(tc.own)
			require.NoError(t, err)
			assert.Equal(t, want, must(ParseMemoryValue(string(buf[:n]))), "the own value, not the first write")
			assert.True(t, f.Recorded(quotaRoot))
			w, ok := f.Written(quotaRoot)
			assert.True(t, ok)
			assert.Equal(t, int64(2<<30), w)

			// A koordlet restarted over its own throttle restores from the record.
			restored, v, err := tc.f().Restore(quotaRoot)
			require.NoError(t, err)
			assert.True(t, restored)
			assert.Equal(t, want, v)
			got := strings.TrimSpace(helper.ReadCgroupFileContents(quotaRoot, tc.r))
			if tc.unlimited != "" {
				// The fake file keeps what was written: the kernel shows
				// "max" for the int64 maximum (v2) and its page counter
				// maximum for -1 (v1).
				assert.Contains(t, []string{"9223372036854775807", "-1"}, got)
			} else {
				assert.Equal(t, tc.own, got)
			}
			assert.False(t, f.Recorded(quotaRoot), "the record is gone")
		})
	}
}

func TestParseMemoryValue(t *testing.T) {
	for in, want := range map[string]int64{"max\n": MemoryUnlimited, "9223372036854771712": MemoryUnlimited, "4096": 4096, "0": 0} {
		got, err := ParseMemoryValue(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := ParseMemoryValue("lots")
	assert.Error(t, err)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestRootFileForget: a value another writer took over is forgotten
// without a write: no record, nothing to restore, the other value stays.
func TestRootFileForget(t *testing.T) {
	helper := system.NewFileTestUtil(t)
	t.Cleanup(helper.Cleanup)
	helper.SetCgroupsV2(true)
	helper.WriteCgroupFileContents(quotaRoot, system.MemoryHighV2, "max")
	f := NewRootMemoryHigh()
	require.NoError(t, f.Set(quotaRoot, 2<<30))
	helper.WriteCgroupFileContents(quotaRoot, system.MemoryHighV2, "1073741824") // another writer
	f.Forget(quotaRoot)
	assert.False(t, f.Recorded(quotaRoot))
	_, wrote := f.Written(quotaRoot)
	assert.False(t, wrote)
	restored, _, err := f.Restore(quotaRoot)
	require.NoError(t, err)
	assert.False(t, restored, "nothing of koordlet's to give back")
	assert.Equal(t, "1073741824", strings.TrimSpace(helper.ReadCgroupFileContents(quotaRoot, system.MemoryHighV2)))
}

// TestRootFileMissingDir: a write into a root whose directory does not
// exist fails with ErrNoRootDir (koordlet's executor reports it as done);
// a restore there has nothing to give back.
func TestRootFileMissingDir(t *testing.T) {
	helper := system.NewFileTestUtil(t)
	t.Cleanup(helper.Cleanup)
	helper.SetCgroupsV2(false)
	f := NewRootSoftLimit()
	err := f.Set("kubepods/besteffort/hadoop-yarn", 0)
	require.ErrorIs(t, err, ErrNoRootDir)
	_, wrote := f.Written("kubepods/besteffort/hadoop-yarn")
	assert.False(t, wrote, "nothing written")

	helper.WriteCgroupFileContents(quotaRoot, softLimit, "-1")
	require.NoError(t, f.Set(quotaRoot, 0))
	require.NoError(t, os.RemoveAll(f.Dir(quotaRoot)))
	restored, _, err := f.Restore(quotaRoot)
	require.NoError(t, err)
	assert.False(t, restored, "gone with its directory")
	_, wrote = f.Written(quotaRoot)
	assert.False(t, wrote)
}
