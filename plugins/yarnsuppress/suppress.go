// Package yarnsuppress makes koordlet's BE CPU suppress YARN-aware. It runs
// upstream's own cpuSuppress strategy (one formula, one set of NodeSLO knobs)
// on a view of the node in which the YARN containers are a BE host
// application, so their usage is BE usage and never "system" usage in
//
//	suppress(BE) = capacity × cpuSuppressThresholdPercent − nonBE pods − nonBE host apps − system
//
// and, when the YARN hierarchy is not below the besteffort cgroup, it divides
// the BE budget upstream computed between the besteffort cgroup and the YARN
// hierarchy root, so that BE pods and YARN together stay within it (see
// Divide for how and why).
package yarnsuppress

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/koordinator-sh/koordinator/apis/extension"
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/metriccache"
	qmframework "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/framework"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/helpers"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/plugins/cpusuppress"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/resourceexecutor"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	koordletutil "github.com/koordinator-sh/koordinator/pkg/koordlet/util"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"
	"github.com/koordinator-sh/koordinator/pkg/util"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/yarnusage"
	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/config"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/logonce"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// Deps wire the strategy to the framework.
type Deps struct {
	// Hierarchy returns the YARN hierarchy dir ("" when unknown).
	Hierarchy func() string
	// Store gives the YARN containers' CPU requests, the weights of the
	// budget's division. Without it the weights are equal.
	Store *store.Store
	// Quota writes the YARN root's quota: koordlet's one writer, shared
	// with the Restorer (required: a writer of its own would take
	// koordlet's own write for the root's value).
	Quota *cgroups.RootQuota
	// Threshold is the cpuSuppressThresholdPercent and
	// cpuSuppressMinPercent upstream's formula computes with when the
	// NodeSLO's are base and minPercent: the interference controller's
	// (nil: the NodeSLO's).
	Threshold func(base int64, minPercent *int64) (int64, *int64)
	// LSPeakWindow is how long YARNSuppressLSPeak holds the LS pods' peak
	// CPU usage (0: config.DefaultSuppressLSPeakWindow); LSPeakMetrics exports it (nil:
	// none).
	LSPeakWindow  time.Duration
	LSPeakMetrics *LSPeakMetrics
}

// NewFactory returns the factory for koordlet's "cpuSuppress" slot: when
// YARNBECPUSuppress is on, upstream's strategy on the YARN-aware view plus
// the YARN hierarchy binding; upstream's strategy otherwise. deps.Quota
// is required (ErrNoQuotaWriter).
func NewFactory(deps Deps) (qmframework.QOSStrategyFactory, error) {
	if deps.Quota == nil {
		return nil, fmt.Errorf("BE suppress: %w", ErrNoQuotaWriter)
	}
	return func(opts *qmframework.Options) qmframework.QOSStrategy {
		if !features.Enabled(features.YARNBECPUSuppress) {
			return cpusuppress.New(opts)
		}
		s := &Strategy{opts: opts, deps: deps, reader: opts.CgroupReader, executor: resourceexecutor.NewResourceUpdateExecutor(),
			interval: time.Duration(opts.Config.CPUSuppressIntervalSeconds) * time.Second}
		if s.reader == nil {
			s.reader = resourceexecutor.NewCgroupReader()
		}
		view := *opts
		view.StatesInformer = &View{StatesInformer: opts.StatesInformer, Hierarchy: deps.Hierarchy, Threshold: deps.Threshold}
		view.CgroupReader = &budgetReader{CgroupReader: s.reader, s: s}
		if opts.MetricCache != nil && opts.StatesInformer != nil {
			s.peak = newLSPeakCache(opts.MetricCache, opts.StatesInformer.GetAllPods, deps.lsPeakWindow(), s.lsPeakMaxGap(), deps.LSPeakMetrics)
			view.MetricCache = s.peak
		}
		s.inner = cpusuppress.New(&view)
		return s
	}, nil
}

func (d Deps) lsPeakWindow() time.Duration {
	if d.LSPeakWindow > 0 {
		return d.LSPeakWindow
	}
	return config.DefaultSuppressLSPeakWindow
}

