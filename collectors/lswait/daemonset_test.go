package lswait

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"
)

// TestCollectorDaemonSetIsNotLS: the collector measures a Burstable pod of
// a Deployment and a DaemonSet's pod labelled LS, not a Burstable or
// Guaranteed DaemonSet pod without the label (a node agent).
func TestCollectorDaemonSetIsNotLS(t *testing.T) {
	helper := system.NewFileTestUtil(t)
	t.Cleanup(helper.Cleanup)
	system.Conf.ProcRootDir = t.TempDir()
	ds := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent"}}
	web, agent, agentG, labelled := testPod("web", "", corev1.PodQOSBurstable), testPod("agent", "", corev1.PodQOSBurstable),
		testPod("agent-g", "", corev1.PodQOSGuaranteed), testPod("agent-ls", "LS", corev1.PodQOSBurstable)
	web.Pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web"}}
	agent.Pod.OwnerReferences, agentG.Pod.OwnerReferences, labelled.Pod.OwnerReferences = ds, ds, ds
	pods := []*statesinformer.PodMeta{web, agent, agentG, labelled}
	c, err := New(Options{Enabled: func() bool { return true }, Pods: func() []*statesinformer.PodMeta { return pods },
		Interval: time.Second, Registerer: prometheus.NewPedanticRegistry(), NoEBPF: true})
	require.NoError(t, err)
	c.source = SourceSchedstat
	c.sched = &schedstatSource{procRoot: system.Conf.ProcRootDir, last: map[int]Schedstat{}}
	c.Collect()
	assert.Equal(t, []string{"default/agent-ls", "default/web"}, c.Pods())
}
