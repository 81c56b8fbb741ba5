package cgroups

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// moveNode is a fake v1 node for Move: a proc root whose cgroup files the
// injected writer updates, and real sleeping processes behind the numbers
// (a pidfd pins a real process).
type moveNode struct {
	t      *testing.T
	h      Hierarchy
	paths  map[int]map[Controller]string
	writes []string
	// fail, when set, is asked before each write (after it is recorded).
	fail func(ctrl Controller, rel string, pid int) error
}

const (
	podDir  = "kubepods/besteffort/podNM/nm"
	leafDir = "hadoop-yarn/container_e17_1700000000000_0042_01_000002"
	lsDir   = "kubepods/burstable/podLS/c1"
)

var moveCtrls = []Controller{Memory, CPU, CPUAcct}

func newMoveNode(t *testing.T) *moveNode {
	root := t.TempDir()
	n := &moveNode{t: t, h: Hierarchy{CgroupRoot: filepath.Join(root, "cg"), ProcRoot: filepath.Join(root, "proc"), Dir: "hadoop-yarn"},
		paths: map[int]map[Controller]string{}}
	return n
}

// task writes the fake /proc/<pid>/{stat,status,cgroup} of a task.
func (n *moveNode) task(pid, tgid, ppid int, start int64, dir string) {
	n.t.Helper()
	d := filepath.Join(n.h.ProcRoot, strconv.Itoa(pid))
	require.NoError(n.t, os.MkdirAll(d, 0o755))
	require.NoError(n.t, os.WriteFile(filepath.Join(d, "stat"), []byte(kerneltest.ProcStat(pid, "java", ppid, start)), 0o644))
	require.NoError(n.t, os.WriteFile(filepath.Join(d, "status"), []byte(fmt.Sprintf("Name:\tjava\nTgid:\t%d\nPid:\t%d\nPPid:\t%d\n", tgid, pid, ppid)), 0o644))
	n.paths[pid] = map[Controller]string{}
	for _, c := range moveCtrls {
		n.paths[pid][c] = dir
	}
	n.flush(pid)
}

func (n *moveNode) flush(pid int) {
	var b strings.Builder
	for i, c := range moveCtrls {
		fmt.Fprintf(&b, "%d:%s:/%s\n", 7-i, c, n.paths[pid][c])
	}
	require.NoError(n.t, os.WriteFile(filepath.Join(n.h.ProcRoot, strconv.Itoa(pid), "cgroup"), []byte(b.String()), 0o644))
}

// write is the injected WriteFunc: it moves the fake task.
func (n *moveNode) write(dir string, pid int) error {
	rel, err := filepath.Rel(n.h.CgroupRoot, dir)
	require.NoError(n.t, err)
	name, rel, _ := strings.Cut(rel, "/")
	c, ok := ParseController(name)
	require.True(n.t, ok, dir)
	n.writes = append(n.writes, fmt.Sprintf("%s:%s", c, rel))
	if n.fail != nil {
		if err := n.fail(c, rel, pid); err != nil {
			return err
		}
	}
	if _, ok := n.paths[pid]; !ok {
		return unix.ESRCH
	}
	n.paths[pid][c] = rel
	n.flush(pid)
	return nil
}

func (n *moveNode) where(pid int) []string {
	var out []string
	for _, c := range moveCtrls {
		out = append(out, n.paths[pid][c])
	}
	return out
}

// sleeper starts a real process that sleeps until the test ends (or it is
// ended by exit).
func sleeper(t *testing.T) (pid int, exit func()) {
	cmd := exec.Command("sleep", "1000")
	require.NoError(t, cmd.Start())
	done := false
	exit = func() {
		if !done {
			done = true
			_ = cmd.Process.Kill()
			_ = cmd.Wait() // reaped: its number is free, its pidfd reports it gone
		}
	}
	t.Cleanup(exit)
	return cmd.Process.Pid, exit
}

func podToLeaf() []Step {
	var s []Step
	for _, c := range moveCtrls {
		s = append(s, Step{Ctrl: c, From: podDir, To: leafDir})
	}
	return s
}

func pinIt(t *testing.T, n *moveNode, pid int) *Pinned {
	p, err := Pin(n.h.ProcRoot, pid)
	require.NoError(t, err)
	t.Cleanup(p.Release)
	return p
}

