package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/yarnusage"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

// TestDemoNodeSLO: the demo's NodeSLO carries the host applications the
// docs recommend (read from the repository's deploy file), with which
// koordlet-yarn counts the box's YARN hierarchy as BE, and keeps its BE
// class's sched-idle.
func TestDemoNodeSLO(t *testing.T) {
	prev := system.CgroupPathFormatter
	system.SetupCgroupPathFormatter(system.Cgroupfs) // the box's cgroup names
	t.Cleanup(func() { system.CgroupPathFormatter = prev })

	apps, err := recommendedHostApps("../..")
	require.NoError(t, err)
	var s slov1alpha1.NodeSLOSpec
	acc := yarnusage.CheckAccounting(&slov1alpha1.NodeSLO{Spec: s}, nodebox.YARNHierarchy)
	require.False(t, acc.AsBE, "an empty NodeSLO does not count YARN as BE (the demo's output before issue 36)")

	demoNodeSLO(&s, apps)
	acc = yarnusage.CheckAccounting(&slov1alpha1.NodeSLO{Spec: s}, nodebox.YARNHierarchy)
	assert.True(t, acc.AsBE, "%+v", acc)
	assert.Equal(t, "hadoop-yarn", acc.HostApplication)
	require.NotNil(t, s.ResourceQOSStrategy)
	assert.Equal(t, int64(1), *s.ResourceQOSStrategy.BEClass.CPUQOS.SchedIdle)
	assert.Equal(t, slov1alpha1.CPUQOSPolicyCoreSched, *s.ResourceQOSStrategy.Policies.CPUPolicy)
}

func TestRecommendedHostAppsMissing(t *testing.T) {
	_, err := recommendedHostApps(t.TempDir())
	assert.ErrorContains(t, err, hostAppsFile)
}
