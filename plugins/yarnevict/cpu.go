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

Derived from Koordinator v1.8.0 pkg/koordlet/qosmanager/plugins/cpuevict/cpu_evict.go (the BE satisfaction arithmetic and the BE CPU metric queries);
modified for koordlet-yarn.
*/

package yarnevict

import (
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/koordinator-sh/koordinator/apis/extension"
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/metriccache"
	qmframework "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/framework"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/helpers"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/plugins/cpuevict"
	qmutil "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/plugins/util"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	"github.com/koordinator-sh/koordinator/pkg/util"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/yarnusage"
	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/kill"
)

// Upstream's defaults for the satisfaction-based evict.
const (
	beCPUUsageThresholdPercent = 90
	satisfactionLowerMax       = 60
	satisfactionUpperMax       = 100
)

// CPUEvict is the YARN-aware BE CPU evict (satisfaction-based). It takes
// koordlet's "CPUEvict" slot when YARNBECPUEvict is on. BE request includes
// the YARN containers' requests (from the NodeManager) and BE usage their
// usage (koordlet reads it from the besteffort cgroup, which holds a YARN
// hierarchy below it; the collector's aggregate is added for one
// elsewhere), so that a node whose BE share is starved by
// the suppress limit evicts from one ranked list of BE pods and YARN
// containers until the requests released lift satisfaction (real limit ÷
// request) back to cpuEvictBESatisfactionUpperPercent.
type CPUEvict struct {
	deps      Deps
	opts      *qmframework.Options
	interval  time.Duration
	cooling   time.Duration
	executor  qmutil.EvictionExecutor
	lastEvict time.Time
	reader    *cgroups.UsageReader
}

// NewCPUEvictFactory returns the factory for koordlet's "CPUEvict" slot:
// the YARN slot (see NewMemoryEvictFactory) when a YARN gate takes it,
// upstream's strategy otherwise.
func NewCPUEvictFactory(deps Deps) qmframework.QOSStrategyFactory {
	return func(opts *qmframework.Options) qmframework.QOSStrategy {
		if !useSlot(AllocCPU, features.YARNBECPUEvict) {
			return cpuevict.New(opts)
		}
		interval := time.Duration(opts.Config.CPUEvictIntervalSeconds) * time.Second
		cooling := time.Duration(opts.Config.CPUEvictCoolTimeSeconds) * time.Second
		var be beTrigger
		if features.Enabled(features.YARNBECPUEvict) {
			be = &CPUEvict{deps: deps, opts: opts, interval: interval, cooling: cooling}
		}
		return newSlot(AllocCPU, deps, opts, be, interval, cooling)
	}
}

// Enabled needs koordlet's BECPUEvict gate too.
func (c *CPUEvict) Enabled() bool {
	return koordfeatures.DefaultKoordletFeatureGate.Enabled(koordfeatures.BECPUEvict) && c.interval > 0
}

// Setup takes koordlet's pod eviction executor (with the NodeManager guard).
func (c *CPUEvict) Setup(ctx *qmframework.Context) {
	c.executor = qmutil.InitializeEvictionExecutor(ctx.Evictor, ctx.OnlyEvictByAPI)
}

// Run evaluates every interval until stopCh closes (the Slot runs Cycle
// itself; Run serves a strategy used on its own).
func (c *CPUEvict) Run(stopCh <-chan struct{}) {
	go wait.Until(func() { c.Cycle(time.Now()) }, c.interval, stopCh)
}

// BEState is the node's BE CPU picture, YARN included, in milli-cores.
type BEState struct {
	Usage, Request, Limit float64
}

