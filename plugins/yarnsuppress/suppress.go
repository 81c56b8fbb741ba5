// Package yarnsuppress makes koordlet's BE CPU suppress YARN-aware. It runs
// upstream's own cpuSuppress strategy (one formula, one set of NodeSLO knobs)
// on a view of the node in which the YARN containers are a BE host
// application, so their usage is BE usage and never "system" usage in
//
//	suppress(BE) = capacity × cpuSuppressThresholdPercent − nonBE pods − nonBE host apps − system
//
// and, when the YARN hierarchy is not below the besteffort cgroup, it binds
// the YARN hierarchy by the same cfs quota the besteffort cgroup gets.
package yarnsuppress

import (
	"path/filepath"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/koordinator-sh/koordinator/apis/extension"
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	qmframework "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/framework"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/plugins/cpusuppress"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/resourceexecutor"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	koordletutil "github.com/koordinator-sh/koordinator/pkg/koordlet/util"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/yarnusage"
	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
)

// Deps wire the strategy to the framework.
type Deps struct {
	// Hierarchy returns the YARN hierarchy dir ("" when unknown).
	Hierarchy func() string
}

// NewFactory returns the factory for koordlet's "cpuSuppress" slot: when
// YARNBECPUSuppress is on, upstream's strategy on the YARN-aware view plus
// the YARN hierarchy binding; upstream's strategy otherwise.
func NewFactory(deps Deps) qmframework.QOSStrategyFactory {
	return func(opts *qmframework.Options) qmframework.QOSStrategy {
		if !features.Enabled(features.YARNBECPUSuppress) {
			return cpusuppress.New(opts)
		}
		view := *opts
		view.StatesInformer = &View{StatesInformer: opts.StatesInformer, Hierarchy: deps.Hierarchy}
		return &Strategy{inner: cpusuppress.New(&view), opts: opts, deps: deps,
			interval: time.Duration(opts.Config.CPUSuppressIntervalSeconds) * time.Second}
	}
}

// View is koordlet's states informer with the YARN containers declared as a
// BE host application in the NodeSLO (unless the NodeSLO already covers the
// YARN hierarchy with a BE host application). The host application's usage
// is the collector's all-YARN aggregate.
type View struct {
	statesinformer.StatesInformer
	Hierarchy func() string
}

// GetNodeSLO returns the NodeSLO with the YARN host application added.
func (v *View) GetNodeSLO() *slov1alpha1.NodeSLO {
	slo := v.StatesInformer.GetNodeSLO()
	if slo == nil || v.Hierarchy == nil {
		return slo
	}
	h := v.Hierarchy()
	if h == "" || yarnusage.CheckAccounting(slo, h).AsBE {
		return slo
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

// Strategy is upstream's cpuSuppress run on the View, plus the binding of a
// YARN hierarchy outside the besteffort cgroup.
type Strategy struct {
	inner    qmframework.QOSStrategy
	opts     *qmframework.Options
	deps     Deps
	interval time.Duration
	executor resourceexecutor.ResourceUpdateExecutor
	once     sync.Once
	lastSet  string
}

// Enabled follows koordlet's BECPUSuppress gate: one knob for operators.
func (s *Strategy) Enabled() bool { return s.inner.Enabled() }

// Setup passes koordlet's context to upstream's strategy.
func (s *Strategy) Setup(ctx *qmframework.Context) { s.inner.Setup(ctx) }

// Run starts upstream's loop and the binding loop.
func (s *Strategy) Run(stopCh <-chan struct{}) {
	s.inner.Run(stopCh)
	s.executor = resourceexecutor.NewResourceUpdateExecutor()
	s.executor.Run(stopCh)
	go wait.Until(s.BindYARN, s.interval, stopCh)
}

// BindYARN copies the besteffort cgroup's cfs quota (what upstream's
// suppress set, or -1) onto the YARN hierarchy root when that root is not
// below besteffort. It writes only through koordlet's resource executor and
// only when the value changed.
func (s *Strategy) BindYARN() {
	h := s.deps.Hierarchy()
	if !cgroups.OutsideBestEffort(h) {
		return
	}
	s.once.Do(func() {
		klog.Infof("yarn: the YARN hierarchy %s is outside the besteffort cgroup; binding it by the BE cfs quota", h)
	})
	be := koordletutil.GetPodQoSRelativePath(corev1.PodQOSBestEffort)
	quota, err := resourceexecutor.NewCgroupReader().ReadCPUQuota(be)
	if err != nil {
		klog.V(4).Infof("yarn: read the besteffort cfs quota: %v", err)
		return
	}
	value := strconv.FormatInt(quota, 10)
	if value == s.lastSet {
		return
	}
	updater, err := resourceexecutor.DefaultCgroupUpdaterFactory.New(system.CPUCFSQuotaName, h, value, nil)
	if err != nil {
		klog.V(4).Infof("yarn: cfs quota updater for %s: %v", h, err)
		return
	}
	if _, err := s.executor.Update(true, updater); err != nil {
		klog.Warningf("yarn: bind the YARN hierarchy %s to cfs quota %s: %v", h, value, err)
		return
	}
	s.lastSet = value
	klog.V(3).Infof("yarn: YARN hierarchy %s cfs quota set to %s (the besteffort cgroup's)", h, value)
}
