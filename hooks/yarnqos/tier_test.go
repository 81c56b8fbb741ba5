package yarnqos

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"

	"github.com/koordlet-yarn/koordlet-yarn/framework/policy"
)

func tierBaseSpec() *slov1alpha1.NodeSLOSpec {
	return &slov1alpha1.NodeSLOSpec{ResourceQOSStrategy: &slov1alpha1.ResourceQOSStrategy{
		BEClass: &slov1alpha1.ResourceQOS{
			CPUQOS: &slov1alpha1.CPUQOSCfg{Enable: ptr.To(true), CPUQOS: slov1alpha1.CPUQOS{GroupIdentity: ptr.To[int64](-1)}},
			MemoryQOS: &slov1alpha1.MemoryQOSCfg{Enable: ptr.To(true), MemoryQOS: slov1alpha1.MemoryQOS{
				MinLimitPercent: ptr.To[int64](0), LowLimitPercent: ptr.To[int64](0), ThrottlingPercent: ptr.To[int64](0)}},
		}}}
}

// TestTierSpec: a tier's CPU and Memory QoS override the BE class's for its
// containers only; fields it leaves unset keep the BE class's value.
func TestTierSpec(t *testing.T) {
	const gi = int64(1) << 30
	tests := []struct {
		name     string
		e        policy.Effective
		wantBVT  int64
		wantMin  int64
		wantHigh int64
		memOn    bool
	}{
		{"no tier: the BE class", policy.Effective{}, -1, 0, 1<<63 - 1, true},
		{"CPU QoS off for a protected tier", policy.Effective{CPUQoS: &policy.CPUQoS{Enable: ptr.To(false)}}, 0, 0, 1<<63 - 1, true},
		{"a gentler Group Identity", policy.Effective{CPUQoS: &policy.CPUQoS{GroupIdentity: ptr.To[int64](0)}}, 0, 0, 1<<63 - 1, true},
		{"memory protected: min 50% of the request, throttled at 80%",
			policy.Effective{MemoryQoS: &policy.MemoryQoS{MinLimitPercent: ptr.To[int64](50), ThrottlingPercent: ptr.To[int64](80)}},
			-1, gi / 2, (gi + 3*gi*80/100) / 4096 * 4096, true},
		{"memory QoS off for the tier", policy.Effective{MemoryQoS: &policy.MemoryQoS{Enable: ptr.To(false)}}, -1, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := tierBaseSpec()
			spec := TierSpec(base, tt.e)
			assert.Equal(t, tt.wantBVT, CPURuleOf(spec).BVT)
			v, on := MemoryValuesOf(spec, gi, 4*gi, 8*gi)
			require.Equal(t, tt.memOn, on)
			if on {
				assert.Equal(t, tt.wantMin, *v.Min)
				assert.Equal(t, tt.wantHigh, *v.High)
			}
			assert.Equal(t, tierBaseSpec(), base, "the NodeSLO spec itself is not changed")
		})
	}
	assert.Nil(t, TierSpec(nil, policy.Effective{CPUQoS: &policy.CPUQoS{Enable: ptr.To(true)}}))
}
