package colocation

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	apiext "github.com/koordinator-sh/koordinator/apis/extension"
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
)

func TestConfigsGatesAndNodeSLO(t *testing.T) {
	th := DefaultThresholds
	for _, c := range []Config{LSAlone, NoQoS} {
		assert.Empty(t, c.KoordletArgs(th), c.String())
		assert.Equal(t, slov1alpha1.NodeSLOSpec{}, c.NodeSLO(th), c.String())
	}
	up := UpstreamBest.KoordletArgs(th)[0]
	assert.Equal(t, "--feature-gates=BECPUSuppress=true,BEMemoryEvict=true", up)
	assert.NotContains(t, up, "YARN", "upstream's best has none of our gates")
	plugin := PluginSet.KoordletArgs(th)[0]
	for _, g := range []string{"YARNCPUQoS", "YARNBECPUSuppress", "YARNBEMemoryEvict", "YARNNodeManagerGuard", "BECPUSuppress", "BEMemoryEvict"} {
		assert.Contains(t, plugin, g+"=true")
	}
	assert.NotContains(t, plugin, "CPUEvict")
	assert.Nil(t, PluginSet.NodeSLO(th).ResourceUsedThresholdWithBE.CPUEvictBESatisfactionLowerPercent)
	withEvict := th
	withEvict.PluginCPUEvict = true
	assert.Contains(t, PluginSet.KoordletArgs(withEvict)[0], ",BECPUEvict=true,YARNBECPUEvict=true")
	assert.NotContains(t, UpstreamBest.KoordletArgs(withEvict)[0], "CPUEvict")
	assert.Equal(t, int64(40), *PluginSet.NodeSLO(withEvict).ResourceUsedThresholdWithBE.CPUEvictBESatisfactionLowerPercent)

	u, p := UpstreamBest.NodeSLO(th), PluginSet.NodeSLO(th)
	for _, s := range []slov1alpha1.NodeSLOSpec{u, p} {
		assert.Len(t, s.HostApplications, 1)
		app := s.HostApplications[0]
		assert.Equal(t, apiext.QoSBE, app.QoS)
		assert.Equal(t, slov1alpha1.CgroupBaseTypeKubeBesteffort, app.CgroupPath.Base)
		assert.True(t, strings.HasPrefix(app.CgroupPath.RelativePath, "hadoop-yarn"))
		assert.Equal(t, slov1alpha1.CPUCfsQuotaPolicy, s.ResourceUsedThresholdWithBE.CPUSuppressPolicy)
		assert.Equal(t, int64(70), *s.ResourceUsedThresholdWithBE.MemoryEvictThresholdPercent)
	}
	assert.Equal(t, int64(65), *u.ResourceUsedThresholdWithBE.CPUSuppressThresholdPercent)
	assert.Equal(t, int64(100), *p.ResourceUsedThresholdWithBE.CPUSuppressThresholdPercent)
	assert.Nil(t, u.ResourceQOSStrategy, "upstream's CPU QoS needs core scheduling or Group Identity, neither on this kernel")
	assert.Equal(t, int64(1), *p.ResourceQOSStrategy.BEClass.CPUQOS.SchedIdle)
	assert.Equal(t, slov1alpha1.CPUQOSPolicyCoreSched, *p.ResourceQOSStrategy.Policies.CPUPolicy)

	onUp := th
	onUp.ControlOnUpstream = true
	onUp.UpstreamCPUSuppressPercent = 70
	args := Controlled.KoordletArgs(onUp)
	assert.Equal(t, "--feature-gates=BECPUSuppress=true,BEMemoryEvict=true,YARNBECPUSuppress=true,YARNInterferenceControl=true", args[0],
		"on upstream's best: its gates, the YARN-aware suppress the controller moves and the controller, nothing else")
	assert.Equal(t, UpstreamBest.NodeSLO(onUp), Controlled.NodeSLO(onUp), "upstream's NodeSLO: its threshold the base, no cpu.idle")
	assert.Equal(t, int64(70), *Controlled.NodeSLO(onUp).ResourceUsedThresholdWithBE.CPUSuppressThresholdPercent)
	assert.Contains(t, Controlled.KoordletArgs(th)[0], "YARNCPUQoS=true", "on the plugin set by default")
	assert.NotNil(t, Controlled.NodeSLO(th).ResourceQOSStrategy)
}

func TestSLOControlledConfig(t *testing.T) {
	for _, onUpstream := range []bool{true, false} {
		th := DefaultThresholds
		th.ControlOnUpstream = onUpstream
		th.InterferenceTarget = 100000 // ns: the flags of configuration 5 carry over
		ctl, slo := Controlled.KoordletArgs(th), SLOControlled.KoordletArgs(th)
		assert.Equal(t, ctl[0]+",YARNLSSLOControl=true,YARNSuppressLSPeak=true", slo[0], "configuration 5's gates and the SLO's")
		assert.Equal(t, ctl[1:], slo[1:], "configuration 5's other flags")
		assert.Equal(t, Controlled.NodeSLO(th), SLOControlled.NodeSLO(th), "configuration 5's NodeSLO")
		assert.NotContains(t, ctl[0], "SLO", "configuration 5 without the SLO")
	}
	assert.True(t, SLOControlled.Batch())
	assert.Equal(t, "6 + YARN, SLO control", SLOControlled.String())
}
