package policy

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const ruleA = "rules:\n- {name: a, priority: 5100, match: {queue: root.transcode}}\n"
const ruleB = "rules:\n- {name: b, priority: 5900, match: {queue: root.transcode}}\n"

func TestHolderRejectsAndKeeps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	_, err := NewHolder(path, nil)
	require.Error(t, err, "a missing file")

	require.NoError(t, os.WriteFile(path, []byte(ruleA), 0o644))
	var results []string
	h, err := NewHolder(path, func(r string) { results = append(results, r) })
	require.NoError(t, err)
	changed := 0
	h.OnChange(func() { changed++ })
	assert.Equal(t, "a", h.Policy().Rules[0].Name)

	require.NoError(t, os.WriteFile(path, []byte("rules:\n- {name: b, tier: nope}\n"), 0o644))
	err = h.Reload()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown tier "nope"`)
	assert.Contains(t, err.Error(), "the previous policy stays")
	assert.Equal(t, "a", h.Policy().Rules[0].Name, "the previous policy is kept")
	assert.Contains(t, h.Status().LastError, "unknown tier")

	require.Error(t, h.Reload()) // same bad file: still rejected
	require.NoError(t, os.WriteFile(path, []byte(ruleA), 0o644))
	require.NoError(t, h.Reload())
	assert.Zero(t, changed, "the same policy again changes nothing")
	assert.Empty(t, h.Status().LastError)
	require.NoError(t, os.WriteFile(path, []byte(ruleB), 0o644))
	require.NoError(t, h.Reload())
	assert.Equal(t, 1, changed)
	assert.Equal(t, []string{"loaded", "rejected", "rejected", "unchanged", "loaded"}, results)
}

// TestHolderWatchesAConfigMapMount: the kubelet updates a mounted ConfigMap
// by writing a new timestamped directory and renaming the ..data symlink
// over the old one; the file the flag names is a symlink through ..data.
// The watch reloads on the swap, and a bad update is rejected.
func TestHolderWatchesAConfigMapMount(t *testing.T) {
	dir := t.TempDir()
	write := func(version, content string) {
		ts := filepath.Join(dir, "..2026_11_22_"+version)
		require.NoError(t, os.Mkdir(ts, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(ts, "policy.yaml"), []byte(content), 0o644))
		tmp := filepath.Join(dir, "..data_tmp")
		require.NoError(t, os.Symlink(filepath.Base(ts), tmp))
		require.NoError(t, os.Rename(tmp, filepath.Join(dir, "..data")))
	}
	write("1", ruleA)
	path := filepath.Join(dir, "policy.yaml")
	require.NoError(t, os.Symlink("..data/policy.yaml", path))

	var loads atomic.Int32
	h, err := NewHolder(path, func(r string) {
		if r == "loaded" {
			loads.Add(1)
		}
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go h.Watch(ctx, time.Hour)
	time.Sleep(100 * time.Millisecond) // the watch is in place

	write("2", ruleB)
	require.Eventually(t, func() bool { return h.Policy().Rules[0].Name == "b" }, 3*time.Second, 20*time.Millisecond)
	write("3", "rules: [")
	require.Eventually(t, func() bool { return h.Status().LastError != "" }, 3*time.Second, 20*time.Millisecond)
	assert.Equal(t, "b", h.Policy().Rules[0].Name, "kept")
	assert.Equal(t, int32(2), loads.Load())
}
