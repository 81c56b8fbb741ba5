/*
Copyright 2022 The Koordinator Authors.
Copyright 2026 The koordlet-yarn Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.

Derived from Koordinator v1.8.0 pkg/koordlet/qosmanager/plugins/cpuevict/cpu_evict.go and memoryevict/memory_evict.go (the usage-threshold triggers);
modified for koordlet-yarn.
*/

package yarnevict

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"

	apiext "github.com/koordinator-sh/koordinator/apis/extension"
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/metriccache"
	qmframework "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/framework"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/helpers"
	qmutil "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/plugins/util"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	"github.com/koordinator-sh/koordinator/pkg/util"

	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/kill"
)

// Upstream's usage-based triggers (MemoryEvict, CPUEvict), ported from
// koordlet v1.8.0's memoryevict and cpuevict strategies so that they keep
// running when a YARN-aware strategy holds the slot: they evict pods at or
// below evictEnabledPriorityThreshold by node usage, as upstream does, through
// upstream's own KillAndEvictPods.

// cpuReleaseBufferPercent is upstream's default gap of the CPU usage trigger.
const cpuReleaseBufferPercent = 2

// usageTask builds upstream's MemoryEvict (memory) or CPUEvict (cpu) task,
// or nil when nothing needs releasing. released is what an earlier trigger
// of the same cycle released of the same target (node memory usage), which
// upstream counts against this trigger's need.
func usageTask(kind AllocKind, opts *qmframework.Options, cfg *slov1alpha1.ResourceThresholdStrategy, node *corev1.Node,
	pods []*statesinformer.PodMeta, released int64) (*qmutil.EvictTaskInfo, error) {
	if err := usageConfigValid(kind, cfg); err != nil {
		return nil, err
	}
	var need resource.Quantity
	var ok bool
	if kind == AllocCPU {
		need, ok = cpuUsageNeed(opts, cfg, node)
	} else {
		need, ok = memoryUsageNeed(opts, cfg, node, released)
	}
	if !ok {
		return nil, nil
	}
	rn := kind.resource()
	reason := kill.ReasonMemoryEvict
	if kind == AllocCPU {
		reason = kill.ReasonCPUEvict
	}
	infos := usageSortedPods(kind, opts, reason, *cfg.EvictEnabledPriorityThreshold, pods)
	return &qmutil.EvictTaskInfo{
		Reason:            qmutil.EvictReasonPrefix + reason,
		SortedEvictPods:   infos,
		ToReleaseResource: corev1.ResourceList{rn: need},
		ReleaseTarget:     qmutil.ReleaseTargetTypeResourceUsed,
		GetPodResourceFunc: func(info *qmutil.PodEvictInfo) corev1.ResourceList {
			if kind == AllocCPU {
				return corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(info.MilliCPUUsed, resource.DecimalSI)}
			}
			return corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(info.MemoryUsed, resource.BinarySI)}
		},
	}, nil
}

// usageConfigValid is upstream's config check of the usage triggers.
func usageConfigValid(kind AllocKind, cfg *slov1alpha1.ResourceThresholdStrategy) error {
	if cfg == nil {
		return fmt.Errorf("ResourceThresholdStrategy not config")
	}
	threshold, lowerP, buffer := cfg.MemoryEvictThresholdPercent, cfg.MemoryEvictLowerPercent, int64(releaseBufferPercent)
	if kind == AllocCPU {
		threshold, lowerP, buffer = cfg.CPUEvictThresholdPercent, cfg.CPUEvictLowerPercent, cpuReleaseBufferPercent
	}
	if threshold == nil {
		return fmt.Errorf("threshold percent is nil")
	} else if *threshold < 0 {
		return fmt.Errorf("threshold percent(%v) should equal or greater than 0", *threshold)
	}
	lower := *threshold - buffer
	if lowerP != nil {
		lower = *lowerP
	}
	if lower >= *threshold {
		return fmt.Errorf("lower percent(%v) should less than threshold percent(%v)", lower, *threshold)
	}
	if cfg.EvictEnabledPriorityThreshold == nil {
		return fmt.Errorf("EvictEnabledPriorityThreshold not config")
	}
	return nil
}

// memoryUsageNeed is upstream's calculateReleaseByUsedThresholdPercent.
func memoryUsageNeed(opts *qmframework.Options, cfg *slov1alpha1.ResourceThresholdStrategy, node *corev1.Node, released int64) (resource.Quantity, bool) {
	meta, err := metriccache.NodeMemoryUsageMetric.BuildQueryMeta(nil)
	if err != nil {
		return resource.Quantity{}, false
	}
	used, err := helpers.CollectorNodeMetricLast(opts.MetricCache, meta, opts.MetricAdvisorConfig.CollectResUsedInterval)
	if err != nil {
		klog.V(4).Infof("yarn: %s skipped, node memory usage: %v", kill.ReasonMemoryEvict, err)
		return resource.Quantity{}, false
	}
	capacity := node.Status.Capacity.Memory().Value()
	if capacity <= 0 {
		return resource.Quantity{}, false
	}
	usage := int64(used) * 100 / capacity
	threshold := *cfg.MemoryEvictThresholdPercent
	if usage < threshold {
		return resource.Quantity{}, false
	}
	lower := threshold - releaseBufferPercent
	if cfg.MemoryEvictLowerPercent != nil {
		lower = *cfg.MemoryEvictLowerPercent
	}
	need := capacity*(usage-lower)/100 - released
	if need <= 0 {
		return resource.Quantity{}, false
	}
	klog.Infof("yarn: %s (upstream's trigger) starts to evict %d, node memory usage %d%% (threshold %d%%, lower %d%%)",
		kill.ReasonMemoryEvict, need, usage, threshold, lower)
	return *resource.NewQuantity(need, resource.BinarySI), true
}