func TestMoveVerified(t *testing.T) {
	for _, pidfd := range []bool{true, false} {
		t.Run(fmt.Sprintf("pidfd=%t", pidfd), func(t *testing.T) {
			if !pidfd {
				t.Cleanup(SetPidfdOpen(nil))
			}
			n := newMoveNode(t)
			pid, _ := sleeper(t)
			n.task(pid, pid, 1, 500, podDir)
			p := pinIt(t, n, pid)
			assert.Equal(t, pidfd, p.ByPidfd())
			r, err := Move(n.h, p, podToLeaf(), n.write)
			require.NoError(t, err)
			assert.Equal(t, MoveMoved, r)
			assert.Equal(t, []string{"memory:" + leafDir, "cpu:" + leafDir, "cpuacct:" + leafDir}, n.writes)
			assert.Equal(t, []string{leafDir, leafDir, leafDir}, n.where(pid))
		})
	}
}

// TestMoveUndoesAFailedLaterWrite (issue 31 item 3): a failed second write
// (cpu) used to leave the process in the container's memory cgroup and the
// pod's cpu cgroup, where no later check accepted it. It is put back in
// the pod's memory cgroup: whole where it was, tried again at the next pass.
func TestMoveUndoesAFailedLaterWrite(t *testing.T) {
	n := newMoveNode(t)
	pid, _ := sleeper(t)
	n.task(pid, pid, 1, 500, podDir)
	p := pinIt(t, n, pid)
	n.fail = func(c Controller, rel string, _ int) error {
		if c == CPU && rel == leafDir {
			return unix.EINVAL
		}
		return nil
	}
	r, err := Move(n.h, p, podToLeaf(), n.write)
	assert.Equal(t, MoveFailed, r)
	require.Error(t, err)
	assert.ErrorIs(t, err, unix.EINVAL)
	assert.Equal(t, []string{"memory:" + leafDir, "cpu:" + leafDir, "memory:" + podDir}, n.writes)
	assert.Equal(t, []string{podDir, podDir, podDir}, n.where(pid), "whole in the pod again")

	// The undo fails too: half moved, and the next pass finishes it.
	n.writes = nil
	n.fail = func(c Controller, rel string, _ int) error {
		if (c == CPU && rel == leafDir) || (c == Memory && rel == podDir) {
			return unix.EBUSY
		}
		return nil
	}
	r, err = Move(n.h, p, podToLeaf(), n.write)
	assert.Equal(t, MoveFailed, r)
	assert.ErrorContains(t, err, "undoing the move in memory failed too")
	assert.Equal(t, []string{leafDir, podDir, podDir}, n.where(pid))
	n.fail, n.writes = nil, nil
	r, err = Move(n.h, p, podToLeaf(), n.write)
	require.NoError(t, err)
	assert.Equal(t, MoveMoved, r)
	assert.Equal(t, []string{"cpu:" + leafDir, "cpuacct:" + leafDir}, n.writes, "only what was left")
	assert.Equal(t, []string{leafDir, leafDir, leafDir}, n.where(pid))
}

// TestMoveFinishesAHalfMove (item 3): a koordlet that died between the
// memory and the cpu write left the process in the container's memory
// cgroup and the pod's cpu cgroup; the next move finishes it.
func TestMoveFinishesAHalfMove(t *testing.T) {
	n := newMoveNode(t)
	pid, _ := sleeper(t)
	n.task(pid, pid, 1, 500, podDir)
	n.paths[pid][Memory] = leafDir
	n.flush(pid)
	p := pinIt(t, n, pid)
	r, err := Move(n.h, p, podToLeaf(), n.write)
	require.NoError(t, err)
	assert.Equal(t, MoveMoved, r)
	assert.Equal(t, []string{"cpu:" + leafDir, "cpuacct:" + leafDir}, n.writes)
	assert.Equal(t, []string{leafDir, leafDir, leafDir}, n.where(pid))
}

func TestMoveNotOwnAndGone(t *testing.T) {
	n := newMoveNode(t)
	pid, exit := sleeper(t)
	n.task(pid, pid, 1, 500, podDir)
	n.paths[pid][CPU] = lsDir
	n.flush(pid)
	p := pinIt(t, n, pid)
	r, err := Move(n.h, p, podToLeaf(), n.write)
	require.NoError(t, err)
	assert.Equal(t, MoveNotOwn, r)
	assert.Empty(t, n.writes)

	n.paths[pid][CPU] = podDir
	n.flush(pid)
	n.fail = func(Controller, string, int) error { exit(); return unix.ESRCH } // it exits at the first write
	r, err = Move(n.h, p, podToLeaf(), n.write)
	require.NoError(t, err)
	assert.Equal(t, MoveGone, r)
}

