package yarnevict

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	qmutil "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/plugins/util"

	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
)

// guard wraps koordlet's pod eviction executor: while YARNNodeManagerGuard
// is on, it refuses to evict the NodeManager pod as long as that pod has
// live YARN containers (evicting it would kill every job on the node; the
// YARN-aware strategies evict individual containers instead).
type guard struct {
	inner qmutil.EvictionExecutor
	deps  Deps
}

// GuardInitializer is for qmutil.SetCustomEvictionExecutorInitializer.
func GuardInitializer(deps Deps) func(*qmutil.Evictor, bool) qmutil.EvictionExecutor {
	return func(evictor *qmutil.Evictor, onlyEvictByAPI bool) qmutil.EvictionExecutor {
		return &guard{inner: &qmutil.DefaultEvictionExecutor{OnlyEvictByAPI: onlyEvictByAPI, Evictor: evictor}, deps: deps}
	}
}

// Evict evicts pod unless it is the guarded NodeManager pod.
func (g *guard) Evict(pod *corev1.Pod, node *corev1.Node, reason, message string) bool {
	if features.Enabled(features.YARNNodeManagerGuard) && g.deps.IsNodeManagerPod(pod) {
		if n := liveContainers(g.deps); n > 0 {
			klog.Warningf("yarn: refusing to evict NodeManager pod %s/%s (%s): it runs %d live YARN containers; "+
				"the YARN-aware strategies evict individual containers instead", pod.Namespace, pod.Name, reason, n)
			return false
		}
	}
	return g.inner.Evict(pod, node, reason, message)
}

// IsPodEvicted delegates.
func (g *guard) IsPodEvicted(pod *corev1.Pod) bool { return g.inner.IsPodEvicted(pod) }

func liveContainers(deps Deps) int {
	n := 0
	for _, c := range deps.Store.Snapshot() {
		if c.HasCgroup() {
			n++
		}
	}
	return n
}