// lsPeakMaxGap is how long an LS pod may go without a usage sample in
// upstream's rounds before its peak starts empty: three rounds (or three
// collections, when koordlet collects more slowly than it suppresses).
func (s *Strategy) lsPeakMaxGap() time.Duration {
	every := s.interval
	if s.opts.MetricAdvisorConfig != nil && s.opts.MetricAdvisorConfig.CollectResUsedInterval > every {
		every = s.opts.MetricAdvisorConfig.CollectResUsedInterval
	}
	if every <= 0 {
		every = time.Second
	}
	return 3 * every
}

// View is koordlet's states informer with the YARN containers declared as a
// BE host application in the NodeSLO, unless a host application already
// covers the YARN hierarchy (its usage holds YARN's: adding the aggregate too
// would subtract YARN twice). The injected host application's usage is the
// collector's all-YARN aggregate. A covering host application whose QoS is
// BE is presented as based in the besteffort cgroup, the only base upstream
// counts as BE: docs/metrics.md recommends "base": "CgroupRoot" for a YARN
// hierarchy elsewhere, and counted as non-BE, YARN's usage would shrink the
// very budget YARN is bound by. Its cpuSuppressThresholdPercent is the one
// Threshold gives for the NodeSLO's (the interference controller's).
type View struct {
	statesinformer.StatesInformer
	Hierarchy func() string
	// Threshold maps the NodeSLO's cpuSuppressThresholdPercent and
	// cpuSuppressMinPercent to the ones upstream's formula computes with
	// (nil: the same).
	Threshold func(base int64, minPercent *int64) (int64, *int64)
}

// GetNodeSLO returns the NodeSLO with the YARN host application added and
// the threshold Threshold gives.
func (v *View) GetNodeSLO() *slov1alpha1.NodeSLO {
	return v.withThreshold(v.withYARN(v.StatesInformer.GetNodeSLO()))
}

// withThreshold returns slo with cpuSuppressThresholdPercent and
// cpuSuppressMinPercent as Threshold gives them (a copy when either moves:
// koordlet's NodeSLO is shared).
func (v *View) withThreshold(slo *slov1alpha1.NodeSLO) *slov1alpha1.NodeSLO {
	if slo == nil || v.Threshold == nil || slo.Spec.ResourceUsedThresholdWithBE == nil ||
		slo.Spec.ResourceUsedThresholdWithBE.CPUSuppressThresholdPercent == nil {
		return slo
	}
	in := slo.Spec.ResourceUsedThresholdWithBE
	base := *in.CPUSuppressThresholdPercent
	t, lo := v.Threshold(base, in.CPUSuppressMinPercent)
	if t == base && ptr.Equal(lo, in.CPUSuppressMinPercent) {
		return slo
	}
	out := slo.DeepCopy()
	r := out.Spec.ResourceUsedThresholdWithBE
	r.CPUSuppressThresholdPercent, r.CPUSuppressMinPercent = &t, nil
	if lo != nil {
		r.CPUSuppressMinPercent = ptr.To(*lo) // not the caller's pointer
	}
	return out
}

// withYARN returns slo with the YARN host application added.
func (v *View) withYARN(slo *slov1alpha1.NodeSLO) *slov1alpha1.NodeSLO {
	if slo == nil || v.Hierarchy == nil {
		return slo
	}
	h := v.Hierarchy()
	if h == "" {
		return slo
	}
	if acc := yarnusage.CheckAccounting(slo, h); acc.Covered {
		return asBE(slo, acc.HostApplication)
	}
	out := slo.DeepCopy()
	// Upstream counts a host application as BE only when it is BE and
	// based in the besteffort cgroup; this entry exists for the suppress
	// formula alone (its usage is the collector's aggregate, its path is
	// never written), so it says so even for a hierarchy elsewhere.
	out.Spec.HostApplications = append(out.Spec.HostApplications, slov1alpha1.HostApplicationSpec{
		Name:     yarnusage.AggregateName,
		Priority: extension.PriorityBatch,
		QoS:      extension.QoSBE,
		CgroupPath: &slov1alpha1.CgroupPath{
			Base:         slov1alpha1.CgroupBaseTypeKubeBesteffort,
			RelativePath: filepath.Base(h),
		},
	})
	return out
}

