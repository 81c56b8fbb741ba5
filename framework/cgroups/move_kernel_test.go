package cgroups

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// TestRealKernelMoveUndoAndFinish (issue 31 item 3) on this v1 host, with a
// process and cgroups the test makes: a failed second write (cpu) leaves
// the process whole where it was (the memory write undone); a half move
// (memory written, cpu not: a koordlet that died between the writes) is
// finished by the next Move.
func TestRealKernelMoveUndoAndFinish(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "memory", "cpu", "cpuacct")
	top := kerneltest.UniqueRoot(t) + "-mover"
	from, to := top+"/from", top+"/to"
	ctrls := []Controller{Memory, CPU, CPUAcct}
	var fromAbs []string
	for _, c := range ctrls {
		fromAbs = append(fromAbs, kerneltest.MakeCgroup(t, c.String(), from))
		kerneltest.MakeCgroup(t, c.String(), to)
	}
	proc := kerneltest.Start(t, "exec sleep 3600", fromAbs...)
	require.NoError(t, proc.Release())
	h := Hierarchy{CgroupRoot: kerneltest.CgroupRoot, ProcRoot: "/proc"}
	var steps []Step
	for _, c := range ctrls {
		steps = append(steps, Step{Ctrl: c, From: from, To: to})
	}
	where := func() []string {
		var out []string
		for _, c := range ctrls {
			d, _ := h.PathOf(proc.Pid(), c)
			out = append(out, d)
		}
		return out
	}
	p, err := Pin(h.ProcRoot, proc.Pid())
	require.NoError(t, err)
	defer p.Release()
	require.True(t, p.ByPidfd(), "this kernel has pidfd_open")

	cpuTo := h.AbsDir(CPU, to)
	failCPU := func(dir string, pid int) error {
		if filepath.Clean(dir) == cpuTo {
			return unix.EINVAL
		}
		return WriteProcs(dir, pid)
	}
	r, err := Move(h, p, steps, failCPU)
	assert.Equal(t, MoveFailed, r)
	assert.ErrorIs(t, err, unix.EINVAL)
	assert.Equal(t, []string{from, from, from}, where(), "the memory write undone")

	// Half moved by hand, as a koordlet that died between the writes.
	require.NoError(t, WriteProcs(h.AbsDir(Memory, to), proc.Pid()))
	require.Equal(t, []string{to, from, from}, where())
	r, err = Move(h, p, steps, nil)
	require.NoError(t, err)
	assert.Equal(t, MoveMoved, r)
	assert.Equal(t, []string{to, to, to}, where())
}
