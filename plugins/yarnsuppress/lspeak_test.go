package yarnsuppress

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/koordinator-sh/koordinator/apis/extension"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/metriccache"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/helpers"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	mockstatesinformer "github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer/mockstatesinformer"
)

func lsPodMeta(uid string) *statesinformer.PodMeta {
	return &statesinformer.PodMeta{CgroupDir: "kubepods/burstable/pod" + uid, Pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID(uid), Labels: map[string]string{extension.LabelPodQoS: string(extension.QoSLS)}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable}}}
}

// peakRound is one suppress round's samples: the LS pods', the BE pod's
// and the node's CPU usage (cores), at the round's time (after t0), and
// what upstream's formula then computes with: its LS term and its system
// term.
type peakRound struct {
	at                 time.Duration
	ls1, ls2, be, node float64
	wantLS, wantSystem float64
}

// peakNode is a node with two LS pods and a BE pod, its metric cache held
// by an lsPeakCache on a test clock.
type peakNode struct {
	si     statesinformer.StatesInformer
	pods   []*statesinformer.PodMeta
	mc     metriccache.MetricCache
	c      *lsPeakCache
	m      *LSPeakMetrics
	clock  time.Time
	sample time.Time // the next sample's time stamp (the TSDB's own clock)
	on     bool
}

func newPeakNode(t *testing.T, window time.Duration) *peakNode {
	ctrl := gomock.NewController(t)
	si := mockstatesinformer.NewMockStatesInformer(ctrl)
	pods := []*statesinformer.PodMeta{lsPodMeta("ls1"), lsPodMeta("ls2"), bePodMeta("be", 1000)}
	si.EXPECT().GetAllPods().Return(pods).AnyTimes()
	m, err := NewLSPeakMetrics(prometheus.NewPedanticRegistry())
	require.NoError(t, err)
	n := &peakNode{si: si, pods: pods, mc: newMetricCache(t), m: m, clock: time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC),
		sample: time.Now().Add(-time.Minute), on: true}
	n.c = newLSPeakCache(n.mc, si.GetAllPods, window, 3*time.Second, m)
	n.c.now = func() time.Time { return n.clock }
	n.c.enabled = func() bool { return n.on }
	return n
}

// round appends the round's samples and runs upstream's own queries, in
// upstream's order (cpu_suppress.go suppressBECPU: the pods, then the
// node), and upstream's own split of the node's usage.
func (n *peakNode) round(t *testing.T, t0 time.Time, r peakRound, reserved float64) (ls, system float64) {
	n.sample = n.sample.Add(time.Second)
	appendSamples(t, n.mc, n.sample, map[metriccache.MetricResource]map[string]float64{
		metriccache.NodeCPUUsageMetric: {"": r.node},
		metriccache.PodCPUUsageMetric:  {"ls1": r.ls1, "ls2": r.ls2, string(n.pods[2].Pod.UID): r.be},
	})
	n.clock = t0.Add(r.at)
	podMetrics := helpers.CollectAllPodMetricsLast(n.si, n.c, metriccache.PodCPUUsageMetric, time.Minute)
	q, err := metriccache.NodeCPUUsageMetric.BuildQueryMeta(nil)
	require.NoError(t, err)
	node, err := helpers.CollectorNodeMetricLast(n.c, q, time.Minute)
	require.NoError(t, err)
	ls, _, system = helpers.CalculateFilterPodsUsed(node, reserved, n.pods, podMetrics, nil, nil, helpers.NonBEPodFilter, helpers.NonBEHostAppFilter)
	return ls, system
}

