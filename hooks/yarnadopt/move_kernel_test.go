package yarnadopt

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
)

// TestRealKernelHalfMoveFinished (issue 31 item 3): a koordlet that died
// between the memory and the cpu write of a move left a container's
// process in the container's memory cgroup and the NM pod's cpu cgroup. The
// next scan finishes the move; before, it rejected the process (its memory
// path was no longer the pod's) and CPU QoS never reached it.
func TestRealKernelHalfMoveFinished(t *testing.T) {
	n := newNode(t)
	if n.v2 {
		t.Skip("one unified hierarchy: a move is one write, nothing is half moved")
	}
	a := n.adopter(t, true)
	id := containerName(2)
	n.nm.add(id)
	p := n.launch(t, id, "exec sleep 3600")
	dirs, err := ensureLeaf(n.h, id, nil)
	require.NoError(t, err)
	// The first write of the interrupted move: memory only.
	mem := n.h.AbsDir(cgroups.Memory, n.h.ContainerRelDir(id))
	require.Contains(t, dirs, mem)
	require.NoError(t, os.WriteFile(filepath.Join(mem, "cgroup.procs"), []byte(strconv.Itoa(p.Pid())), 0))
	require.False(t, n.h.Contains(p.Pid(), cgroups.CPU, n.h.ContainerRelDir(id)))

	deadline := time.Now().Add(10 * time.Second)
	for !n.h.Contains(p.Pid(), cgroups.CPU, n.h.ContainerRelDir(id)) && time.Now().Before(deadline) {
		a.Scan() // the NM list is asked at most once a short interval
		time.Sleep(20 * time.Millisecond)
	}
	for _, ctrl := range leafControllers(n.h) {
		require.True(t, n.h.Contains(p.Pid(), ctrl, n.h.ContainerRelDir(id)), "in its own %s cgroup after the next scan", ctrl)
	}
}

// TestRealKernelHalfMovedElsewhereStays: a process of container A found
// half moved into the cgroup koordlet made for container B is not moved
// into A's (nor further into B's): only the move that was begun for it is
// finished.
func TestRealKernelHalfMovedElsewhereStays(t *testing.T) {
	n := newNode(t)
	if n.v2 {
		t.Skip("one unified hierarchy: a move is one write, nothing is half moved")
	}
	a := n.adopter(t, true)
	idA, idB := containerName(2), containerName(3)
	n.nm.add(idA)
	n.nm.add(idB)
	p := n.launch(t, idA, "exec sleep 3600")
	_, err := ensureLeaf(n.h, idB, nil)
	require.NoError(t, err)
	memB := n.h.AbsDir(cgroups.Memory, n.h.ContainerRelDir(idB))
	require.NoError(t, os.WriteFile(filepath.Join(memB, "cgroup.procs"), []byte(strconv.Itoa(p.Pid())), 0))
	a.Scan()
	a.Scan()
	require.True(t, n.h.Contains(p.Pid(), cgroups.Memory, n.h.ContainerRelDir(idB)))
	require.True(t, n.h.Contains(p.Pid(), cgroups.CPU, n.pod+"/nm"), "its cpu cgroup is still the pod's")
	require.Equal(t, 0, a.Status().Containers[idA].ProcessesMoved)
}
