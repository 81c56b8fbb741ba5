package koordletyarn

import (
	"fmt"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	qmplugins "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/plugins"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/plugins/cpuevict"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/plugins/memoryevict"
	qmutil "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/plugins/util"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/relief"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnledger"
)

// installEviction builds the memory relief and the evict strategies
// (koordlet's memory and CPU evict replaced), their restorer and the
// eviction guard. charges is what adopted containers left charged to the
// NodeManager pod.
func (fw *Framework) installEviction(reg prometheus.Registerer, charges *cgroups.LeftCharges) error {
	cfg := fw.Config
	evictMetrics, err := yarnevict.NewMetrics(reg)
	if err != nil {
		return fmt.Errorf("register YARN eviction metrics: %w", err)
	}
	fw.relief = &relief.Relief{High: cgroups.NewRootMemoryHigh(), Soft: cgroups.NewRootSoftLimit(),
		BandPercent: func() int64 { return cfg.MemoryThrottleBandPercent }, Metrics: evictMetrics.Relief, NodeName: os.Getenv("NODE_NAME"),
		// The RM rung: asks go through the RM sync's over-commit push.
		RM:      fw.rm.release,
		RMReady: func() bool { return fw.rm.sync.AsksRelease() },
		RMDelay: func() time.Duration {
			return yarnledger.ReleaseDelay(cfg.Ledger.RMSyncInterval, cfg.RM.Timeout, cfg.Ledger.RMPreemptionTimeout,
				cfg.Ledger.RMPreemptionGrace, fw.rm.sync.Status().PreemptionGrace)
		},
		Allocated: func() int64 { v, _ := fw.Ledger.View(); return v.YARNAllocated.MemoryMiBCeil() },
		Audit:     fw.kill.audit}
	evictDeps := yarnevict.Deps{
		Store:            fw.Store,
		Killer:           fw.killer,
		IsNodeManagerPod: fw.Informer.IsNodeManagerPod,
		Metrics:          evictMetrics,
		Audit:            fw.kill.audit,
		NodeName:         os.Getenv("NODE_NAME"),
		Hierarchy:        fw.Informer.HierarchyDir,
		CgroupHierarchy:  fw.Informer.Hierarchy,
		Charges:          charges,
		Policy:           fw.policy,
		Relief:           fw.relief,
		RMRelease:        fw.rm.release,
		RMSyncDelay: func() time.Duration {
			return yarnledger.NoticeDelay(fw.rm.sync.Enabled(), cfg.Ledger.RMSyncInterval, cfg.RM.Timeout)
		},
	}
	qmplugins.StrategyPlugins[memoryevict.MemoryEvictName] = yarnevict.NewMemoryEvictFactory(evictDeps)
	qmplugins.StrategyPlugins[cpuevict.CPUEvictName] = yarnevict.NewCPUEvictFactory(evictDeps)
	fw.loops = append(fw.loops, &relief.ReliefRestorer{Relief: fw.relief, Hierarchy: fw.Informer.HierarchyDir})
	qmutil.SetCustomEvictionExecutorInitializer(yarnevict.GuardInitializer(evictDeps))
	return nil
}