// asBE returns slo with the BE host application name based in the
// besteffort cgroup (a copy when that changes anything). Only upstream's
// suppress formula reads the View's host applications, by name, QoS and
// base; their paths are never used from it.
func asBE(slo *slov1alpha1.NodeSLO, name string) *slov1alpha1.NodeSLO {
	i := slices.IndexFunc(slo.Spec.HostApplications, func(a slov1alpha1.HostApplicationSpec) bool { return a.Name == name })
	if i < 0 {
		return slo
	}
	app := &slo.Spec.HostApplications[i]
	if app.QoS != extension.QoSBE || (app.CgroupPath != nil && app.CgroupPath.Base == slov1alpha1.CgroupBaseTypeKubeBesteffort) {
		return slo
	}
	out := slo.DeepCopy()
	app = &out.Spec.HostApplications[i]
	if app.CgroupPath == nil {
		app.CgroupPath = &slov1alpha1.CgroupPath{}
	}
	app.CgroupPath.Base = slov1alpha1.CgroupBaseTypeKubeBesteffort
	return out
}

// Strategy is upstream's cpuSuppress run on the View, plus the division of
// the BE budget with a YARN hierarchy outside the besteffort cgroup.
type Strategy struct {
	inner    qmframework.QOSStrategy
	opts     *qmframework.Options
	deps     Deps
	interval time.Duration
	executor resourceexecutor.ResourceUpdateExecutor
	reader   resourceexecutor.CgroupReader // the real one
	// said holds the conditions already logged.
	said logonce.Set
	// peak is the metric cache upstream's strategy reads (YARNSuppressLSPeak).
	peak *lsPeakCache

	mu sync.Mutex
	// applied is the division last written; zero when none.
	applied division
}

// division is one division of the budget: the quotas written to the
// besteffort cgroup and to the YARN hierarchy root dir.
type division struct {
	budget, be, yarn int64
	dir              string
}

// Enabled follows koordlet's BECPUSuppress gate: one knob for operators.
func (s *Strategy) Enabled() bool { return s.inner.Enabled() }

// Setup passes koordlet's context to upstream's strategy.
func (s *Strategy) Setup(ctx *qmframework.Context) { s.inner.Setup(ctx) }

// Run starts upstream's loop and the division loop.
func (s *Strategy) Run(stopCh <-chan struct{}) {
	s.inner.Run(stopCh)
	s.executor.Run(stopCh)
	go wait.Until(s.BindYARN, s.interval, stopCh)
}

// bypassRatio is upstream cpuSuppress's suppressBypassQuotaDeltaRatio
// (unexported): a side's quota is not rewritten for a change smaller than
// this share of the node's CPU while the budget is unchanged.
const bypassRatio = 0.01

