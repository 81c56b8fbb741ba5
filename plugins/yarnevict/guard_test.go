package yarnevict

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

type recordingExecutor struct{ evicted []string }

func (r *recordingExecutor) Evict(pod *corev1.Pod, _ *corev1.Node, _, _ string) bool {
	r.evicted = append(r.evicted, pod.Name)
	return true
}
func (r *recordingExecutor) IsPodEvicted(*corev1.Pod) bool { return false }

func TestGuard(t *testing.T) {
	st := store.New()
	inner := &recordingExecutor{}
	deps := Deps{Store: st, IsNodeManagerPod: func(p *corev1.Pod) bool { return p.Name == "nodemanager" }}
	g := &guard{inner: inner, deps: deps}
	nm := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nodemanager"}}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "batch"}}
	id := yarn.ContainerID{ClusterTimestamp: 1700000000000, AppID: 1, AttemptID: 1, Sequence: 2}
	st.Resync(store.Observation{ScanOK: true, Scan: []cgroups.Container{{Name: id.String(), ID: id, Pids: []int{1}}}}, time.Now())

	set := func(on bool) {
		assert.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{string(features.YARNNodeManagerGuard): on}))
	}
	t.Cleanup(func() { set(false) })

	set(false)
	assert.True(t, g.Evict(nm, nil, "r", "m"), "gate off: upstream behaviour")
	set(true)
	assert.False(t, g.Evict(nm, nil, "r", "m"), "the NM pod is refused while it has live YARN containers")
	assert.True(t, g.Evict(other, nil, "r", "m"), "other pods are evicted as before")
	st.Resync(store.Observation{ScanOK: true}, time.Now())
	assert.True(t, g.Evict(nm, nil, "r", "m"), "with no YARN container left the NM pod may go")
	assert.Equal(t, []string{"nodemanager", "batch", "nodemanager"}, inner.evicted)
}
