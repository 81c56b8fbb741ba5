package cgroups

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTicksSince(t *testing.T) {
	boot := time.Unix(1000, 0)
	prevAt := boot.Add(50 * time.Second) // 5000 ticks after boot
	prev := map[int]ProcessTicks{10: {Start: 100, Ticks: 500}, 11: {Start: 200, Ticks: 40}, 12: {Start: 300, Ticks: 7}}
	cur := map[int]ProcessTicks{
		10: {Start: 100, Ticks: 600}, // +100
		11: {Start: 4990, Ticks: 3},  // pid reused, started before prevAt: nothing
		13: {Start: 5010, Ticks: 25}, // new since: all of it
		14: {Start: 10, Ticks: 900},  // there before, not listed then: nothing
		12: {Start: 300, Ticks: 5},   // went back: nothing
	}
	assert.Equal(t, uint64(125), TicksSince(prev, cur, prevAt, boot))
	assert.Zero(t, TicksSince(nil, nil, prevAt, boot))
}

// TestReadProcessTicks reads this test's own process from a fake cgroup
// listing it.
func TestReadProcessTicks(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte("1\n"+strconv.Itoa(os.Getpid())+"\n999999999\n"), 0o644))
	x := 0
	for deadline := time.Now().Add(50 * time.Millisecond); time.Now().Before(deadline); {
		x++
	}
	got, err := ReadProcessTicks("/proc", dir)
	require.NoError(t, err)
	me, ok := got[os.Getpid()]
	require.True(t, ok)
	assert.Positive(t, me.Start)
	assert.NotContains(t, got, 999999999, "a pid that is gone is skipped")
	_, err = ReadProcessTicks("/proc", filepath.Join(dir, "missing"))
	assert.Error(t, err)
}