// BindYARN divides the BE budget between the besteffort cgroup and the YARN
// hierarchy root when that root is not below besteffort (see Divide); an
// unlimited budget (-1) leaves both unlimited. The budget is what upstream's
// suppress last wrote to the besteffort cgroup: a value there other than the
// share written here is upstream's new budget. It writes only through
// koordlet's resource executor, the lowered quota first.
func (s *Strategy) BindYARN() {
	h := s.deps.Hierarchy()
	beDir := koordletutil.GetPodQoSRelativePath(corev1.PodQOSBestEffort)
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.reader.ReadCPUQuota(beDir)
	if err != nil {
		klog.V(4).Infof("yarn: read the besteffort cfs quota: %v", err)
		return
	}
	prev := s.applied
	ours := prev.be > 0 && cur == prev.be // upstream has not written since
	if !cgroups.OutsideBestEffort(h) {
		if ours { // the hierarchy is below besteffort now: the whole budget goes back
			s.write(beDir, prev.budget)
		}
		if prev.dir != "" {
			restoreRoot(s.deps.Quota, prev.dir, "the YARN hierarchy is below besteffort") // the old root's own quota back
		}
		s.applied = division{}
		return
	}
	s.said.Do("outside-besteffort", func() {
		klog.Infof("yarn: the YARN hierarchy %s is outside the besteffort cgroup; the BE cfs quota budget is divided between the besteffort cgroup and it", h)
	})
	budget := cur
	if ours {
		budget = prev.budget
	}
	yarnCur, err := s.reader.ReadCPUQuota(h) // also: no division before the NM has created the root
	if err != nil {
		klog.V(4).Infof("yarn: read the cfs quota of the YARN hierarchy %s: %v", h, err)
		return
	}
	if budget <= 0 { // unlimited: upstream's suppress is off or uses cpusets
		// The root's own quota back (YARN's, or unlimited); a quota
		// koordlet never wrote is YARN's and is left alone.
		restoreRoot(s.deps.Quota, h, "the BE budget is unlimited")
		s.applied = division{budget: budget, yarn: yarnCur, dir: h}
		return
	}
	beSide, yarnSide := s.sides()
	if prev.dir == h && prev.be > 0 {
		beSide.Quota, yarnSide.Quota = prev.be, prev.yarn
	}
	beQuota, yarnQuota := Divide(budget, beSide, yarnSide)
	// Upstream computes budgets in milli-cores × 100 (its period is fixed
	// at 100000 µs) and steps up from the budget it reads (which
	// budgetReader reports as its own last one): once it has written one,
	// its budgets are multiples of 100. A share off the multiples of 100
	// (1 µs = 0.001% of a core) is then never mistaken for a new budget.
	if beQuota%100 == 0 && beQuota > minSideQuota {
		beQuota, yarnQuota = beQuota-1, yarnQuota+1
	}
	if ours && prev.dir == h && budget == prev.budget && yarnCur == prev.yarn &&
		abs(beQuota-prev.be) < s.minDelta() {
		return // the budget and the files unchanged, the division almost
	}
	// Lowered first, so that the two never hold more than the budget
	// between the writes (an unlimited quota counts as infinite).
	writes := []struct {
		dir   string
		quota int64
	}{{beDir, beQuota}, {h, yarnQuota}}
	if yarnQuota-orInf(yarnCur) < beQuota-orInf(cur) {
		writes[0], writes[1] = writes[1], writes[0]
	}
	written := map[string]bool{}
	for _, w := range writes {
		write := s.write
		if w.dir == h {
			write = s.writeRoot
		}
		if written[w.dir] = write(w.dir, w.quota); !written[w.dir] {
			break
		}
	}
	// What the files hold now: a share not written is retried next round.
	next := division{budget: budget, dir: h}
	if written[beDir] {
		next.be = beQuota
	} else if ours {
		next.be = prev.be
	}
	if written[h] {
		next.yarn = yarnQuota
	}
	s.applied = next
	if !written[beDir] || !written[h] {
		return
	}
	klog.V(3).Infof("yarn: BE cfs quota budget %d divided: besteffort %d (usage %d, request %d), YARN hierarchy %s %d (usage %d, request %d)",
		budget, beQuota, beSide.Usage, beSide.Request, h, yarnQuota, yarnSide.Usage, yarnSide.Request)
}

// writeRoot sets the YARN root's cfs quota through the framework's one
// writer of it, which records the root's own quota first.
func (s *Strategy) writeRoot(dir string, quota int64) bool {
	if err := s.deps.Quota.Set(dir, quota); err != nil {
		if errors.Is(err, cgroups.ErrNoRootDir) {
			// No NodeManager has made it yet: tried again next round.
			klog.V(4).Infof("yarn: %v", err)
		} else {
			klog.Warningf("yarn: %v", err)
		}
		return false
	}
	return true
}

