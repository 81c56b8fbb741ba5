package nodemem

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// allocEnv makes the test binary a process that holds that many MiB.
const allocEnv = "NODEMEM_TEST_ALLOC_MIB"

func TestMain(m *testing.M) {
	if v := os.Getenv(allocEnv); v != "" {
		mib, _ := strconv.Atoi(v)
		b := make([]byte, mib<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		fmt.Println("ok")
		time.Sleep(time.Minute)
		b[0]++
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const zoneinfo = `Node 0, zone   Normal
  pages free     12345
        boost    0
        min      16000
  pagesets
    cpu: 0
              count:    111533
              high:     112080
              batch:    63
  vm stats threshold: 72
    cpu: 1
              count:    144825
              high:     145035
              batch:    63
  vm stats threshold: 72
  node_unreclaimable:  0
  start_pfn:           4096
Node 0, zone    DMA32
  pagesets
    cpu: 0
              count:    7
              high:     2080
`

func TestPerCPUFreePages(t *testing.T) {
	assert.Equal(t, int64(111533+144825+7), PerCPUFreePages([]byte(zoneinfo)))
	assert.Zero(t, PerCPUFreePages(nil))
	assert.Zero(t, PerCPUFreePages([]byte("count: x\ncount: -4\n")), "garbage counts nothing")
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "meminfo"), []byte("MemTotal:       24000000 kB\nMemFree:        1000 kB\nMemAvailable:   20000000 kB\n"), 0o644))
	u, err := Read(dir)
	require.NoError(t, err)
	assert.Equal(t, Usage{Total: 24000000 << 10, Available: 20000000 << 10}, u, "no zoneinfo: uncorrected")
	assert.Equal(t, u.KoordletUsed(), u.Used())

	require.NoError(t, os.WriteFile(filepath.Join(dir, "zoneinfo"), []byte(zoneinfo), 0o644))
	u, err = Read(dir)
	require.NoError(t, err)
	pcp := int64(111533+144825+7) * int64(os.Getpagesize())
	assert.Equal(t, pcp, u.PerCPUFree)
	assert.Equal(t, int64(4000000<<10)-pcp, u.Used())
	assert.Equal(t, int64(4000000<<10), u.KoordletUsed())

	require.NoError(t, os.WriteFile(filepath.Join(dir, "meminfo"), []byte("MemTotal: 100 kB\n"), 0o644))
	_, err = Read(dir)
	assert.ErrorContains(t, err, "MemAvailable")
	_, err = Read(filepath.Join(dir, "missing"))
	assert.Error(t, err)
}

// TestFreedMemoryIsSeenAtOnce on the real kernel: after a process holding
// 512 MiB is killed and reaped, Used falls by most of it at once, whatever
// the per-CPU lists keep out of MemAvailable.
func TestFreedMemoryIsSeenAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 512 MiB")
	}
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), allocEnv+"=512")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	buf := make([]byte, 3)
	_, err = out.Read(buf)
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond)
	before, err := Read("/proc")
	require.NoError(t, err)
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	after, err := Read("/proc")
	require.NoError(t, err)
	freed := before.Used() - after.Used()
	t.Logf("killed 512 MiB: Used fell %d MiB, koordlet's usage %d MiB (per-CPU lists %d → %d MiB)",
		freed>>20, (before.KoordletUsed()-after.KoordletUsed())>>20, before.PerCPUFree>>20, after.PerCPUFree>>20)
	assert.Greater(t, freed, int64(400<<20), "the freed memory shows at once")
}

// BenchmarkRead is the cost the memory evictor pays per check for the
// corrected node usage (/proc/meminfo through procfs, /proc/zoneinfo).
func BenchmarkRead(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Read("/proc"); err != nil {
			b.Fatal(err)
		}
	}
}