// Cycle runs one evaluation and returns what it evicted.
func (c *CPUEvict) Cycle(now time.Time) []Victim {
	if now.Before(c.lastEvict.Add(c.cooling)) {
		return nil
	}
	si := c.opts.StatesInformer
	node, slo := si.GetNode(), si.GetNodeSLO()
	if node == nil || slo == nil {
		return nil
	}
	if disabled, err := koordfeatures.IsFeatureDisabled(slo, koordfeatures.BECPUEvict); err != nil || disabled {
		return nil
	}
	cfg := slo.Spec.ResourceUsedThresholdWithBE
	if err := satisfactionConfigValid(cfg); err != nil {
		klog.V(4).Infof("yarn: CPU evict skipped: %v", err)
		return nil
	}
	window := c.opts.MetricAdvisorConfig.CollectResUsedInterval
	if cfg.CPUEvictTimeWindowSeconds != nil && time.Duration(*cfg.CPUEvictTimeWindowSeconds)*time.Second > window {
		window = time.Duration(*cfg.CPUEvictTimeWindowSeconds) * time.Second
	}
	avg, ok := c.beState(helpers.GenerateQueryParamsAvg(window), node, cfg)
	if !ok {
		return nil
	}
	cur, ok := c.beState(helpers.GenerateQueryParamsLast(2*c.opts.MetricAdvisorConfig.CollectResUsedInterval), node, cfg)
	if !ok {
		return nil
	}
	need := MilliCPUToRelease(avg, cfg)
	if n := MilliCPUToRelease(cur, cfg); n < need {
		need = n // upstream: min(release by average, release by current)
	}
	if need <= 0 {
		return nil
	}
	victims := c.victims(si.GetAllPods())
	Rank(victims, CPUUsage)
	evicted, released, attempted := c.evict(node, victims, need, func(covered int64) {
		klog.Infof("yarn: BE CPU satisfaction below its lower bound (BE usage %.0fm, request %.0fm, limit %.0fm): need to release %dm of request; %d candidates, the plan covers %dm",
			cur.Usage, cur.Request, cur.Limit, need, len(victims), covered)
	})
	if attempted && c.deps.Metrics != nil {
		c.deps.Metrics.AddNeeded(c.deps.NodeName, kill.ReasonBECPUEvict, "cpu", need)
	}
	if len(evicted) > 0 {
		c.lastEvict = now
	}
	if attempted && released < need {
		klog.Warningf("yarn: CPU evict released %dm of the %dm of request needed", released, need)
	}
	return evicted
}

// beState reads koordlet's NodeBE CPU metrics over the query and adds the
// YARN containers: the collector's aggregate usage and the NM's requests.
func (c *CPUEvict) beState(q *metriccache.QueryParam, node *corev1.Node, cfg *slov1alpha1.ResourceThresholdStrategy) (BEState, bool) {
	querier, err := c.opts.MetricCache.Querier(*q.Start, *q.End)
	if err != nil {
		return BEState{}, false
	}
	defer querier.Close()
	get := func(kind metriccache.MetricResource, props map[metriccache.MetricProperty]string) (float64, bool) {
		res, err := helpers.Query(querier, kind, props)
		if err != nil || res.Count() == 0 {
			return 0, false
		}
		v, err := res.Value(q.Aggregate)
		return v, err == nil
	}
	be := func(alloc metriccache.MetricPropertyValue) (float64, bool) {
		return get(metriccache.NodeBEMetric, metriccache.MetricPropertiesFunc.NodeBE(string(metriccache.BEResourceCPU), string(alloc)))
	}
	usage, ok1 := be(metriccache.BEResourceAllocationUsage)
	request, _ := be(metriccache.BEResourceAllocationRequest)
	limit, ok3 := be(metriccache.BEResourceAllocationRealLimit)
	if !ok1 || !ok3 {
		return BEState{}, false
	}
	if cfg.CPUEvictPolicy == slov1alpha1.EvictByAllocatablePolicy {
		if q, ok := node.Status.Allocatable[extension.BatchCPU]; ok && q.Value() >= 0 {
			limit = float64(q.Value())
		}
	}
	// koordlet reads BE usage from the besteffort cgroup: YARN containers
	// below it are in it already; a hierarchy elsewhere is added.
	if c.deps.Hierarchy != nil && cgroups.OutsideBestEffort(c.deps.Hierarchy()) {
		if yarnCores, ok := get(metriccache.HostAppCPUUsageMetric, metriccache.MetricPropertiesFunc.HostApplication(yarnusage.AggregateName)); ok {
			usage += yarnCores * 1000
		}
		// The suppress budget is divided between the besteffort cgroup
		// (koordlet's real limit) and the YARN root: the limit is both.
		if cfg.CPUEvictPolicy != slov1alpha1.EvictByAllocatablePolicy {
			limit += c.yarnRootMilliLimit(c.deps.Hierarchy())
		}
	}
	request += yarnBERequest(c.deps.Store.Snapshot())
	return BEState{Usage: usage, Request: request, Limit: limit}, true
}

// yarnRootMilliLimit is the YARN hierarchy root's cfs quota in milli-cores
// (0 when it has none, or it cannot be read).
func (c *CPUEvict) yarnRootMilliLimit(dir string) float64 {
	if dir == "" || c.opts.CgroupReader == nil {
		return 0
	}
	quota, err := c.opts.CgroupReader.ReadCPUQuota(dir)
	if err != nil || quota <= 0 {
		return 0
	}
	period, err := c.opts.CgroupReader.ReadCPUPeriod(dir)
	if err != nil || period <= 0 {
		return 0
	}
	return float64(quota) * 1000 / float64(period)
}

