package cgtree

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTrackerRemovesOnlyWhatItCreated(t *testing.T) {
	root := t.TempDir()
	foreign := filepath.Join(root, "kubepods", "besteffort")
	require.NoError(t, os.MkdirAll(filepath.Join(foreign, "pod-a"), 0o755))

	var tr Tracker
	require.NoError(t, tr.MkdirAll(filepath.Join(foreign, "hadoop-yarn", "container_1")))
	assert.Equal(t, []string{filepath.Join(foreign, "hadoop-yarn"), filepath.Join(foreign, "hadoop-yarn", "container_1")}, tr.Created())
	assert.True(t, tr.Owns(filepath.Join(foreign, "hadoop-yarn", "container_1", "x")))
	assert.False(t, tr.Owns(foreign))
	assert.ErrorIs(t, tr.Mkdir(filepath.Join(foreign, "pod-a")), os.ErrExist, "an existing dir is not ours")

	require.NoError(t, tr.RemoveAll())
	assert.NoDirExists(t, filepath.Join(foreign, "hadoop-yarn"))
	assert.DirExists(t, filepath.Join(foreign, "pod-a"), "what existed before stays")
	assert.Empty(t, tr.Created())
	require.NoError(t, tr.RemoveAll(), "nothing left to remove")
	assert.DirExists(t, foreign)
}
