// Package handles holds the koordlet handles (states informer, metric
// cache, kube client, event recorder, cgroup reader, collector config) that
// koordlet hands to its qosmanager strategy factories. That factory call,
// made while koordlet builds its daemon and before any informer plugin runs,
// is the earliest place an external module can hold them; the framework
// records them there and its plugins read them from here.
package handles

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/metriccache"
	qmframework "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/framework"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/resourceexecutor"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
)

// Handles holds koordlet's handles once koordlet has created them.
type Handles struct {
	mu   sync.RWMutex
	opts *qmframework.Options
}

// Set records opts.
func (h *Handles) Set(opts *qmframework.Options) {
	h.mu.Lock()
	h.opts = opts
	h.mu.Unlock()
}

func (h *Handles) get() *qmframework.Options {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.opts
}

// StatesInformer returns koordlet's states informer, or nil before capture.
func (h *Handles) StatesInformer() statesinformer.StatesInformer {
	if o := h.get(); o != nil {
		return o.StatesInformer
	}
	return nil
}

// MetricCache returns koordlet's metric cache, or nil before capture.
func (h *Handles) MetricCache() metriccache.MetricCache {
	if o := h.get(); o != nil {
		return o.MetricCache
	}
	return nil
}

// EventRecorder returns koordlet's event recorder, or nil before capture.
func (h *Handles) EventRecorder() record.EventRecorder {
	if o := h.get(); o != nil {
		return o.EventRecorder
	}
	return nil
}

// CgroupReader returns koordlet's cgroup reader, or nil before capture.
func (h *Handles) CgroupReader() resourceexecutor.CgroupReader {
	if o := h.get(); o != nil {
		return o.CgroupReader
	}
	return nil
}

// CollectInterval returns koordlet's --collect-res-used-interval, or 0
// before capture.
func (h *Handles) CollectInterval() time.Duration {
	if o := h.get(); o != nil && o.MetricAdvisorConfig != nil {
		return o.MetricAdvisorConfig.CollectResUsedInterval
	}
	return 0
}

// NodeSLO returns the node's NodeSLO as koordlet has it, or nil.
func (h *Handles) NodeSLO() *slov1alpha1.NodeSLO {
	if si := h.StatesInformer(); si != nil {
		return si.GetNodeSLO()
	}
	return nil
}

// Pods returns koordlet's current pod list (empty before capture or before
// koordlet has synced its pods).
func (h *Handles) Pods() []*statesinformer.PodMeta {
	if si := h.StatesInformer(); si != nil {
		return si.GetAllPods()
	}
	return nil
}

// KubeClient returns koordlet's Kubernetes client, or nil before capture.
func (h *Handles) KubeClient() kubernetes.Interface {
	if o := h.get(); o != nil {
		return o.KubeClient
	}
	return nil
}

// Node returns the node as koordlet's states informer has it, or nil.
func (h *Handles) Node() *corev1.Node {
	if si := h.StatesInformer(); si != nil {
		return si.GetNode()
	}
	return nil
}