// yarnBERequest sums the CPU requests of the YARN containers that hold
// CPU now: processes in their cgroup and an NM state that is not terminal
// (or not reported yet). An empty cgroup YARN failed to remove, or a
// container the NM reports finished, requests nothing.
func yarnBERequest(cs []*store.Container) float64 {
	var sum float64
	for _, ct := range cs {
		if ct.HasCgroup() && len(ct.Pids) > 0 && !yarn.IsTerminalState(ct.State) {
			sum += float64(ct.RequestMilliCPU)
		}
	}
	return sum
}

// MilliCPUToRelease applies upstream's satisfaction rule to s: when BE
// usage is at least cpuEvictBEUsageThresholdPercent of the limit and the
// satisfaction (limit ÷ request) is at or below the lower percent, release
// request × (upper − satisfaction) of request; else 0.
func MilliCPUToRelease(s BEState, cfg *slov1alpha1.ResourceThresholdStrategy) int64 {
	if s.Limit <= 0 || s.Request <= 0 {
		return 0
	}
	threshold := int64(beCPUUsageThresholdPercent)
	if cfg.CPUEvictBEUsageThresholdPercent != nil {
		threshold = *cfg.CPUEvictBEUsageThresholdPercent
	}
	if s.Limit >= 1000 && s.Usage/s.Limit < float64(threshold)/100 {
		return 0
	}
	satisfaction := s.Limit / s.Request
	if satisfaction > float64(*cfg.CPUEvictBESatisfactionLowerPercent)/100 {
		return 0
	}
	gap := float64(*cfg.CPUEvictBESatisfactionUpperPercent)/100 - satisfaction
	if gap <= 0 {
		return 0
	}
	return int64(math.Round(s.Request * gap))
}

func satisfactionConfigValid(cfg *slov1alpha1.ResourceThresholdStrategy) error {
	if cfg == nil || cfg.CPUEvictBESatisfactionLowerPercent == nil || cfg.CPUEvictBESatisfactionUpperPercent == nil {
		return fmt.Errorf("cpuEvictBESatisfactionLowerPercent/UpperPercent not set")
	}
	lo, up := *cfg.CPUEvictBESatisfactionLowerPercent, *cfg.CPUEvictBESatisfactionUpperPercent
	if lo <= 0 || lo > satisfactionLowerMax || up <= 0 || up >= satisfactionUpperMax || up < lo {
		return fmt.Errorf("invalid satisfaction bounds lower %d, upper %d", lo, up)
	}
	return nil
}

// victims lists the candidates with their CPU usage, request and CPU-seconds
// spent, marking those using more than they requested.
func (c *CPUEvict) victims(pods []*statesinformer.PodMeta) []Victim {
	interval := c.opts.MetricAdvisorConfig.CollectResUsedInterval
	return candidates(c.deps, c.executor, pods,
		func(pod *corev1.Pod) Victim {
			var used int64
			if meta, err := metriccache.PodCPUUsageMetric.BuildQueryMeta(metriccache.MetricPropertiesFunc.Pod(string(pod.UID))); err == nil {
				if v, err := helpers.CollectPodMetricLast(c.opts.MetricCache, meta, interval); err == nil {
					used = int64(v * 1000)
				}
			}
			var req int64
			for i := range pod.Spec.Containers {
				if r := util.GetContainerBatchMilliCPURequest(&pod.Spec.Containers[i]); r > 0 {
					req += r
				}
			}
			v := PodVictim(pod, 0, used)
			v.MilliCPURequest = req
			v.CPUSeconds = podCPUSeconds(c.opts.CgroupReader, pod)
			MarkCPUCause(&v)
			return v
		},
		func(ct *store.Container, nmPriority int64) (Victim, bool) {
			var used int64
			if meta, err := metriccache.ContainerCPUUsageMetric.BuildQueryMeta(metriccache.MetricPropertiesFunc.Container(ct.Name)); err == nil {
				if v, err := helpers.CollectContainerResMetricLast(c.opts.MetricCache, meta, interval); err == nil {
					used = int64(v * 1000)
				}
			}
			v := ContainerVictim(ct, nmPriority, 0, used)
			if c.reader == nil {
				c.reader = newUsageReader()
			}
			v.CPUSeconds = containerCPUSeconds(c.reader, ct)
			MarkCPUCause(&v)
			return v, true
		})
}

// evict evicts from the ranked victims until need (of request) is
// released; planned is told what the plan covers before the first
// eviction.
func (c *CPUEvict) evict(node *corev1.Node, ranked []Victim, need int64, planned func(covered int64)) ([]Victim, int64, bool) {
	return execute(c.deps, c.executor, c.opts.EventRecorder, c.opts.StatesInformer.GetAllPods(), node, ranked, need, CPURequest,
		order{reason: kill.ReasonBECPUEvict, podMessage: func(v *Victim) string {
			return fmt.Sprintf("BE CPU satisfaction too low; pod releases %dm of CPU request; chosen because: %s", v.MilliCPURequest, v.Why)
		}}, planned)
}
