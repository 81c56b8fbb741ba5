package cgroups

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// status renders a /proc/<pid>/status with the given Rss* values in kB.
func status(anonKB, fileKB, shmemKB int64) string {
	return fmt.Sprintf("Name:\tjava\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t42\nPid:\t42\nVmPeak:\t 9000000 kB\nVmSize:\t 9000000 kB\nVmHWM:\t 5000 kB\nVmRSS:\t %d kB\n"+
		"RssAnon:\t %d kB\nRssFile:\t %d kB\nRssShmem:\t %d kB\nVmData:\t 100 kB\nThreads:\t40\n", anonKB+fileKB+shmemKB, anonKB, fileKB, shmemKB)
}

func TestParseStatusRss(t *testing.T) {
	for _, tc := range []struct {
		name               string
		content            string
		anon, file, shmem  int64
		wantErr, wantNoRss bool
	}{
		{"process", status(1024, 300, 2), 1024 << 10, 300 << 10, 2 << 10, false, false},
		{"zero", status(0, 0, 0), 0, 0, 0, false, false},
		{"zombie: no Rss lines", "Name:\tjava\nState:\tZ (zombie)\nTgid:\t42\nThreads:\t1\n", 0, 0, 0, true, true},
		{"kernel before 4.5: VmRSS only", "Name:\tjava\nVmRSS:\t 100 kB\n", 0, 0, 0, true, true},
		{"no unit", "RssAnon:\t 1\nRssFile:\t 1 kB\nRssShmem:\t 1 kB\n", 0, 0, 0, true, false},
		{"negative", "RssAnon:\t -1 kB\nRssFile:\t 1 kB\nRssShmem:\t 1 kB\n", 0, 0, 0, true, false},
		{"no trailing newline", "RssAnon:\t 4 kB\nRssFile:\t 5 kB\nRssShmem:\t 6 kB", 4 << 10, 5 << 10, 6 << 10, false, false},
		{"unknown Rss line ignored", "RssHuge:\t 9 kB\nRssAnon:\t 4 kB\nRssFile:\t 5 kB\nRssShmem:\t 6 kB\n", 4 << 10, 5 << 10, 6 << 10, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			anon, file, shmem, err := parseStatusRss([]byte(tc.content))
			if tc.wantErr {
				require.Error(t, err)
				assert.Equal(t, tc.wantNoRss, err == errNoRss)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, [3]int64{tc.anon, tc.file, tc.shmem}, [3]int64{anon, file, shmem})
		})
	}
}

func TestCgroupsMemoryAccounting(t *testing.T) {
	own := Ref{Dir: "hadoop-yarn/container_x", Owned: true}
	nm := Ref{Dir: "kubepods/besteffort/pod1/nm"}
	for _, tc := range []struct {
		name string
		c    Cgroups
		want MemoryAccounting
	}{
		{"YARN made a memory cgroup", Cgroups{CPU: own, CPUAcct: own, Memory: own}, MemoryByCgroup},
		{"CPU-only YARN: memory charged to the NodeManager pod", Cgroups{CPU: own, CPUAcct: own, Memory: nm}, MemoryByProcesses},
		{"CPU-only YARN, memory not resolved yet", Cgroups{CPU: own}, MemoryByProcesses},
		{"no cgroup of its own", Cgroups{}, MemoryNotMeasured},
		{"only cpuacct (cpu mounted apart, not managed)", Cgroups{CPUAcct: own, Memory: nm}, MemoryNotMeasured},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.c.MemoryAccounting())
		})
	}
}

// fakePidfds stands in for pidfd_open/pidfd_send_signal on a fake /proc:
// pids in gone fail to open (ESRCH); pids in dies are alive at the open
// and dead at the liveness check. opened counts the pins per pid.
type fakePidfds struct {
	gone, dies map[int]bool
	opened     map[int]int
}

