package yarnusage

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// waitRSS waits until process pid maps at least mib MiB.
func waitRSS(b *testing.B, pid int, mib int) {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if v, err := kerneltest.RssAnon(pid); err == nil && v >= int64(mib)<<20 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.Fatalf("process %d did not reach %d MiB", pid, mib)
}

// readProcFile opens, reads and closes a procfs file, as a reader does.
func readProcFile(path string, buf []byte) error {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	for {
		n, err := syscall.Read(fd, buf)
		if err != nil || n == 0 {
			return err
		}
	}
}

// BenchmarkProcessMemoryFiles measures one read of each /proc file a
// per-process memory figure can come from, on real processes holding
// 16 MiB, 256 MiB and 2 GiB of touched anonymous memory (4 KiB pages; this
// host's transparent huge pages are madvise-only, as for a default JVM):
// statm and status read the kernel's per-address-space counters (RSS),
// smaps_rollup walks every page table of the process under its mmap lock
// (PSS). Reproduce: make bench BENCH=BenchmarkProcessMemoryFiles PKGS=./collectors/yarnusage
func BenchmarkProcessMemoryFiles(b *testing.B) {
	for _, mib := range []int{16, 256, 2048} {
		pid := kerneltest.StartPlain(b, kerneltest.HelperScript(fmt.Sprintf("alloc=%d", mib)))
		waitRSS(b, pid, mib)
		for _, file := range []string{"statm", "status", "smaps_rollup"} {
			b.Run(fmt.Sprintf("rss=%dMiB/file=%s", mib, file), func(b *testing.B) {
				path := filepath.Join("/proc", strconv.Itoa(pid), file)
				buf := make([]byte, 4096)
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if err := readProcFile(path, buf); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkContainerMemory compares, per container and measurement, the
// two accountings on the same real container (own cpu and memory cgroups,
// one process holding 256 MiB, or a launcher and two such processes):
// memory.stat of its memory cgroup (the collector's kept descriptor) and
// the sum over its processes: cgroup.procs, then per process a re-read of
// its kept status (keep=true, the collector) or a pidfd, /proc/<pid>/cgroup,
// status and the liveness check (keep=false, memory evict). Reproduce:
// make bench BENCH=BenchmarkContainerMemory PKGS=./collectors/yarnusage
func BenchmarkContainerMemory(b *testing.B) {
	kerneltest.RequireCgroupV1(b, "cpu", "memory")
	kerneltest.UseHostRoots(b)
	hier := kerneltest.UniqueRoot(b) + "/hadoop-yarn"
	h := cgroups.Hierarchy{CgroupRoot: kerneltest.CgroupRoot, ProcRoot: "/proc", Dir: hier,
		NS: cgroups.NewNamespace("/proc", kerneltest.CgroupRoot, false)}
	for _, tc := range []struct {
		name, script string
		procs        int
	}{
		{"processes=1", kerneltest.HelperScript("alloc=256"), 1},
		{"processes=3", "(" + kerneltest.HelperScript("alloc=256") + ") & (" + kerneltest.HelperScript("alloc=256") + ") & wait", 3},
	} {
		dir := h.ContainerRelDir(fmt.Sprintf("container_e17_1700000000000_0042_01_%06d", tc.procs+1))
		cpuDir := kerneltest.MakeCgroup(b, "cpu", dir)
		memDir := kerneltest.MakeCgroup(b, "memory", dir)
		p := kerneltest.Start(b, tc.script, cpuDir, memDir)
		if err := p.Release(); err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for len(kerneltest.Pids(cpuDir)) < tc.procs {
			if time.Now().After(deadline) {
				b.Fatalf("%s: %d processes, want %d", tc.name, len(kerneltest.Pids(cpuDir)), tc.procs)
			}
			time.Sleep(20 * time.Millisecond)
		}
		for _, pid := range kerneltest.Pids(cpuDir) {
			st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			if string(st) != "sh\n" {
				waitRSS(b, pid, 256)
			}
		}
		b.Run(tc.name+"/accounting=cgroup", func(b *testing.B) {
			r := cgroups.NewUsageReader(h.CgroupRoot, false)
			defer r.Close()
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := r.MemoryStat(dir); err != nil {
					b.Fatal(err)
				}
			}
		})
		// The collector keeps each process's status open between cycles;
		// memory evict, reading only under pressure, keeps nothing: every
		// read pins and checks each process (the first-sight path).
		for _, keep := range []bool{true, false} {
			b.Run(fmt.Sprintf("%s/accounting=processes/keep=%v", tc.name, keep), func(b *testing.B) {
				r := cgroups.NewProcessMemoryReader(h)
				if !keep {
					r.NoKeep()
				}
				defer r.Close()
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					m, err := r.Read(cgroups.CPU, dir)
					if err != nil || m.Processes != tc.procs {
						b.Fatalf("%+v %v", m, err)
					}
				}
			})
		}
	}
}
