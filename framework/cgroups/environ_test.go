package cgroups

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEnvironReadIsBounded: a read of /proc/<pid>/environ that blocks (a
// process in D state holding its memory map lock) returns to the caller
// after the timeout; past maxStuckEnvironReads stuck reads, reads are not
// even started; once the process moves on, reads work again. The reader
// before read inline and blocked the scan, and the informer, for as long
// as the process stayed stuck.
func TestEnvironReadIsBounded(t *testing.T) {
	release := make(chan struct{})
	r := newEnvironReader()
	r.timeout = 20 * time.Millisecond
	r.read = func(string, []byte) ([]byte, []byte, bool, error) {
		<-release // stuck in the kernel
		return []byte("CONTAINER_ID=x"), nil, false, nil
	}
	for i := 0; i < maxStuckEnvironReads; i++ {
		start := time.Now()
		_, _, err := r.Read("/proc/1/environ")
		assert.ErrorIs(t, err, ErrEnvironTimeout)
		assert.Less(t, time.Since(start), time.Second, "bounded in time")
	}
	start := time.Now()
	_, _, err := r.Read("/proc/1/environ")
	assert.ErrorIs(t, err, ErrEnvironBusy, "no more goroutines left to a stuck process")
	assert.Less(t, time.Since(start), 10*time.Millisecond)

	close(release) // the process moves on
	assert.Eventually(t, func() bool {
		d, _, err := r.Read("/proc/1/environ")
		return err == nil && string(d) == "CONTAINER_ID=x"
	}, 2*time.Second, 10*time.Millisecond)
}

// An empty environment is no answer: a process in the middle of an exec
// shows one (found by make measure-adopt: the adopter kept "no container"
// for a launch whose environment it had read mid-exec, and never moved it).
func TestContainerIDEmptyEnvironment(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "42"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "42", "environ"), nil, 0o644))
	r := NewEnvironReader()
	_, err := r.ContainerID(root, 42)
	assert.ErrorIs(t, err, ErrEnvironEmpty)

	const id = "container_e17_1700000000000_0007_01_000003"
	require.NoError(t, os.WriteFile(filepath.Join(root, "42", "environ"), []byte("HOME=/\x00CONTAINER_ID="+id+"\x00"), 0o644))
	got, err := r.ContainerID(root, 42)
	require.NoError(t, err)
	assert.Equal(t, id, got)
	require.NoError(t, os.WriteFile(filepath.Join(root, "42", "environ"), []byte("HOME=/\x00"), 0o644))
	got, err = r.ContainerID(root, 42)
	require.NoError(t, err)
	assert.Empty(t, got, "an environment without CONTAINER_ID: none, an answer")
}
