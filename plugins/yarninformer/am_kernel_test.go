package yarninformer

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// TestRealKernelAMFromEnvironment runs one application attempt after a
// work-preserving RM restart as real processes in real container cgroups:
// its AM numbered 000005 (launched with the AMLauncher's markers), an
// executor numbered 000001 with an epoch (only its CONTAINER_ID), and a
// container whose process names another container's id. The store takes
// the AM from the environment where it tells (amSource "environment"),
// keeps the sequence rule for the foreign one, and eviction's ranking puts
// the real AM last and the epoch executor among the ordinary victims.
func TestRealKernelAMFromEnvironment(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "cpu")
	kerneltest.UseHostRoots(t)

	hierarchy := kerneltest.UniqueRoot(t) + "/hadoop-yarn"
	const (
		epochExec = "container_e01_1700000000000_0042_01_000001"
		am        = "container_e01_1700000000000_0042_01_000005"
		foreign   = "container_e01_1700000000000_0043_01_000001"
	)
	markers := []string{"APP_SUBMIT_TIME_ENV=1700000000123", "APPLICATION_WEB_PROXY_BASE=/proxy/application_1700000000000_0042"}
	start := func(name string, env ...string) {
		dir := kerneltest.MakeCgroup(t, "cpu", hierarchy+"/"+name)
		kerneltest.StartEnv(t, env, nil, dir)
	}
	start(epochExec, "CONTAINER_ID="+epochExec, "NM_HOST=node1")
	start(am, append([]string{"CONTAINER_ID=" + am}, markers...)...)
	start(foreign, append([]string{"CONTAINER_ID=" + am}, markers...)...)

	cfg := testConfig("http://127.0.0.1:1") // no NM: the AM is told on the node
	cfg.CgroupHierarchy = hierarchy
	st := store.New()
	p := New(cfg, st, nil)
	p.Setup(nil, nil)
	require.Equal(t, 3, p.Resync(context.Background()).Added)

	for _, tc := range []struct {
		name   string
		isAM   bool
		source store.AMSource
	}{
		{epochExec, false, store.AMFromEnvironment},
		{am, true, store.AMFromEnvironment},
		{foreign, true, store.AMFromSequence}, // its environment is not its own: ignored
	} {
		c, ok := st.Get(tc.name)
		require.True(t, ok, tc.name)
		assert.Equal(t, tc.isAM, c.IsAM, tc.name)
		assert.Equal(t, tc.source, c.AMSource, tc.name)
	}
	c, _ := st.Get(am)
	b, err := json.Marshal(c)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"applicationMaster":true,"amSource":"environment"`, "what /yarn/containers shows")

	// Eviction ranks from the store: the epoch executor is an ordinary
	// victim, the AM numbered 000005 the last resort.
	var vs []yarnevict.Victim
	for _, name := range []string{am, epochExec} {
		c, _ := st.Get(name)
		vs = append(vs, yarnevict.ContainerVictim(c, 0, 1<<30, 1000))
	}
	yarnevict.Rank(vs, func(v *yarnevict.Victim) int64 { return v.MemoryUsed })
	assert.Equal(t, epochExec, vs[0].Container.Name)
	assert.Equal(t, am, vs[1].Container.Name)
	assert.True(t, vs[1].IsAM)
}