// TestMoveRevertsAReusedNumberWhereItsTaskWas: the checked process exits
// at the first write and its number is taken by a new task, which the
// writes move. One rule for every mover: the new task goes back where it
// was, i.e. where its creator is (it was made after the check). The
// adopter used to send it to the NodeManager pod's cgroup (move.go: the
// checked process's), taking an LS pod's process into the NM pod.
func TestMoveRevertsAReusedNumberWhereItsTaskWas(t *testing.T) {
	for _, pidfd := range []bool{true, false} {
		for _, tc := range []struct {
			name string
			// the new task: its thread group and its creator's cgroup
			thread     bool
			creatorDir string
			want       string
		}{
			{name: "a process of an LS pod goes back to its parent's cgroup", creatorDir: lsDir, want: lsDir},
			{name: "a thread: its process moved with it, so where the number pointed at the check", thread: true, creatorDir: lsDir, want: podDir},
			{name: "creator unknown: where the number pointed at the check", want: podDir},
			{name: "born in the container's cgroup (a child of its process): stays", creatorDir: leafDir, want: leafDir},
		} {
			t.Run(fmt.Sprintf("pidfd=%t/%s", pidfd, tc.name), func(t *testing.T) {
				if !pidfd {
					t.Cleanup(SetPidfdOpen(nil))
				}
				n := newMoveNode(t)
				pid, exit := sleeper(t)
				n.task(pid, pid, 1, 500, podDir)
				const creator = 4242
				if tc.creatorDir != "" {
					n.task(creator, creator, 1, 100, tc.creatorDir)
				}
				p := pinIt(t, n, pid)
				reused := false
				n.fail = func(c Controller, rel string, id int) error {
					if !reused {
						reused = true
						exit()
						switch {
						case tc.creatorDir == "":
							n.task(id, id, 99999, 900, lsDir) // its creator is gone
						case tc.thread:
							n.task(id, creator, creator, 900, tc.creatorDir) // a new thread of 4242
						default:
							n.task(id, id, creator, 900, tc.creatorDir) // born where its parent is
						}
					}
					if tc.thread && rel == leafDir {
						n.paths[creator][c] = rel // cgroup.procs moves the whole thread group
						n.flush(creator)
					}
					return nil
				}
				r, err := Move(n.h, p, podToLeaf(), n.write)
				require.NoError(t, err)
				if tc.want == leafDir {
					assert.Equal(t, MoveGone, r, "nothing to revert")
				} else {
					assert.Equal(t, MoveReverted, r)
				}
				assert.Equal(t, []string{tc.want, tc.want, tc.want}, n.where(pid))
			})
		}
	}
}

// TestMoveRevertFailureIsReported: a revert that fails is a failed move
// with the error (yarnmemcg's restore dropped it).
func TestMoveRevertFailureIsReported(t *testing.T) {
	n := newMoveNode(t)
	pid, exit := sleeper(t)
	n.task(pid, pid, 1, 500, leafDir)
	n.task(4242, 4242, 1, 100, lsDir)
	p := pinIt(t, n, pid)
	steps := []Step{{Ctrl: Memory, From: leafDir, To: podDir}}
	n.fail = func(c Controller, rel string, id int) error {
		if rel == podDir {
			exit()
			n.task(id, id, 4242, 900, lsDir)
			return nil
		}
		return unix.EACCES // the revert
	}
	r, err := Move(n.h, p, steps, n.write)
	assert.Equal(t, MoveFailed, r)
	assert.ErrorIs(t, err, unix.EACCES)
	assert.ErrorContains(t, err, "was reused")
	assert.ErrorIs(t, err, ErrNotMovedBack)
}

