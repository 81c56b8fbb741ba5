package kill

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

func TestMain(m *testing.M) {
	kerneltest.RunHelperIfRequested()
	runCrashingKillerIfRequested()
	runNamespacedKillerIfRequested()
	if err := features.Register(); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// alive reports whether pid runs (a zombie awaiting its parent's wait is dead).
func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil && procState(pid) != "Z"
}

// realContainer makes a YARN container's cpu and memory cgroups under hier
// (v1), with one sleeping process when withProcess.
func realContainer(t *testing.T, hier, name string, withProcess bool) *store.Container {
	dirs := []string{kerneltest.MakeCgroup(t, "cpu", hier+"/"+name), kerneltest.MakeCgroup(t, "memory", hier+"/"+name)}
	c := &store.Container{Name: name, Source: store.SourceBoth, State: "RUNNING",
		Cgroups: cgroups.Cgroups{cgroups.CPU: {Dir: hier + "/" + name, Owned: true}, cgroups.Memory: {Dir: hier + "/" + name, Owned: true}}}
	c.ApplicationID = "application_1700000000000_0042"
	if withProcess {
		p := kerneltest.Start(t, "exec sleep 3600", dirs...)
		require.NoError(t, p.Release())
		require.Eventually(t, func() bool { return len(kerneltest.Pids(dirs[0])) == 1 }, 2*time.Second, 5*time.Millisecond)
		c.Pids = kerneltest.Pids(dirs[0])
	}
	return c
}