func (f fakePidfds) install(r *ProcessMemoryReader) {
	dead := map[int]bool{} // by descriptor
	r.pidfdOpen = func(pid int) (int, error) {
		if f.opened != nil {
			f.opened[pid]++
		}
		if f.gone[pid] {
			return -1, syscall.ESRCH
		}
		// A real descriptor for Close: any open file will do.
		fd, err := syscall.Open("/dev/null", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return -1, err
		}
		if f.dies[pid] {
			dead[fd] = true
		} else {
			delete(dead, fd)
		}
		return fd, nil
	}
	r.pidfdLive = func(fd int) bool { return !dead[fd] }
}

// TestProcessMemoryReaderFakeProc: the container's memory is the sum over
// the processes its cgroup lists whose /proc/<pid>/cgroup puts them in it;
// a process in another cgroup, one gone before it is pinned, one exiting
// during the read and a zombie are not counted. The status descriptors of
// the processes counted are kept and re-read while the cgroup lists them.
func TestProcessMemoryReaderFakeProc(t *testing.T) {
	n := newFakeNode(t, false, system.Cgroupfs)
	name := "container_e17_1700000000000_0042_01_000002"
	dir := n.h.ContainerRelDir(name)
	n.container(name, []int{100, 101, 102, 103, 104, 105}, CPU, CPUAcct)
	in := fmt.Sprintf("4:cpu,cpuacct:/%s\n3:memory:/kubepods/besteffort/pod1/nm\n", dir)
	for pid, st := range map[int]string{
		100: status(100<<10, 20<<10, 0),  // the JVM: 100 MiB anon, 20 MiB file
		101: status(1<<10, 2<<10, 3<<10), // the launcher shell, with a little shm
		103: status(999<<10, 0, 0),       // exits between the open and the check
		104: status(500<<10, 0, 0),       // another container's
		105: "Name:\tjava\nState:\tZ (zombie)\n",
	} {
		n.helper.WriteProcSubFileContents(filepath.Join(strconv.Itoa(pid), "status"), st)
		n.proc(pid, in)
	}
	n.proc(104, fmt.Sprintf("4:cpu,cpuacct:/%s/container_e17_1700000000000_0042_01_000003\n", n.h.Dir))
	// 102 has no /proc entry: gone before it was pinned.

	r := NewProcessMemoryReader(n.h)
	pins := fakePidfds{gone: map[int]bool{102: true}, dies: map[int]bool{103: true}, opened: map[int]int{}}
	pins.install(r)
	m, err := r.Read(CPU, dir)
	require.NoError(t, err)
	assert.Equal(t, ProcessMemory{Anon: 101 << 20, File: 22 << 20, Shmem: 3 << 20, Processes: 2, Gone: 3, Elsewhere: 1}, m)
	assert.Equal(t, int64(104<<20), m.Usage(), "RssAnon + RssShmem")
	assert.Equal(t, int64(126<<20), m.UsageWithPageCache(), "+ RssFile")
	assert.Equal(t, 2, r.OpenFiles(), "the status of the two processes counted is kept open")

	// The JVM grows; the launcher is no longer listed (exited). The JVM's
	// kept status is re-read without pinning it again; the launcher's is
	// closed.
	n.helper.WriteProcSubFileContents("100/status", status(150<<10, 20<<10, 0))
	n.container(name, []int{100}, CPU, CPUAcct)
	m, err = r.Read(CPU, dir)
	require.NoError(t, err)
	assert.Equal(t, ProcessMemory{Anon: 150 << 20, File: 20 << 20, Processes: 1}, m)
	assert.Equal(t, 1, pins.opened[100], "pinned once")
	assert.Equal(t, 1, r.OpenFiles())

	// Another container's descriptors are its own; Forget closes them.
	r.Forget("elsewhere")
	assert.Equal(t, 1, r.OpenFiles())
	r.Forget(dir)
	assert.Equal(t, 0, r.OpenFiles())
	n.container(name, []int{100, 101, 102, 103, 104, 105}, CPU, CPUAcct)
	_, err = r.Read(CPU, dir)
	require.NoError(t, err)
	assert.Equal(t, 2, pins.opened[100], "pinned again after Forget")
	r.Close()
	assert.Equal(t, 0, r.OpenFiles())

	// NoKeep: nothing kept, every read pins.
	r = NewProcessMemoryReader(n.h).NoKeep()
	pins.install(r)
	for i := 0; i < 2; i++ {
		m, err = r.Read(CPU, dir)
		require.NoError(t, err)
		assert.Equal(t, 2, m.Processes)
	}
	assert.Equal(t, 0, r.OpenFiles())
	assert.Equal(t, 4, pins.opened[100])

	// The cgroup gone: an error IsGone recognises.
	require.NoError(t, os.RemoveAll(n.h.AbsDir(CPU, dir)))
	_, err = r.Read(CPU, dir)
	require.Error(t, err)
	assert.True(t, IsGone(err))
}

