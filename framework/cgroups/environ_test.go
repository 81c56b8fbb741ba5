package cgroups

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEnvironReadIsBounded: a read of /proc/<pid>/environ that blocks (a
// process in D state holding its memory map lock) returns to the caller
// after the timeout; while it is stuck, that process's environment is not
// read again (no second goroutine), and every other process's is: stuck
// processes, however many, stop only their own reads (before, four stuck
// reads stopped every environment read on the node, and with it all
// adoption). Once a process moves on, its reads work again.
func TestEnvironReadIsBounded(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	calls := map[string]int{}
	const stuck = 2 * maxStuckForTest
	r := newEnvironReader()
	r.timeout = 20 * time.Millisecond
	r.read = func(path string, _ []byte) ([]byte, []byte, bool, error) {
		mu.Lock()
		calls[path]++
		mu.Unlock()
		if strings.HasPrefix(path, "/proc/stuck") {
			<-release // stuck in the kernel
		}
		return []byte("CONTAINER_ID=x"), nil, false, nil
	}
	called := func(path string) int { mu.Lock(); defer mu.Unlock(); return calls[path] }
	for i := 0; i < stuck; i++ {
		path := fmt.Sprintf("/proc/stuck%d/environ", i)
		_, _, err := r.Read(path)
		assert.ErrorIs(t, err, ErrEnvironTimeout)
		// Again: no second read of a process whose read is still stuck.
		_, _, err = r.Read(path)
		assert.ErrorIs(t, err, ErrEnvironTimeout)
		assert.Equal(t, 1, called(path), "one read in flight per process")
		// Every other process is read.
		d, _, err := r.Read(fmt.Sprintf("/proc/%d/environ", 100+i))
		require.NoError(t, err, "%d processes stuck", i+1)
		assert.Equal(t, "CONTAINER_ID=x", string(d))
	}

	close(release) // the processes move on
	assert.Eventually(t, func() bool {
		d, _, err := r.Read("/proc/stuck0/environ")
		return err == nil && string(d) == "CONTAINER_ID=x"
	}, 2*time.Second, 10*time.Millisecond)
}

// The node-wide cap only bounds memory: past it, no read is started.
func TestEnvironReadCap(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var n atomic.Int32
	r := newEnvironReader()
	r.timeout, r.limit = 5*time.Millisecond, maxStuckForTest
	r.read = func(string, []byte) ([]byte, []byte, bool, error) { n.Add(1); <-release; return nil, nil, false, nil }
	for i := 0; i < maxStuckForTest; i++ {
		_, _, err := r.Read(fmt.Sprintf("/proc/%d/environ", i))
		assert.ErrorIs(t, err, ErrEnvironTimeout)
	}
	_, _, err := r.Read("/proc/999/environ")
	assert.ErrorIs(t, err, ErrEnvironBusy)
	assert.Equal(t, int32(maxStuckForTest), n.Load(), "no read started past the cap")
}

const maxStuckForTest = 4

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

// TestEnvironKeepsNoSecret: a process environment can hold secrets (tokens,
// keys, passwords). The reader keeps only CONTAINER_ID's value and whether
// an AM marker name is present; no other variable's value is returned,
// whatever its name looks like or where the CONTAINER_ID name appears.
func TestEnvironKeepsNoSecret(t *testing.T) {
	const (
		id     = "container_e17_1700000000000_0007_01_000003"
		secret = "s3cr3t-AKIAEXAMPLE"
	)
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "42"), 0o755))
	r := NewEnvironReader()
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"secrets beside the id", []string{"AWS_SECRET_ACCESS_KEY=" + secret, "CONTAINER_ID=" + id, "HADOOP_TOKEN=" + secret}, id},
		{"no id: nothing", []string{"PASSWORD=" + secret, "HOME=/"}, ""},
		{"the name as a prefix", []string{"CONTAINER_ID_TOKEN=" + secret}, ""},
		{"the name as a suffix", []string{"XCONTAINER_ID=" + secret}, ""},
		{"the name inside a value", []string{"JAVA_OPTS=-DCONTAINER_ID=" + secret, "FOO=CONTAINER_ID=" + secret}, ""},
		{"a value with a newline", []string{"KEY=a\nCONTAINER_ID=" + secret, "CONTAINER_ID=" + id}, id},
		{"AM markers' values", []string{"CONTAINER_ID=" + id, "APP_SUBMIT_TIME_ENV=" + secret, "APPLICATION_WEB_PROXY_BASE=" + secret}, id},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(filepath.Join(root, "42", "environ"), environ(tc.env...), 0o644))
			got, err := r.ContainerID(root, 42)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.NotContains(t, got, secret)
			for _, me := range []string{id, "container_e17_1700000000000_0007_01_000009"} {
				v, other := parseEnviron(environ(tc.env...), me, false)
				assert.NotContains(t, other, secret, "verdict %d", v)
			}
		})
	}
}
