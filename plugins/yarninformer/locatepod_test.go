package yarninformer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLocateNodeManager(t *testing.T) {
	nm := func(name string, hostNet bool, phase corev1.PodPhase, started time.Time) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "yarn", Name: name, Labels: map[string]string{"app.kubernetes.io/component": "node-manager"}},
			Spec:       corev1.PodSpec{HostNetwork: hostNet},
			Status:     corev1.PodStatus{Phase: phase, HostIP: "192.0.2.1", PodIP: "10.0.0." + name[len(name)-1:], StartTime: &metav1.Time{Time: started}},
		}
	}
	now := time.Now()
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.9"}}
	for _, tc := range []struct {
		name     string
		pods     []*corev1.Pod
		selector string
		pod      string
		endpoint string
		err      string
	}{
		{"pod network", []*corev1.Pod{other, nm("nm-1", false, corev1.PodRunning, now)}, "app.kubernetes.io/component=node-manager", "yarn/nm-1", "http://10.0.0.1:8042", ""},
		{"host network", []*corev1.Pod{nm("nm-1", true, corev1.PodRunning, now)}, "app.kubernetes.io/component=node-manager", "yarn/nm-1", "http://192.0.2.1:8042", ""},
		{"the newest running", []*corev1.Pod{nm("nm-1", false, corev1.PodRunning, now.Add(-time.Hour)), nm("nm-2", false, corev1.PodRunning, now), nm("nm-3", false, corev1.PodPending, now.Add(time.Hour))},
			"app.kubernetes.io/component=node-manager", "yarn/nm-2", "http://10.0.0.2:8042", ""},
		{"none running", []*corev1.Pod{nm("nm-1", false, corev1.PodPending, now)}, "app.kubernetes.io/component=node-manager", "", "", "none is running"},
		{"no match", []*corev1.Pod{other}, "app.kubernetes.io/component=node-manager", "", "", "no pod on this node matches"},
		{"bad selector", nil, "a b", "", "", "selector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod, endpoint, err := LocateNodeManager(tc.pods, tc.selector, 8042)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.pod, pod)
			assert.Equal(t, tc.endpoint, endpoint)
		})
	}
}