// TestLSPeakHoldsTheLSTerm: upstream's LS term is the non-BE pods' peaks
// over the window (each pod's own), its system term the round's own
// samples', whether the node's reservation floors it or not (raising the
// node's usage alone would let the floor swallow the hold); the BE pod is
// never held. Window 5 s, a round a second.
func TestLSPeakHoldsTheLSTerm(t *testing.T) {
	tests := []struct {
		name     string
		reserved float64
		rounds   []peakRound
	}{
		{"rise, fall, held, then follows", 0, []peakRound{
			{0, 0.5, 0.5, 1, 2.5, 1, 0.5},
			{time.Second, 2, 1, 0.5, 4, 3, 0.5},             // the rise: the peak is the last
			{2 * time.Second, 0.5, 0.5, 1, 2.5, 3, 0.5},     // fallen: held at the peaks
			{3 * time.Second, 0.5, 1.5, 1, 3.5, 3.5, 0.5},   // each pod's own peak: 2 + 1.5
			{6 * time.Second, 0.5, 0.5, 1, 2.5, 3.5, 0.5},   // ls1's peak (1 s) is 5 s old: still held
			{7 * time.Second, 0.5, 0.5, 1, 2.5, 2, 0.5},     // ls1's gone by; ls2's (3 s) held
			{9 * time.Second, 0.5, 0.5, 1, 2.5, 1, 0.5},     // both followed
			{10 * time.Second, 0.5, 0.5, 3, 4.5, 1, 0.5},    // BE rises: not LS
			{11 * time.Second, 0.5, 0.5, 0.5, 2.0, 1, 0.5}}, // and falls: not held
		},
		{"the reservation floors system: still held exactly", 1, []peakRound{
			{0, 0.5, 0, 1, 2, 0.5, 1},
			{time.Second, 2, 0, 1, 3.5, 2, 1},
			{2 * time.Second, 0.5, 0, 1, 2, 2, 1}}, // node-only: LS 0.5 + system max(0.5+1.5, 1) = 2.5, not 3
		},
		{"system above the floor", 0.25, []peakRound{
			{0, 1, 1, 1, 4, 2, 1},
			{time.Second, 0.5, 0.5, 1, 3, 2, 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newPeakNode(t, 5*time.Second)
			t0 := n.clock
			for i, r := range tt.rounds {
				ls, system := n.round(t, t0, r, tt.reserved)
				assert.InDelta(t, r.wantLS, ls, 1e-9, "round %d (+%v): LS term", i, r.at)
				assert.InDelta(t, r.wantSystem, system, 1e-9, "round %d (+%v): system term", i, r.at)
				assert.InDelta(t, r.ls1+r.ls2, testutil.ToFloat64(n.m.usage.WithLabelValues("last")), 1e-9)
				assert.InDelta(t, r.wantLS, testutil.ToFloat64(n.m.usage.WithLabelValues("peak")), 1e-9)
			}
		})
	}
}

// TestLSPeakGate: off, every answer is upstream's own (the last samples)
// and the metric goes; on again over a busy node, the hold starts empty.
func TestLSPeakGate(t *testing.T) {
	n := newPeakNode(t, 30*time.Second)
	t0 := n.clock
	ls, _ := n.round(t, t0, peakRound{at: 0, ls1: 3, ls2: 1, be: 0, node: 4.5}, 0)
	assert.Equal(t, 4.0, ls)
	ls, system := n.round(t, t0, peakRound{at: time.Second, ls1: 0.5, ls2: 0.5, be: 1, node: 2.5}, 0)
	assert.Equal(t, [2]float64{4, 0.5}, [2]float64{ls, system}, "on: held")

	n.on = false
	ls, system = n.round(t, t0, peakRound{at: 2 * time.Second, ls1: 0.5, ls2: 0.5, be: 1, node: 2.5}, 0)
	assert.Equal(t, [2]float64{1, 0.5}, [2]float64{ls, system}, "off: upstream's own")
	assert.Zero(t, testutil.CollectAndCount(n.m.usage), "off: no series")
	assert.Nil(t, n.c.rings)

	n.on = true
	ls, system = n.round(t, t0, peakRound{at: 3 * time.Second, ls1: 0.5, ls2: 0.5, be: 1, node: 2.5}, 0)
	assert.Equal(t, [2]float64{1, 0.5}, [2]float64{ls, system}, "on again: the ring starts empty (the 4 cores of +0 s are within the window)")
	ls, _ = n.round(t, t0, peakRound{at: 4 * time.Second, ls1: 2, ls2: 0.5, be: 1, node: 4}, 0)
	assert.Equal(t, 2.5, ls)
	ls, _ = n.round(t, t0, peakRound{at: 5 * time.Second, ls1: 0.5, ls2: 0.5, be: 1, node: 2.5}, 0)
	assert.Equal(t, 2.5, ls, "and holds again")
}

// TestLSPeakPassesOtherQueries: other kinds and pods it does not know are
// upstream's own answers, even while on.
func TestLSPeakPassesOtherQueries(t *testing.T) {
	n := newPeakNode(t, 30*time.Second)
	t0 := n.clock
	n.round(t, t0, peakRound{at: 0, ls1: 3, ls2: 1, node: 4.5}, 0)
	n.round(t, t0, peakRound{at: time.Second, ls1: 1, ls2: 1, node: 2.5}, 0)
	n.sample = n.sample.Add(time.Second)
	appendSamples(t, n.mc, n.sample, map[metriccache.MetricResource]map[string]float64{
		metriccache.PodCPUUsageMetric:     {"stranger": 2},
		metriccache.HostAppCPUUsageMetric: {"sshd": 0.25},
	})
	q, err := metriccache.PodCPUUsageMetric.BuildQueryMeta(metriccache.MetricPropertiesFunc.Pod("stranger"))
	require.NoError(t, err)
	v, err := helpers.CollectPodMetricLast(n.c, q, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, 2.0, v, "a pod koordlet does not list: not held")
	q, err = metriccache.PodCPUUsageMetric.BuildQueryMeta(metriccache.MetricPropertiesFunc.Pod("ls1"))
	require.NoError(t, err)
	v, err = helpers.CollectPodMetricLast(n.c, q, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, 3.0, v, "an LS pod: its peak")
	apps := helpers.CollectAllHostAppMetricsLast(nil, n.c, metriccache.HostAppCPUUsageMetric, time.Minute)
	assert.Empty(t, apps)
	q, err = metriccache.PodCPUUsageMetric.BuildQueryMeta(metriccache.MetricPropertiesFunc.Pod("nobody"))
	require.NoError(t, err)
	r, err := helpers.CollectPodMetric(n.c, q, time.Now().Add(-time.Minute), time.Now())
	require.NoError(t, err)
	assert.Zero(t, r.Count(), "no sample: none made up")
}
