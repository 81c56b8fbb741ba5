package yarninformer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// BenchmarkResync measures one full resync (NM request over loopback, JSON
// decode, cgroup scan with pid reads and /proc resolution, store merge) on a
// fake root holding n YARN containers. Target at 1,000: < 20 ms and < 2 MB
// allocated per resync.
func BenchmarkResync(b *testing.B) {
	for _, tc := range []struct {
		n     int
		ctrls []string
	}{
		{100, []string{"cpu", "cpuacct", "memory"}},
		{1000, []string{"cpu", "cpuacct", "memory"}},
		// cpu only: every other controller is resolved from /proc/<pid>/cgroup.
		{1000, []string{"cpu"}},
	} {
		b.Run(fmt.Sprintf("containers=%d/owned=%d", tc.n, len(tc.ctrls)), func(b *testing.B) {
			benchResync(b, tc.n, tc.ctrls)
		})
	}
}

func benchResync(b *testing.B, n int, ctrls []string) {
	root := newFakeRoot(&testing.T{})
	defer root.helper.Cleanup()
	nm := newFakeNM(&testing.T{})
	defer nm.srv.Close()
	p, st := resyncFixture(b, root, nm, n, ctrls)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p.Resync(context.Background())
	}
	b.StopTimer()
	if st.Len() != n || p.Status().NMError != "" {
		b.Fatalf("store has %d containers, NM error %q", st.Len(), p.Status().NMError)
	}
}

// resyncFixture fills root with n container cgroups (owned in ctrls, two
// processes each, the first with a /proc/<pid>/cgroup) and nm with their
// entries, and returns a plugin after its first resync, which added them.
func resyncFixture(tb testing.TB, root *fakeRoot, nm *fakeNM, n int, ctrls []string) (*Plugin, *store.Store) {

	entries := make([]string, 0, n)
	for i := 0; i < n; i++ {
		id := yarn.ContainerID{Epoch: 17, ClusterTimestamp: 1700000000000, AppID: int64(1 + i/50), AttemptID: 1, Sequence: int64(1 + i%50)}
		name := id.String()
		pid := 10000 + 2*i
		for _, ctrl := range ctrls {
			dir := filepath.Join(root.helper.TempDir, ctrl, root.yarn, name)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				tb.Fatal(err)
			}
			procs := strconv.Itoa(pid) + "\n" + strconv.Itoa(pid+1) + "\n"
			if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(procs), 0o644); err != nil {
				tb.Fatal(err)
			}
		}
		procCgroup := ""
		for i, ctrl := range []string{"cpu", "cpuacct", "cpuset", "memory", "blkio"} {
			dir := "kubepods/besteffort/podnm/nm"
			if slices.Contains(ctrls, ctrl) {
				dir = root.yarn + "/" + name
			}
			procCgroup += strconv.Itoa(i+1) + ":" + ctrl + ":/" + dir + "\n"
		}
		root.helper.WriteProcSubFileContents(filepath.Join(strconv.Itoa(pid), "cgroup"), procCgroup)
		entries = append(entries, nmEntry(name, "RUNNING", 4096, 2))
	}
	nm.body.Store(nmBytes(entries...))

	cfg := testConfig(nm.srv.URL)
	cfg.NMTimeout = 10 * time.Second
	st := store.New()
	p := New(cfg, st, nil)
	p.Setup(nil, nil)
	if s := p.Resync(context.Background()); s.Added != n {
		tb.Fatalf("first resync added %d, want %d (status %+v)", s.Added, n, p.Status())
	}
	return p, st
}
