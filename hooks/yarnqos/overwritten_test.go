package yarnqos

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
)

func TestSameMemoryValue(t *testing.T) {
	page := int64(system.PageSize)
	for _, tc := range []struct {
		held, written string
		same          bool
	}{
		{"max", "max", true},
		{"0", "0", true},
		{fmt.Sprint(10 * page), fmt.Sprint(10*page + 100), true}, // the kernel keeps pages
		{fmt.Sprint(9 * page), fmt.Sprint(10*page + 100), false},
		{"1932735283", "214745088", false}, // YARN's 90% over koordlet's 20%
		{"max", "214745088", false},
		{"214745088", "max", false},
	} {
		assert.Equal(t, tc.same, sameMemoryValue(tc.held, tc.written), "%s held, %s written", tc.held, tc.written)
	}
}

// TestMemoryQoSHoldsAfterYARNWrites: Hadoop 3.5's memory handler (with
// yarn.nodemanager.resource.memory.enforced) writes memory.low, 90% of a
// GUARANTEED container's memory, at the launch and at every container
// update. With the BE class's Memory QoS on, the next apply writes
// koordlet's value back at once (the executor's cache would have skipped
// it for 60 s), and withdrawing Memory QoS gives back YARN's value from
// before koordlet's first write.
func TestMemoryQoSHoldsAfterYARNWrites(t *testing.T) {
	for _, v2 := range []bool{true, false} {
		t.Run(fmt.Sprintf("v2=%v", v2), func(t *testing.T) {
			gates(t, string(features.YARNMemoryQoS))
			spec := beSpec(slov1alpha1.CPUQOSPolicyGroupIdentity)
			mq := &spec.ResourceQOSStrategy.BEClass.MemoryQOS.MemoryQOS
			mq.MinLimitPercent, mq.LowLimitPercent = ptr.To[int64](10), ptr.To[int64](20)
			helper, _, a, c := fakeNode(t, v2, spec)
			dir := c.Cgroups[cgroups.Memory].Dir
			files := []system.Resource{system.MemoryMin, system.MemoryLow, system.MemoryHigh}
			limit := system.MemoryLimit
			if v2 {
				files = []system.Resource{system.MemoryMinV2, system.MemoryLowV2, system.MemoryHighV2}
				limit = system.MemoryLimitV2
			}
			helper.SetResourcesSupported(true, files...)
			const request = int64(2) << 30
			yarnLow := fmt.Sprint(request * 90 / 100 &^ (int64(system.PageSize) - 1))
			helper.WriteCgroupFileContents(dir, limit, "4294967296")
			for _, f := range files {
				helper.WriteCgroupFileContents("kubepods", f, "0")
				helper.WriteCgroupFileContents(dir, f, "0")
			}
			helper.WriteCgroupFileContents(dir, files[1], yarnLow) // YARN's, at the launch
			low := func() string { return helper.ReadCgroupFileContents(dir, files[1]) }
			want := fmt.Sprint(request * 20 / 100)

			assert.Positive(t, a.Apply(c))
			assert.Equal(t, want, low(), "koordlet's memory.low from the BE class")
			assert.Equal(t, 0, a.ReconcileAll(), "nothing changed: nothing written")

			helper.WriteCgroupFileContents(dir, files[1], yarnLow) // YARN's, at a container update
			assert.Equal(t, 1, a.ReconcileAll(), "YARN's rewrite is written back at the next apply")
			assert.Equal(t, want, low())
			assert.Equal(t, 0, a.ReconcileAll())

			// Withdrawn: YARN's own value comes back.
			mq.LowLimitPercent, mq.MinLimitPercent = nil, nil
			spec.ResourceQOSStrategy.BEClass.MemoryQOS.Enable = ptr.To(false)
			a.ReconcileAll()
			assert.Equal(t, yarnLow, low(), "withdrawn: the value YARN had before koordlet's first write")
		})
	}
}