// TestProcessMemoryReaderBounded: at most MaxMemoryProcesses processes of a
// container are read.
func TestProcessMemoryReaderBounded(t *testing.T) {
	n := newFakeNode(t, false, system.Cgroupfs)
	name := "container_e17_1700000000000_0042_01_000002"
	dir := n.h.ContainerRelDir(name)
	pids := make([]int, MaxMemoryProcesses+10)
	in := fmt.Sprintf("4:cpu:/%s\n", dir)
	for i := range pids {
		pids[i] = 1000 + i
		d := filepath.Join(system.Conf.ProcRootDir, strconv.Itoa(pids[i]))
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "status"), []byte(status(1, 0, 0)), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(d, "cgroup"), []byte(in), 0o644))
	}
	n.container(name, pids, CPU)
	r := NewProcessMemoryReader(n.h)
	fakePidfds{}.install(r)
	m, err := r.Read(CPU, dir)
	require.NoError(t, err)
	assert.True(t, m.Truncated)
	assert.Equal(t, MaxMemoryProcesses, m.Processes)
	assert.Equal(t, int64(MaxMemoryProcesses)<<10, m.Anon)
	assert.Equal(t, MaxMemoryProcesses, r.OpenFiles())

	// Past the descriptor budget, processes are read without keeping.
	r.Close()
	r.maxOpen = 10
	m, err = r.Read(CPU, dir)
	require.NoError(t, err)
	assert.Equal(t, MaxMemoryProcesses, m.Processes)
	assert.Equal(t, 10, r.OpenFiles())
	r.Close()
}

// TestProcessMemoryReaderStartTimePin: without pidfd_open a process is
// pinned by its start time; one whose stat cannot be read is not counted.
func TestProcessMemoryReaderStartTimePin(t *testing.T) {
	n := newFakeNode(t, false, system.Cgroupfs)
	name := "container_e17_1700000000000_0042_01_000002"
	dir := n.h.ContainerRelDir(name)
	n.container(name, []int{200, 201}, CPU)
	for _, pid := range []int{200, 201} {
		n.helper.WriteProcSubFileContents(filepath.Join(strconv.Itoa(pid), "status"), status(10<<10, 0, 0))
		n.proc(pid, fmt.Sprintf("4:cpu:/%s\n", dir))
	}
	n.helper.WriteProcSubFileContents("200/stat", stat(200, "java", 5000))
	r := NewProcessMemoryReader(n.h)
	r.pidfdOpen = func(int) (int, error) { return -1, syscall.ENOSYS }
	m, err := r.Read(CPU, dir)
	require.NoError(t, err)
	assert.Equal(t, ProcessMemory{Anon: 10 << 20, Processes: 1, Gone: 1}, m)
}