// TestOrigin (was yarnmemcg's TestRevertTarget): where a task that took a
// checked process's number was.
func TestOrigin(t *testing.T) {
	n := newMoveNode(t)
	n.task(150, 150, 1, 100, lsDir)
	n.task(200, 200, 150, 900, leafDir)
	n.task(201, 201, 999, 900, leafDir) // creator gone
	n.task(202, 150, 1, 900, leafDir)   // a thread of 150
	n.task(203, 203, 200, 900, leafDir) // a child of 200, in the leaf
	s := Shift{Place: n.h.Place(Memory, nil), From: podDir, To: leafDir}
	at := func(id int) string { return origin(n.h.ProcRoot, id, s) }
	assert.Equal(t, lsDir, at(200), "its creator's")
	assert.Equal(t, podDir, at(201), "creator unknown: where the checked process was")
	assert.Equal(t, lsDir, at(202), "a thread whose leader was not moved: its leader's")
	assert.Equal(t, leafDir, at(203), "born in the leaf: stays")
	n.task(204, 200, 1, 900, leafDir) // a thread of 200, which is in the leaf
	assert.Equal(t, podDir, at(204), "a thread whose whole process the write moved: where the number pointed")
	perTask := Shift{Place: perTaskPlace{n.h.Place(Memory, nil)}, From: podDir, To: leafDir}
	assert.Equal(t, leafDir, origin(n.h.ProcRoot, 204, perTask), "a write that moves one thread: its leader's group tells")
	assert.Equal(t, 150, Creator(n.h.ProcRoot, 202))
	assert.Equal(t, 150, Creator(n.h.ProcRoot, 200))
}

func TestPinGoneAndRelease(t *testing.T) {
	n := newMoveNode(t)
	_, err := Pin(n.h.ProcRoot, 99999999)
	assert.True(t, errors.Is(err, unix.ESRCH), "%v", err)
	pid, exit := sleeper(t)
	n.task(pid, pid, 1, 500, podDir)
	p := pinIt(t, n, pid)
	assert.True(t, p.Alive())
	assert.False(t, p.Reused())
	exit()
	assert.False(t, p.Alive())
	assert.False(t, p.Reused(), "gone, its fake /proc entry unchanged: the same start time")
	n.task(pid, pid, 1, 900, podDir)
	assert.True(t, p.Reused())
	p.Release()
	p.Release()
	assert.False(t, p.Alive())
}

// TestMoveUndoThatMovedAStrangerRevertsIt (issue 55 item 14): the second
// write fails, the checked process is alive, and the undo puts it back;
// but it exits exactly before the undo's write, and a new task takes its
// number, so the undo's write moves that stranger into the pod's cgroup.
// Move returned MoveGone and left it there. The stranger goes back where
// it was (cgroups.Move's one revert rule: where its creator is) and the
// result says so.
func TestMoveUndoThatMovedAStrangerRevertsIt(t *testing.T) {
	for _, tc := range []struct {
		name       string
		creatorDir string // "" : its creator is gone
		want       string
	}{
		{name: "a process of an LS pod goes back to its parent's cgroup", creatorDir: lsDir, want: lsDir},
		{name: "born in the container's cgroup: back there", creatorDir: leafDir, want: leafDir},
		{name: "creator unknown: where the number pointed at the check", want: podDir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newMoveNode(t)
			pid, exit := sleeper(t)
			n.task(pid, pid, 1, 500, podDir)
			const creator = 4242
			if tc.creatorDir != "" {
				n.task(creator, creator, 1, 100, tc.creatorDir)
			}
			p := pinIt(t, n, pid)
			n.fail = func(c Controller, rel string, id int) error {
				switch {
				case c == CPU && rel == leafDir:
					return unix.EINVAL // the second write fails: undo
				case c == Memory && rel == podDir:
					// The undo's write: the checked process exited after
					// Move found it alive, and a new task took its number.
					exit()
					if tc.creatorDir == "" {
						n.task(id, id, 99999, 900, tc.want)
					} else {
						n.task(id, id, creator, 900, tc.creatorDir)
					}
				}
				return nil
			}
			r, err := Move(n.h, p, podToLeaf(), n.write)
			require.NoError(t, err)
			if tc.want == podDir {
				assert.Equal(t, MoveGone, r, "nothing of the stranger moved")
			} else {
				assert.Equal(t, MoveReverted, r)
			}
			assert.Equal(t, tc.want, n.paths[pid][Memory], "the stranger is where it was")
		})
	}
}

// perTaskPlace is a Place whose writes move one thread (as a resctrl tasks
// file does).
type perTaskPlace struct{ Place }

func (perTaskPlace) Whole() bool { return false }
