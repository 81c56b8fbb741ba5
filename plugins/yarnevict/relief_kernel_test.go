package yarnevict

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/relief"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// TestReliefSoftLimitRealKernel: on the host's cgroup v1 memory controller
// (a YARN root this test creates), memory relief sets the root's soft
// limit to 0 at its first check (there is no memory.high on v1: no
// throttle, whatever the pressure), the record keeps the own value, and
// with the gate off the restorer gives it back; a stop gives it back too.
func TestReliefSoftLimitRealKernel(t *testing.T) {
	useHostV1Memory(t)
	rel := kerneltest.UniqueRoot(t) + "/hadoop-yarn"
	dir := kerneltest.MakeCgroup(t, "memory", rel)
	read := func() string {
		b, err := os.ReadFile(filepath.Join(dir, "memory.soft_limit_in_bytes"))
		require.NoError(t, err)
		return strings.TrimSpace(string(b))
	}
	own := read()
	on := func(v bool) {
		require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{
			string(features.YARNMemoryRelief): v, string(features.YARNBEMemoryEvict): v, string(koordfeatures.BEMemoryEvict): v}))
	}
	on(true)
	t.Cleanup(func() { on(false) })

	r := &relief.Relief{High: cgroups.NewRootMemoryHigh(), Soft: cgroups.NewRootSoftLimit(), BandPercent: func() int64 { return 5 }}
	const gib = int64(1) << 30
	assert.Zero(t, r.Check(rel, relief.Levels{Used: 30 * gib, Threshold: 20 * gib, Lower: 19 * gib, Capacity: 24 * gib}), "no throttle on v1: never held at a floor")
	assert.Equal(t, "0", read(), "batch's page cache is global reclaim's first")
	assert.Equal(t, 1, r.Pending(rel))
	// A restarted koordlet with the gate off gives the own value back.
	on(false)
	n := (&relief.ReliefRestorer{Relief: &relief.Relief{High: cgroups.NewRootMemoryHigh(), Soft: cgroups.NewRootSoftLimit()},
		Hierarchy: func() string { return rel }}).RestoreDisabled()
	assert.Equal(t, 1, n)
	assert.Equal(t, own, read())
	assert.Equal(t, 0, r.Pending(rel))

	// Gate on again, then a stop that gives everything back.
	on(true)
	r2 := &relief.Relief{High: cgroups.NewRootMemoryHigh(), Soft: cgroups.NewRootSoftLimit(), BandPercent: func() int64 { return 5 }}
	r2.Check(rel, relief.Levels{Used: gib, Threshold: 20 * gib, Lower: 19 * gib, Capacity: 24 * gib})
	assert.Equal(t, "0", read())
	r2.Release("test", true)
	assert.Equal(t, own, read())
	assert.Equal(t, 0, r2.Pending(rel))
}

// TestReliefSoftLimitRootMadeLater: the YARN root's memory directory does
// not exist at relief's first checks (koordlet started before the
// NodeManager made it): nothing is set, and the soft limit is set at the
// first check after it exists; a root made anew (the NodeManager's
// restart) gets it again. koordlet's executor reports a write into a
// missing directory as done: before this, relief took that for set and
// never wrote the root (found by TestV1Guest).
func TestReliefSoftLimitRootMadeLater(t *testing.T) {
	useHostV1Memory(t)
	parent := kerneltest.UniqueRoot(t)
	rel := parent + "/hadoop-yarn"
	dir := filepath.Join(kerneltest.MakeCgroup(t, "memory", parent), "hadoop-yarn")
	t.Cleanup(func() { _ = os.Remove(dir) })
	require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{
		string(features.YARNMemoryRelief): true, string(features.YARNBEMemoryEvict): true, string(koordfeatures.BEMemoryEvict): true}))
	t.Cleanup(func() {
		_ = koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{
			string(features.YARNMemoryRelief): false, string(features.YARNBEMemoryEvict): false, string(koordfeatures.BEMemoryEvict): false})
	})
	read := func() string {
		b, err := os.ReadFile(filepath.Join(dir, "memory.soft_limit_in_bytes"))
		require.NoError(t, err)
		return strings.TrimSpace(string(b))
	}
	const gib = int64(1) << 30
	lv := relief.Levels{Used: gib, Threshold: 20 * gib, Lower: 19 * gib, Capacity: 24 * gib}
	r := &relief.Relief{High: cgroups.NewRootMemoryHigh(), Soft: cgroups.NewRootSoftLimit(), BandPercent: func() int64 { return 5 }}

	r.Check(rel, lv)
	assert.NoDirExists(t, dir, "relief makes no cgroup")
	assert.Equal(t, 0, r.Pending(rel), "nothing set while the root is missing")

	require.NoError(t, os.Mkdir(dir, 0o755))
	own := read()
	r.Check(rel, lv)
	assert.Equal(t, "0", read(), "set at the first check after the root exists")

	require.NoError(t, os.Remove(dir))
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.Equal(t, own, read(), "a root made anew has its own soft limit")
	r.Check(rel, lv)
	assert.Equal(t, "0", read(), "set again on the root made anew")
	r.Release("test", true)
	assert.Equal(t, own, read(), "given back at the stop")
}

// useHostV1Memory points koordlet's cgroup files at this host's real
// cgroup v1 memory controller for the test.
func useHostV1Memory(t *testing.T) {
	t.Helper()
	kerneltest.RequireCgroupV1(t, "memory")
	kerneltest.UseHostRoots(t)
	old := system.UseCgroupsV2.Load()
	system.UseCgroupsV2.Store(false)
	t.Cleanup(func() { system.UseCgroupsV2.Store(old) })
}