// TestProcessMemoryReaderRealKernel: real processes in a real cpu cgroup
// with no memory cgroup of their own. A process that exits after it was
// listed and pinned, and one moved to another cgroup after it was listed,
// are not counted; the others are, with the kernel's own counters.
func TestProcessMemoryReaderRealKernel(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "cpu")
	kerneltest.UseHostRoots(t)
	hier := kerneltest.UniqueRoot(t) + "/hadoop-yarn"
	name := "container_e17_1700000000000_0042_01_000002"
	h := Hierarchy{CgroupRoot: kerneltest.CgroupRoot, ProcRoot: "/proc", Dir: hier,
		NS: NewNamespace("/proc", kerneltest.CgroupRoot, false)}
	dir := h.ContainerRelDir(name)
	own := kerneltest.MakeCgroup(t, "cpu", dir)
	other := kerneltest.MakeCgroup(t, "cpu", hier+"/container_e17_1700000000000_0042_01_000003")

	var procs []*kerneltest.Process
	for i := 0; i < 3; i++ {
		p := kerneltest.Start(t, "exec sleep 3600", own)
		require.NoError(t, p.Release())
		procs = append(procs, p)
	}
	// Settled: sleep's comm is set at its exec, before the dynamic loader
	// maps its libraries; read while it loads, its counters still grow
	// (CI once read 24 KiB of anon where the kernel then said 104 KiB).
	// Wait until each sleeps and its status reads the same twice.
	last := map[int]string{}
	require.Eventually(t, func() bool {
		settled := true
		for _, p := range procs {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
			if err != nil || !strings.Contains(string(b), "Name:\tsleep\n") || !strings.Contains(string(b), "State:\tS") {
				return false
			}
			if last[p.Pid()] != string(b) {
				settled = false
			}
			last[p.Pid()] = string(b)
		}
		return settled
	}, 5*time.Second, 50*time.Millisecond)
	vanish, move := procs[1].Pid(), procs[2].Pid()

	r := NewProcessMemoryReader(h)
	open := r.pidfdOpen
	r.pidfdOpen = func(pid int) (int, error) {
		fd, err := open(pid)
		switch pid {
		case vanish: // exits mid-read, after it was listed and pinned
			_ = procs[1].Cmd.Process.Kill()
			_ = procs[1].Cmd.Wait()
		case move: // leaves for another container's cgroup
			require.NoError(t, os.WriteFile(filepath.Join(other, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644))
		}
		return fd, err
	}
	m, err := r.Read(CPU, dir)
	require.NoError(t, err)
	assert.Equal(t, 1, m.Processes)
	assert.Equal(t, 1, m.Gone)
	assert.Equal(t, 1, m.Elsewhere)

	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", procs[0].Pid()))
	require.NoError(t, err)
	anon, file, shmem, err := parseStatusRss(b)
	require.NoError(t, err)
	assert.InDelta(t, anon, m.Anon, 64<<10, "the kernel's counter for sleep")
	assert.InDelta(t, file, m.File, 256<<10)
	assert.Equal(t, shmem, m.Shmem)
	assert.Positive(t, m.UsageWithPageCache())

	// Read again: the vanished and the moved processes are no longer
	// listed; the survivor's kept status is re-read.
	assert.Equal(t, 1, r.OpenFiles())
	m, err = r.Read(CPU, dir)
	require.NoError(t, err)
	assert.Equal(t, ProcessMemory{Anon: m.Anon, File: m.File, Shmem: m.Shmem, Processes: 1}, m)
	assert.Equal(t, 1, r.OpenFiles())
	r.Close()
}

// TestKeptStatusFailsAfterExit checks on the real kernel what the kept
// status descriptors rely on: a /proc/<pid>/status opened for a process
// reads that process, and fails with ESRCH once it has exited and been
// reaped (its number free for reuse), never reading another process.
func TestKeptStatusFailsAfterExit(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		kerneltest.Skipf(t, "no /proc on this host: %v", err)
	}
	cmd := exec.Command("sleep", "3600")
	require.NoError(t, cmd.Start())
	pid := cmd.Process.Pid
	fd, err := syscall.Open(fmt.Sprintf("/proc/%d/status", pid), syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer syscall.Close(fd)
	r := NewProcessMemoryReader(Hierarchy{ProcRoot: "/proc"})
	_, _, _, err = r.preadStatus(fd)
	require.NoError(t, err)
	_, _, _, err = r.preadStatus(fd)
	require.NoError(t, err, "re-read at offset 0")
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	_, _, _, err = r.preadStatus(fd)
	assert.ErrorIs(t, err, syscall.ESRCH)
}
