package cgroupwatch

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

func TestMain(m *testing.M) {
	if err := features.Register(); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// TestRealKernelWatcher: with each source forced, a new container cgroup
// with a real process reaches the store (with its pid) within a second,
// without any resync, and its removal too.
func TestRealKernelWatcher(t *testing.T) {
	for _, src := range []Source{SourceEBPF, SourceInotify} {
		t.Run(string(src), func(t *testing.T) {
			kerneltest.RequireCgroupV1(t, "cpu")
			top := kerneltest.UniqueRoot(t)
			root := kerneltest.MakeCgroup(t, "cpu", top+"/hadoop-yarn")
			h := cgroups.Hierarchy{CgroupRoot: kerneltest.CgroupRoot, ProcRoot: "/proc", Dir: top + "/hadoop-yarn"}
			st := store.New()
			added := make(chan *store.Container, 16)
			removed := make(chan string, 16)
			st.Subscribe("t", func(ev store.Event) {
				switch {
				case ev.Type == store.Removed:
					removed <- ev.Container.Name
				case len(ev.Container.Pids) > 0:
					added <- ev.Container
				}
			})
			w := New(Options{Store: st, Force: src, ResyncInterval: time.Hour,
				Hierarchy: func() (cgroups.Hierarchy, bool) { return h, true }})
			stop := make(chan struct{})
			defer close(stop)
			w.Run(stop)
			require.Eventually(t, func() bool { return w.Active() != "" }, 5*time.Second, 10*time.Millisecond)
			if w.Active() != src {
				kerneltest.Skipf(t, "real-kernel test: %s is not available here (active: %s)", src, w.Active())
			}

			name := "container_e17_1700000000000_0042_01_000002"
			dir := filepath.Join(root, name)
			require.NoError(t, os.Mkdir(dir, 0o755))
			p := kerneltest.Start(t, "exec sleep 3600", dir)
			require.NoError(t, p.Release())
			select {
			case c := <-added:
				assert.Equal(t, name, c.Name)
				assert.Equal(t, []int{p.Pid()}, c.Pids)
				assert.Equal(t, cgroups.Ref{Dir: h.ContainerRelDir(name), Owned: true}, c.Cgroups[cgroups.CPU])
			case <-time.After(time.Second):
				t.Fatal("the container did not reach the store within a second")
			}
			kerneltest.RemoveCgroupTree(t, dir)
			select {
			case n := <-removed:
				assert.Equal(t, name, n)
			case <-time.After(time.Second):
				t.Fatal("the removal did not reach the store within a second")
			}
		})
	}
}

// TestWatcherFallsBack: with the eBPF gate off the watcher says so and
// uses inotify.
func TestWatcherFallsBack(t *testing.T) {
	require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{string(features.YARNEBPFDiscovery): false}))
	t.Cleanup(func() {
		_ = koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{string(features.YARNEBPFDiscovery): true})
	})
	h := cgroups.Hierarchy{CgroupRoot: t.TempDir(), ProcRoot: "/proc", Dir: "hadoop-yarn"}
	w := New(Options{Store: store.New(), ResyncInterval: time.Hour, Hierarchy: func() (cgroups.Hierarchy, bool) { return h, true }})
	stop := make(chan struct{})
	defer close(stop)
	w.Run(stop)
	require.Eventually(t, func() bool { return w.Active() != "" }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, SourceInotify, w.Active())

	w2 := New(Options{Store: store.New(), Force: SourcePolling, ResyncInterval: time.Hour, Hierarchy: func() (cgroups.Hierarchy, bool) { return h, true }})
	w2.Run(stop)
	require.Eventually(t, func() bool { return w2.Active() != "" }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, SourcePolling, w2.Active())
}
