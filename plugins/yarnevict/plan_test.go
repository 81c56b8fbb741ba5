package yarnevict

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordinator-sh/koordinator/apis/extension"

	"github.com/koordlet-yarn/koordlet-yarn/framework/appmeta"
	"github.com/koordlet-yarn/koordlet-yarn/framework/policy"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

const mi = int64(1) << 20

// vic is a victim for the plan tests: container seq, memory in MiB,
// growth in MiB, CPU-seconds spent.
type vic struct {
	seq      int64
	mem      int64
	growth   int64
	request  int64
	cpuSecs  float64
	oppo     bool
	am       bool
	prio     *int64
	evictPod bool
	pod      string
	podPrio  int32
}

func (x vic) victim() Victim {
	if x.pod != "" {
		v := PodVictim(bePod(x.pod, x.podPrio, t0), x.mem*mi, 0)
		v.CPUSeconds = x.cpuSecs
		MarkMemoryCause(&v)
		return v
	}
	exec := yarn.ExecutionGuaranteed
	if x.oppo {
		exec = yarn.ExecutionOpportunistic
	}
	c := ctr(x.seq, exec, t0)
	c.IsAM = x.am
	c.RequestMemoryBytes = x.request * mi
	v := ContainerVictim(c, int64(extension.PriorityBatchValueMin), x.mem*mi, 0)
	if x.prio != nil {
		v.Priority = *x.prio
	}
	v.EvictBeforePods = x.evictPod
	v.MemoryGrowth = x.growth * mi
	v.CPUSeconds = x.cpuSecs
	MarkMemoryCause(&v)
	return v
}

func seqs(vs []Victim) []int64 {
	var out []int64
	for _, v := range vs {
		if v.Container != nil {
			out = append(out, v.Container.ID.Sequence)
		} else {
			out = append(out, -1) // a pod
		}
	}
	return out
}

func TestPlanFewestAndCause(t *testing.T) {
	low := int64(extension.PriorityBatchValueMin - 100)
	tests := []struct {
		name string
		vs   []vic
		need int64 // MiB
		want []int64
	}{
		{"a growing executor among idle ones: the cause, one kill",
			[]vic{{seq: 2, mem: 800}, {seq: 3, mem: 700}, {seq: 4, mem: 600, growth: 500}}, 500, []int64{4}},
		{"an idle OPPORTUNISTIC too small to cover beside a growing GUARANTEED: one kill, the GUARANTEED",
			[]vic{{seq: 2, mem: 200, oppo: true}, {seq: 3, mem: 900, growth: 800}}, 500, []int64{3}},
		{"an idle OPPORTUNISTIC that covers goes first: priority decides",
			[]vic{{seq: 2, mem: 600, oppo: true}, {seq: 3, mem: 900, growth: 800}}, 500, []int64{2}},
		{"one large rather than many small",
			[]vic{{seq: 2, mem: 200}, {seq: 3, mem: 200}, {seq: 4, mem: 200}, {seq: 5, mem: 1000}, {seq: 6, mem: 200}}, 700, []int64{5}},
		{"fewest first: a growing one too small alone is spared for the one that covers",
			[]vic{{seq: 2, mem: 300, growth: 300}, {seq: 3, mem: 800}}, 500, []int64{3}},
		{"among equally few, the least lost work",
			[]vic{{seq: 2, mem: 800, cpuSecs: 1000}, {seq: 3, mem: 800, cpuSecs: 50}, {seq: 4, mem: 800, cpuSecs: 500}}, 500, []int64{3}},
		{"lost work within the same power of two: the rank (newest) decides",
			[]vic{{seq: 2, mem: 800, cpuSecs: 40}, {seq: 3, mem: 800, cpuSecs: 60}}, 500, []int64{3}},
		{"under 10 CPU-s lost work counts as none: the rank (newest) decides",
			[]vic{{seq: 2, mem: 800, cpuSecs: 0.1}, {seq: 3, mem: 800, cpuSecs: 9}}, 500, []int64{3}},
		{"over its request counts as a cause",
			[]vic{{seq: 2, mem: 800, request: 1024}, {seq: 3, mem: 700, request: 512}}, 500, []int64{3}},
		{"two places: the cause first, then the least lost work that still covers",
			[]vic{{seq: 2, mem: 600, growth: 100}, {seq: 3, mem: 500, cpuSecs: 90}, {seq: 4, mem: 500, cpuSecs: 10}, {seq: 5, mem: 450, cpuSecs: 200}}, 1000, []int64{2, 4}},
		{"reach a higher level only as far as needed; a lower victim that helps goes",
			[]vic{{seq: 2, mem: 100, prio: &low}, {seq: 3, mem: 100, prio: &low}, {seq: 4, mem: 1000}, {seq: 5, mem: 900}}, 1050, []int64{3, 4}},
		{"not enough within reach: all of them",
			[]vic{{seq: 2, mem: 100}, {seq: 3, mem: 150}}, 500, []int64{3, 2}},
		{"an AM only when nothing else is left",
			[]vic{{seq: 1, mem: 900, am: true}, {seq: 2, mem: 100}}, 500, []int64{2}},
		{"the AM as the only candidate",
			[]vic{{seq: 1, mem: 900, am: true}}, 500, []int64{1}},
		{"a tier that goes before pods: before a pod of its priority",
			[]vic{{pod: "p", podPrio: extension.PriorityBatchValueMin, mem: 800}, {seq: 2, mem: 800, evictPod: true}}, 500, []int64{2}},
		{"without that tier, the newer pod goes first at the same start",
			[]vic{{pod: "p", podPrio: extension.PriorityBatchValueMin, mem: 800}, {seq: 2, mem: 800}}, 500, []int64{-1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var vs []Victim
			for _, x := range tt.vs {
				vs = append(vs, x.victim())
			}
			Rank(vs, MemoryUsage)
			chosen, covered := PlanProtectingAMs(vs, tt.need*mi, MemoryUsage)
			assert.Equal(t, tt.want, seqs(chosen))
			var sum int64
			for _, v := range chosen {
				sum += v.MemoryUsed
				assert.NotEmpty(t, v.Why)
			}
			assert.Equal(t, sum, covered)
		})
	}
}

