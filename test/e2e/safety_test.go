package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/test/cgtree"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

// TestBoxRefusesForeignKubepods starts the box while a kubepods tree that it
// did not create holds a live process (as on a Kubernetes node): Start
// refuses with one clear error, and its clean-up leaves the foreign tree and
// the process exactly as they were.
func TestBoxRefusesForeignKubepods(t *testing.T) {
	if skipReason != "" {
		kerneltest.Skip(t, "node-level e2e: "+skipReason)
	}
	// Prepare the foreign tree while no box runs (a running box owns
	// kubepods); this test removes only what it created.
	release, err := nodebox.HoldLock(20 * time.Minute)
	require.NoError(t, err)
	var foreign cgtree.Tracker
	t.Cleanup(func() { assert.NoError(t, foreign.RemoveAll()) })
	var dirs []string
	for _, ctrl := range []string{"cpu", "memory"} {
		dir := filepath.Join(kerneltest.CgroupRoot, ctrl, "kubepods/besteffort/pod-foreign/c1")
		if err := foreign.MkdirAll(dir); err != nil {
			release()
			t.Fatalf("a kubepods tree exists on this host; the test does not touch it: %v", err)
		}
		dirs = append(dirs, dir)
	}
	pid := kerneltest.StartPlain(t, "sleep 600")
	for _, dir := range dirs {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644))
	}
	release()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	box, err := nodebox.Start(ctx, nodebox.Options{Top: repoTop(), LockWait: 20 * time.Minute})
	if box != nil {
		box.Stop()
	}
	require.Error(t, err)
	assert.ErrorIs(t, err, nodebox.ErrKubernetesNode)
	assert.Contains(t, err.Error(), "kubepods")
	t.Logf("refusal: %v", err)

	for _, dir := range dirs {
		_, statErr := os.Stat(dir)
		assert.NoError(t, statErr, "foreign cgroup %s must survive", dir)
		assert.Equal(t, []int{pid}, kerneltest.Pids(dir), "the foreign process must stay in %s", dir)
	}
	assert.NoError(t, syscall.Kill(pid, 0), "the foreign process must be alive")
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	require.NoError(t, err)
	state := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))[0]
	assert.Equal(t, "S", state, "the foreign process must be running normally (sleeping), not stopped or frozen")
}
