package yarnqos

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	mockstatesinformer "github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer/mockstatesinformer"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

func TestWithdrawn(t *testing.T) {
	prior := map[string]string{"memory.low": "0", "memory.high": "max", "memory.min": "0"}
	assert.Equal(t, []string{"memory.high"}, Withdrawn(prior, map[string]bool{"memory.low": true, "memory.min": true}))
	assert.Equal(t, []string{"memory.high", "memory.low", "memory.min"}, Withdrawn(prior, nil))
	assert.Empty(t, Withdrawn(nil, nil))
}

// TestMemoryQoSWithdrawn: Memory QoS on, then off in the NodeSLO: every
// file koordlet wrote gets back the value it held before (here YARN's own
// memory.low), not a default; on again, then a koordlet started with
// YARNMemoryQoS off restores them from the record on the cgroup. The code
// before never withdrew Memory QoS.
func TestMemoryQoSWithdrawn(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("v2=%v", v2), func(t *testing.T) {
			gates(t, string(features.YARNMemoryQoS))
			spec := beSpec(slov1alpha1.CPUQOSPolicyGroupIdentity)
			helper, st, a, c := fakeNode(t, v2, spec)
			si := mockstatesinformer.NewMockStatesInformer(gomock.NewController(t))
			si.EXPECT().GetNodeSLO().DoAndReturn(func() *slov1alpha1.NodeSLO { return &slov1alpha1.NodeSLO{Spec: *spec} }).AnyTimes()
			si.EXPECT().GetNode().Return(&corev1.Node{Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Gi")}}}).AnyTimes()
			a.opts.StatesInformer = func() statesinformer.StatesInformer { return si }
			a.opts.Hierarchy = func() string { return "kubepods/besteffort/hadoop-yarn" }

			dir := c.Cgroups[cgroups.Memory].Dir
			files := []system.Resource{system.MemoryMin, system.MemoryLow, system.MemoryHigh}
			if v2 {
				files = []system.Resource{system.MemoryMinV2, system.MemoryLowV2, system.MemoryHighV2}
				helper.WriteCgroupFileContents(dir, system.MemoryLimitV2, "max")
			} else {
				helper.WriteCgroupFileContents(dir, system.MemoryLimit, "4294967296")
			}
			helper.SetResourcesSupported(true, files...)
			yarnLow := "1887436800" // what YARN's own handler put there (90% of the request)
			before := map[system.Resource]string{files[0]: "0", files[1]: yarnLow, files[2]: "9223372036854771712"}
			if v2 {
				before[files[2]] = "max"
			}
			for f, v := range before {
				helper.WriteCgroupFileContents("kubepods", f, "0")
				helper.WriteCgroupFileContents(dir, f, v)
			}
			read := func() map[system.Resource]string {
				out := map[system.Resource]string{}
				for f := range before {
					out[f] = helper.ReadCgroupFileContents(dir, f)
				}
				return out
			}

			require.Greater(t, a.Apply(c), 0)
			assert.NotEqual(t, before, read(), "Memory QoS written")
			spec.ResourceQOSStrategy.BEClass.MemoryQOS.Enable = ptr.To(false)
			assert.Equal(t, 3, a.ReconcileAll())
			assert.Equal(t, before, read(), "off in the NodeSLO: each file back to what it held")
			assert.Nil(t, readPrior(memoryDir(dir)), "the record goes with the last file")
			assert.Equal(t, 0, a.ReconcileAll())

			spec.ResourceQOSStrategy.BEClass.MemoryQOS.Enable = ptr.To(true)
			require.Greater(t, a.ReconcileAll(), 0)
			assert.NotEqual(t, before, read())
			gates(t) // a koordlet started with the gate off
			off := New(Options{Store: st, StatesInformer: a.opts.StatesInformer, Hierarchy: a.opts.Hierarchy, Interval: time.Hour})
			stop := make(chan struct{})
			t.Cleanup(func() { close(stop) })
			off.executor.Run(stop)
			assert.Equal(t, 3, off.RestoreDisabled())
			assert.Equal(t, before, read(), "restored from the record after a restart")
			_ = store.Container{}
		})
	}
}
