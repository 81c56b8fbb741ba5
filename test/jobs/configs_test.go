package jobs

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gatesOf returns the gates set in args (name → value), failing on a
// gate set twice.
func gatesOf(t *testing.T, args []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	n := 0
	for _, a := range args {
		g, ok := strings.CutPrefix(a, "--feature-gates=")
		if !ok {
			continue
		}
		n++
		for _, kv := range strings.Split(g, ",") {
			k, v, _ := strings.Cut(kv, "=")
			_, dup := out[k]
			require.False(t, dup, "%s set twice", k)
			out[k] = v
		}
	}
	if len(args) > 0 {
		require.Equal(t, 1, n, "one --feature-gates flag: %v", args)
	}
	return out
}

func TestConfigs(t *testing.T) {
	assert.Empty(t, LSAlone.KoordletArgs("127.0.0.1:8088"), "LS alone: koordlet's defaults")
	assert.False(t, LSAlone.Batch())
	assert.False(t, BatchAlone.LS())

	for _, c := range []Config{BatchAlone, UpstreamBest, PluginKill, PluginPreempt, PluginControlled, PluginLadder, PluginSLO} {
		t.Run(c.String(), func(t *testing.T) {
			args := c.KoordletArgs("127.0.0.1:8088")
			gates := gatesOf(t, args)
			assert.Equal(t, "true", gates["YARNBatchLedger"], "capacity from the batch allocatable everywhere batch runs")
			assert.Equal(t, "true", gates["YARNRMNodeResourceSync"])
			assert.Contains(t, args, "--yarn-rm-endpoints=http://127.0.0.1:8088")
			assert.Contains(t, args, "--yarn-rm-sync-interval=5s", "capacity follows the batch allocatable within a phase of a compressed day")
			_, preempt := gates["YARNRMPreemption"]
			assert.Equal(t, c == PluginPreempt || c == PluginControlled || c == PluginLadder || c == PluginSLO, preempt)
			_, relief := gates["YARNMemoryRelief"]
			assert.Equal(t, c == PluginLadder, relief, "memory relief's rungs in the ladder only")
			_, control := gates["YARNInterferenceControl"]
			assert.Equal(t, c == PluginControlled || c == PluginSLO, control, "the SLO steers the interference controller")
			for _, g := range []string{"YARNLSSLOControl", "YARNSuppressLSPeak"} {
				v, on := gates[g]
				assert.Equal(t, c == PluginSLO, on, "%s in the SLO configuration only", g)
				if on {
					assert.Equal(t, "true", v)
				}
			}
			_, kill := gates["YARNBEMemoryEvict"]
			assert.Equal(t, c >= PluginKill, kill, "the plugin set evicts containers")
			if c == UpstreamBest {
				assert.Equal(t, "true", gates["BEMemoryEvict"])
				assert.Equal(t, "true", gates["BECPUSuppress"])
				slo := c.NodeSLO()
				require.NotNil(t, slo.ResourceUsedThresholdWithBE)
				assert.Equal(t, int64(65), *slo.ResourceUsedThresholdWithBE.CPUSuppressThresholdPercent, "Koordinator's default")
				require.Len(t, slo.HostApplications, 1, "the YARN hierarchy a BE host application")
			}
		})
	}
}

func TestSLOConfig(t *testing.T) {
	assert.Equal(t, PluginSLO, Recommended, "the docs recommend the SLO configuration")
	assert.Equal(t, PluginControlled.NodeSLO(), PluginSLO.NodeSLO(), "the SLO moves the controller's threshold on the same NodeSLO")
	slo := PluginSLO.NodeSLO()
	require.NotNil(t, slo.ResourceUsedThresholdWithBE)
	assert.Equal(t, int64(100), *slo.ResourceUsedThresholdWithBE.CPUSuppressThresholdPercent, "the plugin set's static threshold: the base the controller falls back to")
	assert.Equal(t, "slo", PluginSLO.Key())
	assert.Contains(t, AllConfigs, PluginSLO)
}

func TestParseConfigs(t *testing.T) {
	all, err := ParseConfigs("all")
	require.NoError(t, err)
	assert.Equal(t, AllConfigs, all)
	two, err := ParseConfigs("LS alone, upstream's best")
	require.NoError(t, err)
	assert.Equal(t, []Config{LSAlone, UpstreamBest}, two)
	keys, err := ParseConfigs("batch-alone,kill,controlled")
	require.NoError(t, err)
	assert.Equal(t, []Config{BatchAlone, PluginKill, PluginControlled}, keys)
	for _, c := range AllConfigs {
		back, err := ParseConfigs(c.Key())
		require.NoError(t, err)
		assert.Equal(t, []Config{c}, back)
	}
	_, err = ParseConfigs("LS alone,fastest")
	assert.ErrorContains(t, err, `no configuration "fastest"`)
}