// TestPlanIsMinimal checks the fewest-victims property against brute force
// over every subset of small pools.
func TestPlanIsMinimal(t *testing.T) {
	pools := [][]int64{
		{100, 200, 300, 400, 500},
		{50, 50, 50, 50, 900, 10},
		{700, 300, 300, 300, 100},
		{1, 2, 3, 5, 8, 13, 21},
	}
	for _, mems := range pools {
		for need := int64(1); need <= 1000; need += 37 {
			var vs []Victim
			for i, m := range mems {
				vs = append(vs, vic{seq: int64(i + 2), mem: m, growth: int64(i%2) * 100, cpuSecs: float64(m % 7)}.victim())
			}
			Rank(vs, MemoryUsage)
			chosen, covered := Plan(vs, need*mi, MemoryUsage)
			best, total := len(mems)+1, int64(0)
			for _, m := range mems {
				total += m
			}
			for set := 1; set < 1<<len(mems); set++ {
				n, sum := 0, int64(0)
				for i, m := range mems {
					if set&(1<<i) != 0 {
						n++
						sum += m
					}
				}
				if sum >= need && n < best {
					best = n
				}
			}
			if total < need {
				assert.Len(t, chosen, len(mems))
				continue
			}
			require.Len(t, chosen, best, "pool %v need %d", mems, need)
			assert.GreaterOrEqual(t, covered, need*mi)
		}
	}
}

func TestPlanWhy(t *testing.T) {
	vs := []Victim{vic{seq: 2, mem: 800}.victim(), vic{seq: 3, mem: 600, growth: 400, request: 512, cpuSecs: 3.25}.victim()}
	Rank(vs, MemoryUsage)
	chosen, _ := Plan(vs, 500*mi, MemoryUsage)
	require.Len(t, chosen, 1)
	why := chosen[0].Why
	assert.Contains(t, why, "priority 5000 (GUARANTEED)")
	assert.Contains(t, why, "using 600Mi, over its 512Mi request")
	assert.Contains(t, why, "growing: +400Mi in the last 10s")
	assert.Contains(t, why, "3.2 CPU-s of work lost")
	assert.Contains(t, why, "the fewest victims covering the need: 1 of 2 candidates")
}

func TestMarkCause(t *testing.T) {
	v := Victim{MemoryUsed: 100 * mi, MemoryRequest: 200 * mi, MemoryGrowth: GrowingMinBytes - 1}
	MarkMemoryCause(&v)
	assert.False(t, v.Cause, "within its request and not growing")
	v.MemoryGrowth = GrowingMinBytes
	MarkMemoryCause(&v)
	assert.True(t, v.Cause)
	v = Victim{MemoryUsed: 300 * mi}
	MarkMemoryCause(&v)
	assert.False(t, v.Cause, "unknown request is not over it")

	c := Victim{MilliCPUUsed: 1500, MilliCPURequest: 1000}
	MarkCPUCause(&c)
	assert.True(t, c.Cause)
	assert.Equal(t, "using 1500m CPU, over its 1000m request", c.CauseText)
	c.MilliCPUUsed = 900
	MarkCPUCause(&c)
	assert.False(t, c.Cause)
}

// TestApplyPolicy: a policy rule's priority and tier decide a container's
// place against pods and other containers; the ResourceManager's AM wins
// over the sequence rule, not over the node's environment.
func TestApplyPolicy(t *testing.T) {
	p5100 := int64(5100)
	nm := int64(extension.PriorityBatchValueMin)
	transcode := ctr(7, yarn.ExecutionGuaranteed, t0)
	v := ContainerVictim(transcode, nm, 800*mi, 0)
	ApplyPolicy(&v, policy.Resolved{Effective: policy.Effective{Rule: "transcode-first", Tier: "transcode", Priority: &p5100, EvictBeforePods: true},
		AppKnown: true, App: appmeta.App{Queue: "root.transcode"}}, nm)
	assert.Equal(t, int64(5100), v.Priority)
	assert.True(t, v.EvictBeforePods)
	assert.Equal(t, "GUARANTEED, queue root.transcode, policy rule transcode-first, tier transcode", v.Label)

	oppo := ContainerVictim(ctr(8, yarn.ExecutionOpportunistic, t0), nm, 100*mi, 0)
	ApplyPolicy(&oppo, policy.Resolved{}, nm)
	assert.Equal(t, nm-1, oppo.Priority, "no rule: the NodeManager pod's, one less for OPPORTUNISTIC")

	seq1 := ctr(1, yarn.ExecutionGuaranteed, t0)
	am := ContainerVictim(seq1, nm, 100*mi, 0)
	require.True(t, am.IsAM)
	ApplyPolicy(&am, policy.Resolved{AppKnown: true, App: appmeta.App{AMContainer: ctr(9, "", t0).Name}}, nm)
	assert.False(t, am.IsAM, "the RM names another AM (an epoch after an RM restart)")
	seq1.AMSource = store.AMFromEnvironment
	am = ContainerVictim(seq1, nm, 100*mi, 0)
	ApplyPolicy(&am, policy.Resolved{AppKnown: true, App: appmeta.App{AMContainer: ctr(9, "", t0).Name}}, nm)
	assert.True(t, am.IsAM, "the node's environment decided")
}