// write sets the besteffort cgroup's cfs quota through koordlet's resource
// executor.
func (s *Strategy) write(dir string, quota int64) bool {
	updater, err := resourceexecutor.DefaultCgroupUpdaterFactory.New(system.CPUCFSQuotaName, dir, strconv.FormatInt(quota, 10), nil)
	if err == nil {
		// Not cacheable: upstream writes the besteffort quota through its
		// own updaters, so a cached value here may be stale.
		_, err = s.executor.Update(false, updater)
	}
	if err != nil {
		klog.Warningf("yarn: set the cfs quota of %s to %d: %v", dir, quota, err)
		return false
	}
	return true
}

// minDelta is the smallest change of a side's quota worth a write.
func (s *Strategy) minDelta() int64 {
	node := s.opts.StatesInformer.GetNode()
	if node == nil {
		return 0
	}
	return int64(float64(node.Status.Capacity.Cpu().MilliValue()) * float64(system.DefaultCPUCFSPeriod) / 1000 * bypassRatio)
}

// sides returns the BE pods' and the YARN containers' recent CPU usage and
// requests, in µs per cfs period: usage from koordlet's metric cache (pods;
// the collector's all-YARN aggregate), requests from the pods' batch-cpu
// (as koordlet's BE resource collector counts them) and from the NM.
func (s *Strategy) sides() (be, yarnSide Side) {
	const perMilli = system.DefaultCPUCFSPeriod / 1000
	const perCore = system.DefaultCPUCFSPeriod
	yarnSide.Request = -1
	if s.deps.Store != nil {
		yarnSide.Request = 0
		for _, c := range s.deps.Store.Snapshot() {
			if c.HasCgroup() && len(c.Pids) > 0 && !yarn.IsTerminalState(c.State) && c.RequestMilliCPU > 0 {
				yarnSide.Request += c.RequestMilliCPU * perMilli
			}
		}
	}
	si, mc := s.opts.StatesInformer, s.opts.MetricCache
	var interval time.Duration
	if s.opts.MetricAdvisorConfig != nil {
		interval = s.opts.MetricAdvisorConfig.CollectResUsedInterval
	}
	var podUsage map[string]float64
	if mc != nil {
		podUsage = helpers.CollectAllPodMetricsLast(si, mc, metriccache.PodCPUUsageMetric, interval)
		agg := helpers.CollectAllHostAppMetricsLast([]slov1alpha1.HostApplicationSpec{{Name: yarnusage.AggregateName}}, mc,
			metriccache.HostAppCPUUsageMetric, interval)
		yarnSide.Usage = int64(agg[yarnusage.AggregateName] * float64(perCore))
	}
	for _, pm := range si.GetAllPods() {
		if pm == nil || pm.Pod == nil || helpers.NonBEPodFilter(pm.Pod) ||
			pm.Pod.Status.Phase == corev1.PodSucceeded || pm.Pod.Status.Phase == corev1.PodFailed {
			continue
		}
		if r := util.GetPodBEMilliCPURequest(pm.Pod); r > 0 {
			be.Request += r * perMilli
		}
		be.Usage += int64(podUsage[string(pm.Pod.UID)] * float64(perCore))
	}
	return be, yarnSide
}

// budgetReader is the cgroup reader upstream's strategy gets: while the
// budget is divided, the besteffort cgroup's quota reads as the whole budget
// (what upstream last wrote), so that upstream's bypass and step-up rules
// act on the budget it computed and not on the BE pods' part of it.
type budgetReader struct {
	resourceexecutor.CgroupReader
	s *Strategy
}

// ReadCPUQuota reads dir's cfs quota; the besteffort cgroup's reads as the
// budget while the budget is divided.
func (r *budgetReader) ReadCPUQuota(dir string) (int64, error) {
	q, err := r.CgroupReader.ReadCPUQuota(dir)
	if err != nil || dir != koordletutil.GetPodQoSRelativePath(corev1.PodQOSBestEffort) {
		return q, err
	}
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	if a := r.s.applied; a.be > 0 && q == a.be {
		return a.budget, nil
	}
	return q, nil
}

func orInf(quota int64) int64 {
	if quota <= 0 {
		return math.MaxInt64
	}
	return quota
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