// cpuUsageNeed is upstream's calculateMilliReleaseByUsedThresholdPercent.
func cpuUsageNeed(opts *qmframework.Options, cfg *slov1alpha1.ResourceThresholdStrategy, node *corev1.Node) (resource.Quantity, bool) {
	window := int64(opts.MetricAdvisorConfig.CollectResUsedInterval.Seconds())
	if cfg.CPUEvictTimeWindowSeconds != nil && *cfg.CPUEvictTimeWindowSeconds > window {
		window = *cfg.CPUEvictTimeWindowSeconds
	}
	q := helpers.GenerateQueryParamsAvg(time.Duration(window) * time.Second)
	meta, err := metriccache.NodeCPUUsageMetric.BuildQueryMeta(nil)
	if err != nil {
		return resource.Quantity{}, false
	}
	res, err := helpers.CollectNodeMetrics(opts.MetricCache, *q.Start, *q.End, meta)
	if err != nil {
		klog.V(4).Infof("yarn: %s skipped, node CPU usage: %v", kill.ReasonCPUEvict, err)
		return resource.Quantity{}, false
	}
	used, err := res.Value(q.Aggregate)
	if err != nil {
		return resource.Quantity{}, false
	}
	capacity := node.Status.Capacity.Cpu().MilliValue()
	if capacity <= 0 {
		return resource.Quantity{}, false
	}
	usage := int64(used*1000) * 100 / capacity
	threshold := *cfg.CPUEvictThresholdPercent
	if usage < threshold {
		return resource.Quantity{}, false
	}
	lower := threshold - cpuReleaseBufferPercent
	if cfg.CPUEvictLowerPercent != nil {
		lower = *cfg.CPUEvictLowerPercent
	}
	need := capacity * (usage - lower) / 100
	klog.Infof("yarn: %s (upstream's trigger) starts to evict %dm, node CPU usage %d%% (threshold %d%%, lower %d%%)",
		kill.ReasonCPUEvict, need, usage, threshold, lower)
	return *resource.NewMilliQuantity(need, resource.DecimalSI), true
}

// usageSortedPods is upstream's getPodEvictInfoAndSortByPriority with the
// usage sub-order (larger usage first).
func usageSortedPods(kind AllocKind, opts *qmframework.Options, policy string, priorityThreshold int32, pods []*statesinformer.PodMeta) []*qmutil.PodEvictInfo {
	metric := metriccache.PodMemUsageMetric
	if kind == AllocCPU {
		metric = metriccache.PodCPUUsageMetric
	}
	var infos []*qmutil.PodEvictInfo
	for _, pm := range pods {
		pod := pm.Pod
		if util.IsPodInactive(pod) || !qmutil.IsEvictionPolicyAllowed(policy, pod) {
			continue
		}
		p := apiext.GetPodPriorityValueWithDefault(pod)
		if p == nil || *p > priorityThreshold || !apiext.PodEvictEnabled(pod) {
			continue
		}
		info := &qmutil.PodEvictInfo{Pod: pod, Priority: *p, LabelPriority: qmutil.GetPodPriorityLabel(pod, int64(*p))}
		meta, err := metric.BuildQueryMeta(metriccache.MetricPropertiesFunc.Pod(string(pod.UID)))
		if err != nil {
			continue
		}
		v, err := helpers.CollectPodMetricLast(opts.MetricCache, meta, opts.MetricAdvisorConfig.CollectResUsedInterval)
		if err != nil {
			continue
		}
		// As upstream (v1.8.0) fills both from one sample.
		if kind == AllocCPU {
			info.MilliCPUUsed = int64(v * 1000)
			_, info.MilliCPURequest = qmutil.GetRequestTypeAndValueFromPod(pod, corev1.ResourceCPU)
		} else {
			info.MemoryUsed = int64(v * 1000)
			_, info.MemoryRequest = qmutil.GetRequestTypeAndValueFromPod(pod, corev1.ResourceMemory)
		}
		infos = append(infos, info)
	}
	sort.Slice(infos, func(i, j int) bool {
		if infos[i].Priority != infos[j].Priority {
			return infos[i].Priority < infos[j].Priority
		}
		if infos[i].LabelPriority != infos[j].LabelPriority {
			return infos[i].LabelPriority < infos[j].LabelPriority
		}
		if kind == AllocCPU {
			return infos[i].MilliCPUUsed > infos[j].MilliCPUUsed
		}
		return infos[i].MemoryUsed > infos[j].MemoryUsed
	})
	return infos
}
