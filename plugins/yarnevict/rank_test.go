package yarnevict

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/koordinator-sh/koordinator/apis/extension"

	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func ctr(seq int64, exec string, firstSeen time.Time) *store.Container {
	id := yarn.ContainerID{Epoch: 17, ClusterTimestamp: 1700000000000, AppID: 42, AttemptID: 1, Sequence: seq}
	return &store.Container{Name: id.String(), ID: id, IsAM: id.IsApplicationMaster(), ExecutionType: exec, FirstSeen: firstSeen, Source: store.SourceBoth}
}

func bePod(name string, prio int32, started time.Time) *corev1.Pod {
	st := metav1.NewTime(started)
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{extension.LabelPodQoS: "BE"}},
		Spec: corev1.PodSpec{Priority: &prio}, Status: corev1.PodStatus{StartTime: &st}}
}

func names(vs []Victim) []string {
	var out []string
	for i := range vs {
		out = append(out, vs[i].Name())
	}
	return out
}

func TestRank(t *testing.T) {
	nmPrio := int64(extension.PriorityBatchValueMin)
	am := ContainerVictim(ctr(1, yarn.ExecutionGuaranteed, t0), nmPrio, 900<<20, 0)
	oldExec := ContainerVictim(ctr(2, yarn.ExecutionGuaranteed, t0.Add(time.Minute)), nmPrio, 500<<20, 0)
	newExec := ContainerVictim(ctr(3, yarn.ExecutionGuaranteed, t0.Add(2*time.Minute)), nmPrio, 100<<20, 0)
	oppo := ContainerVictim(ctr(4, yarn.ExecutionOpportunistic, t0), nmPrio, 50<<20, 0)
	freePod := PodVictim(bePod("free", extension.PriorityFreeValueMax, t0), 10<<20, 0)
	batchPodNew := PodVictim(bePod("batch-new", extension.PriorityBatchValueMin, t0.Add(3*time.Minute)), 10<<20, 0)
	sameTimeBig := ContainerVictim(ctr(5, yarn.ExecutionGuaranteed, t0.Add(2*time.Minute)), nmPrio, 300<<20, 0)
	samePodTimeSmall := PodVictim(bePod("same-time-small", extension.PriorityBatchValueMin, t0.Add(2*time.Minute)), 1<<20, 0)
	samePodTimeBig := PodVictim(bePod("same-time-big", extension.PriorityBatchValueMin, t0.Add(2*time.Minute)), 900<<20, 0)

	vs := []Victim{am, oldExec, newExec, oppo, freePod, batchPodNew, sameTimeBig, samePodTimeSmall, samePodTimeBig}
	Rank(vs, MemoryUsage)
	assert.Equal(t, []string{
		"default/free", // lowest priority first (koord-free < koord-batch)
		oppo.Name(),    // OPPORTUNISTIC just below the NM's priority
		"default/batch-new",
		"default/same-time-big", // newest first; same age: pods by larger usage first
		"default/same-time-small",
		sameTimeBig.Name(), // containers seen together: the larger YARN id is newer
		newExec.Name(),
		oldExec.Name(),
		am.Name(), // the AM last, even though it is the largest
	}, names(vs))
}

func TestPlan(t *testing.T) {
	mk := func(mem ...int64) []Victim {
		var vs []Victim
		for i, m := range mem {
			vs = append(vs, ContainerVictim(ctr(int64(i+2), yarn.ExecutionGuaranteed, t0), 5000, m, 0))
		}
		return vs
	}
	tests := []struct {
		name      string
		mem       []Victim
		need      int64
		wantN     int
		wantCover int64
	}{
		{"first covers", mk(300, 200, 100), 250, 1, 300},
		// The fewest victims: one of 300 rather than 100 and 200 (before
		// issue 13 the plan took victims in ranked order: two).
		{"one covers where two in ranked order would", mk(100, 200, 300), 250, 1, 300},
		{"exact", mk(100, 150), 250, 2, 250},
		{"not enough: take all", mk(100, 50), 500, 2, 150},
		{"zero usage skipped", mk(0, 400), 100, 1, 400},
		{"nothing needed", mk(100), 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chosen, covered := Plan(tt.mem, tt.need, MemoryUsage)
			assert.Len(t, chosen, tt.wantN)
			assert.Equal(t, tt.wantCover, covered)
		})
	}
}

func TestNeedToRelease(t *testing.T) {
	const gi = int64(1) << 30
	assert.Equal(t, int64(0), NeedToRelease(6*gi, 10*gi, 70, 68), "below threshold")
	assert.Equal(t, 7*gi-gi*68/10, NeedToRelease(7*gi, 10*gi, 70, 68), "at threshold: down to lower")
	assert.Equal(t, 8*gi-gi*68/10, NeedToRelease(8*gi, 10*gi, 70, 68))
	assert.Equal(t, int64(0), NeedToRelease(8*gi, 0, 70, 68), "unknown capacity")
}

func TestPlanProtectingAMs(t *testing.T) {
	am := ContainerVictim(ctr(1, yarn.ExecutionGuaranteed, t0), 5000, 900, 0)
	ex := ContainerVictim(ctr(2, yarn.ExecutionGuaranteed, t0), 5000, 100, 0)
	ranked := []Victim{ex, am}
	chosen, covered := PlanProtectingAMs(ranked, 500, MemoryUsage)
	assert.Equal(t, []string{ex.Name()}, names(chosen), "the AM is spared while another victim exists, even short of the need")
	assert.Equal(t, int64(100), covered)
	chosen, _ = PlanProtectingAMs([]Victim{am}, 500, MemoryUsage)
	assert.Equal(t, []string{am.Name()}, names(chosen), "the last resort")
}

// TestRankUsesProcessStartTime: after a koordlet restart every container's
// first-seen time is the restart; a container whose oldest process started
// before a BE pod of the same priority is older than that pod and goes after
// it. Without a readable start time, first seen still decides.
func TestRankUsesProcessStartTime(t *testing.T) {
	nmPrio := int64(extension.PriorityBatchValueMin)
	restart := t0.Add(time.Hour)
	pod := PodVictim(bePod("pod", extension.PriorityBatchValueMin, t0.Add(10*time.Minute)), 1<<20, 0)
	tests := []struct {
		name    string
		started time.Time
		want    []string
	}{
		{"started before the pod", t0, []string{"default/pod", "container"}},
		{"started after the pod", t0.Add(20 * time.Minute), []string{"container", "default/pod"}},
		{"start time unknown: first seen", time.Time{}, []string{"container", "default/pod"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ctr(2, yarn.ExecutionGuaranteed, restart)
			c.Started = tt.started
			ct := ContainerVictim(c, nmPrio, 900<<20, 0)
			vs := []Victim{ct, pod}
			Rank(vs, MemoryUsage)
			got := names(vs)
			for i := range got {
				if got[i] == c.Name {
					got[i] = "container"
				}
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestThresholdLevel: the event trigger's level is exactly where
// NeedToRelease starts to ask for a release.
func TestThresholdLevel(t *testing.T) {
	for _, capacity := range []int64{10 << 30, 24683656 << 10, 999, 12345678901} {
		for _, threshold := range []int64{1, 50, 70, 99} {
			level := ThresholdLevel(capacity, threshold)
			assert.Zero(t, NeedToRelease(level-1, capacity, threshold, threshold-1), "capacity %d threshold %d", capacity, threshold)
			assert.Positive(t, NeedToRelease(level, capacity, threshold, threshold-1), "capacity %d threshold %d", capacity, threshold)
		}
	}
}
