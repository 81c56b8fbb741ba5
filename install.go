// Package koordletyarn is the one entry point of the koordlet-yarn plugin
// set: Install wires it into koordlet's own registries — the feature gates,
// flags, the statesinformer plugin, the qosmanager strategies, the handle
// capture and the debug endpoint. A custom koordlet build calls Install
// before it parses its flags (see cmd/koordlet). The framework packages
// below it hold only what every layer shares; imports point one way:
// this package → plugins, collectors, hooks → framework.
package koordletyarn

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/koordinator-sh/koordinator/cmd/koordlet/options"
	koordmetrics "github.com/koordinator-sh/koordinator/pkg/koordlet/metrics"
	qmplugins "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/plugins"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer/impl"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/cgroupwatch"
	"github.com/koordlet-yarn/koordlet-yarn/collectors/lsslo"
	"github.com/koordlet-yarn/koordlet-yarn/collectors/lswait"
	"github.com/koordlet-yarn/koordlet-yarn/collectors/yarnusage"
	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/config"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/handles"
	"github.com/koordlet-yarn/koordlet-yarn/framework/policy"
	"github.com/koordlet-yarn/koordlet-yarn/framework/rmrelease"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/version"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/hooks/yarnadopt"
	"github.com/koordlet-yarn/koordlet-yarn/hooks/yarnmemcg"
	"github.com/koordlet-yarn/koordlet-yarn/hooks/yarnqos"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/kill"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/relief"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarninformer"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarninterference"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnledger"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnpolicy"
)

// Framework is the installed plugin set.
type Framework struct {
	Config   *config.Config
	Store    *store.Store
	Handles  *handles.Handles
	Informer *yarninformer.Plugin
	Usage    *yarnusage.Collector
	QoS      *yarnqos.Applier
	Watch    *cgroupwatch.Watcher
	Ledger   *yarnledger.Ledger
	// staleEntry removes the ledger's entry with YARNBatchLedger off.
	staleEntry *yarnledger.StaleEntry
	// quota is the one writer of the YARN root's cfs quota, shared by BE
	// suppress and its gate-off restorer.
	quota *cgroups.RootQuota
	// relief is the memory relief's rungs (YARNMemoryRelief), shared by
	// the memory evict strategy and its restorer.
	relief *relief.Relief
	// lsWait measures the LS pods' CPU wait (YARNLSCPUWait), the signal of
	// the interference controller.
	lsWait *lswait.Collector
	// interference is the interference controller (YARNInterferenceControl).
	interference *yarninterference.Controller
	// sloSignal gives the LS pods' declared latency SLOs (collectors/lsslo,
	// YARNLSSLOControl), a constraint of the interference controller (nil:
	// not installed).
	sloSignal func() (lsslo.Signal, bool)
	// Policy is the YARN QoS policy loop; policy the resolver it binds,
	// shared by the evict strategies, the QoS appliers and the endpoint.
	Policy *yarnpolicy.Plugin
	policy *policy.Resolver

	kill killParts

	memcg *yarnmemcg.Applier
	// adopt gives containers without YARN cgroups their own.
	adopt *yarnadopt.Adopter

	loops []Loop
	rm    rmParts

	flags cliFlags
}

// rmParts are the ResourceManager's side: the client, the capacity push
// and the release asked of the RM.
type rmParts struct {
	client rmClient
	sync   *yarnledger.RMSync
	// release is the release asked of the ResourceManager
	// (YARNRMPreemption): the RM sync writes it, the evictor waits for it.
	release *rmrelease.Window
}

// killParts are the eviction's kill mechanism, shared by the evict
// strategies, the orphan killer and koordlet's shutdown.
type killParts struct {
	// flights coordinates kills across the evict strategies and
	// koordlet's shutdown; journal records kills in progress on the
	// containers' cgroups so that a restarted koordlet finishes them.
	flights *kill.Flights
	journal *kill.Journal
	// audit records every eviction (/yarn/evictions, the audit file).
	audit *kill.Audit
}

// cliFlags are the flags that make koordlet do one thing and exit.
type cliFlags struct {
	// preflight is --yarn-preflight; preflightOutput its format.
	preflight       bool
	preflightOutput string
	// version is --version.
	version bool
	// policyCheck is --yarn-qos-policy-check.
	policyCheck string
}

// Install registers the plugin set into koordlet's registries and its flags
// on fs. Call it once, before the flags are parsed and before koordlet's
// daemon is created; then call Validate after parsing.
func Install(fs *flag.FlagSet) (*Framework, error) {
	return install(fs, koordmetrics.ExternalRegistry)
}

// install is Install with the Prometheus registerer of every koordlet_yarn_*
// series (koordlet's external registry; a test's own to list them).
func install(fs *flag.FlagSet, reg prometheus.Registerer) (*Framework, error) {
	if err := features.Register(); err != nil {
		return nil, fmt.Errorf("register koordlet-yarn feature gates: %w", err)
	}
	cfg := config.NewDefault()
	cfg.InitFlags(fs)

	fw := &Framework{Config: cfg, Store: store.New(), Handles: &handles.Handles{},
		kill: killParts{flights: kill.NewFlights(evictedKeep), journal: kill.NewJournal()}, policy: policy.NewResolver(nil, nil),
		quota: cgroups.NewRootQuota()}
	fw.kill.audit = kill.NewAudit(func() string { return cfg.EvictAuditFile }, kill.DefaultAuditKeep, kill.DefaultAuditMaxMiB)
	fw.initPreflightFlag(fs)
	fw.initVersionFlag(fs)
	fw.initPolicyCheckFlag(fs)
	if err := registerBuildInfo(reg, version.Get()); err != nil {
		return nil, fmt.Errorf("register the build info metric: %w", err)
	}
	fw.Informer = yarninformer.New(cfg, fw.Store, fw.Handles.Pods)

	usageMetrics, err := yarnusage.NewMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("register YARN usage metrics: %w", err)
	}
	// What containers adopted while holding memory left charged to the NM
	// pod: the adopter records it, the collector and memory evict read it.
	charges := cgroups.NewLeftCharges()
	fw.Usage = yarnusage.New(yarnusage.Options{
		Store:       fw.Store,
		Charges:     charges,
		Reader:      nil, // koordlet's reader for this host's cgroup version
		MetricCache: fw.Handles.MetricCache,
		Interval:    fw.Handles.CollectInterval,
		NodeSLO:     fw.Handles.NodeSLO,
		Hierarchy:   fw.Informer.HierarchyDir,
		Metrics:     usageMetrics,
		NodeName:    os.Getenv("NODE_NAME"),
		// The processes of containers without a memory cgroup are read
		// through the informer's hierarchy (koordlet's cgroup namespace).
		CgroupHierarchy: fw.Informer.Hierarchy,
		SeriesMode:      func() string { return cfg.ContainerMetrics },
		// The NodeManager the informer's last resync resolved (configured
		// or found among the node's pods).
		NodeManagerPresent: func() bool { return fw.Informer.Status().NMEndpoint != "" },
		// The NodeManager pod's cgroup bounds what a moved container left
		// charged there (a restart's recheck).
		NMPodCgroup: fw.Informer.NodeManagerPodCgroup,
	})
	// The series of the packages that do not label their own get the
	// node label every other koordlet_yarn_* series carries.
	nodeReg := prometheus.WrapRegistererWith(prometheus.Labels{"node": os.Getenv("NODE_NAME")}, reg)
	if fw.Informer.NMMetrics, err = yarn.NewNMMetrics(nodeReg); err != nil {
		return nil, fmt.Errorf("register NodeManager answer metrics: %w", err)
	}
	fw.QoS = yarnqos.New(yarnqos.Options{Store: fw.Store, StatesInformer: fw.Handles.StatesInformer,
		Hierarchy: fw.Informer.HierarchyDir, Locate: fw.Informer.Hierarchy, Interval: cfg.QoSReconcileInterval, Registerer: nodeReg,
		Policy: fw.policy})
	fw.Watch = cgroupwatch.New(cgroupwatch.Options{Store: fw.Store, Hierarchy: fw.Informer.Hierarchy, ResyncInterval: cfg.ResyncInterval, Resync: fw.Informer.RequestResync, Registerer: nodeReg})
	fw.Informer.AfterFirstSync = func(stopCh <-chan struct{}) {
		go fw.recoverKills() // off the start-up path, bounded (MaxRecoverTime)
		fw.Watch.Run(stopCh)
	}
	fw.loops = append(fw.loops, fw.Usage, fw.QoS)
	fw.memcg = yarnmemcg.New(yarnmemcg.Options{Store: fw.Store, Hierarchy: fw.Informer.Hierarchy, Interval: cfg.QoSReconcileInterval, Registerer: nodeReg})
	fw.loops = append(fw.loops, fw.memcg)
	fw.adopt = yarnadopt.New(yarnadopt.Options{Store: fw.Store, Hierarchy: fw.Informer.Hierarchy, NMPodCgroup: fw.Informer.NodeManagerPodCgroup,
		ListNM: fw.Informer.ListNM, ScanInterval: cfg.ContainerCgroupsScanInterval, Registerer: nodeReg, Charges: charges, Kill: fw.killOrphan})
	fw.loops = append(fw.loops, fw.adopt)

	if fw.Policy, err = yarnpolicy.New(yarnpolicy.Options{Store: fw.Store, Resolver: fw.policy,
		File: func() string { return cfg.QoSPolicyFile }, RM: fw.RMClient, RMTimeout: func() time.Duration { return cfg.RM.Timeout },
		Reapply: fw.reapplyQoS, NMPriority: fw.Informer.NodeManagerPriority, Interval: 5 * time.Second, Registerer: reg, NodeName: os.Getenv("NODE_NAME"),
		PerContainerSeries: func() bool { return cfg.ContainerMetrics == config.ContainerMetricsContainer }}); err != nil {
		return nil, fmt.Errorf("register YARN QoS policy metrics: %w", err)
	}
	fw.loops = append(fw.loops, fw.Policy)

	if err := fw.installSLO(nodeReg); err != nil {
		return nil, err
	}
	if err := fw.installInterference(nodeReg); err != nil {
		return nil, err
	}

	if err := fw.installLedger(reg); err != nil {
		return nil, fmt.Errorf("install the YARN batch ledger: %w", err)
	}

	if err := fw.installSuppress(nodeReg); err != nil {
		return nil, err
	}
	if err := fw.installEviction(reg, charges); err != nil {
		return nil, err
	}

	impl.DefaultPluginRegistry[yarninformer.Name] = fw.Informer
	qmplugins.StrategyPlugins[StrategyName] = fw.newLoopRunner
	options.RegisterHTTPHandler(ContainersPath, fw.containersHandler)
	options.RegisterHTTPHandler(EvictionsPath, fw.evictionsHandler)
	if err := fw.registerRestoreMetric(reg); err != nil {
		return nil, fmt.Errorf("register the restore metric: %w", err)
	}
	options.RegisterHTTPHandler(RestorePath, fw.restoreHandler)
	return fw, nil
}

// reapplyQoS applies the QoS (with its policy tier) to the containers
// again, after a policy reload or when their application's data came.
func (fw *Framework) reapplyQoS(cs []*store.Container) {
	if !fw.QoS.Enabled() {
		return
	}
	for _, c := range cs {
		fw.QoS.Apply(c)
	}
}

// killer returns the YARN container killer, or nil before the informer
// knows the hierarchy.
func (fw *Framework) killer() *kill.Killer {
	h, ok := fw.Informer.Hierarchy()
	if !ok {
		return nil
	}
	return &kill.Killer{H: h, Grace: fw.Config.EvictGracePeriod, Flights: fw.kill.flights, Journal: fw.kill.journal}
}

// killOrphan ends what runs on in the cgroup koordlet made for a YARN
// container no NodeManager lists any more (its NM pod crashed or went):
// the eviction killer, which signals only the processes verified in it.
func (fw *Framework) killOrphan(name string) error {
	k := fw.killer()
	c, ok := fw.Store.Get(name)
	if k == nil || !ok {
		return fmt.Errorf("container %s: not known to the store (or no hierarchy yet)", name)
	}
	_, err := k.KillFor(c, "listed by no NodeManager (its NodeManager pod is gone)")
	return err
}

// evictedKeep is how long an evicted container is kept out of the victim
// lists (the store drops it at the next resync once the NM removes it).
const evictedKeep = 2 * time.Minute

// recoverKills finishes the kills a koordlet that died mid-kill left, once
// the store is filled.
func (fw *Framework) recoverKills() {
	if k := fw.killer(); k != nil {
		k.Recover(fw.Store.Snapshot(), time.Now().Add(kill.MaxRecoverTime))
	}
}

// Shutdown waits, up to timeout, for the kills in flight to end, so that
// koordlet's exit does not cut one short. main calls it after koordlet's
// daemon has returned.
func (fw *Framework) Shutdown(timeout time.Duration) {
	if fw.interference != nil {
		fw.interference.Stop() // BE suppress's threshold back to the NodeSLO's first
	}
	if fw.relief.Enabled() {
		// A memory.high left low would stall batch with nobody to raise
		// it (the next koordlet takes a crashed one's over from its record).
		fw.relief.Release("koordlet stops", false)
	}
	rmDone := make(chan struct{})
	go func() { // the RM sync ends, beside the kills (the capacity stays pushed: RMSync.Stop)
		defer close(rmDone)
		if fw.rm.sync != nil {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			fw.rm.sync.Stop(ctx)
		}
	}()
	defer func() { <-rmDone }()
	if !fw.kill.flights.Wait(timeout) {
		klog.Warningf("yarn: koordlet exits with a kill in flight; the next koordlet finishes it")
	}
}

// ShutdownTimeout bounds Shutdown: one kill's grace period and its exit wait.
func (fw *Framework) ShutdownTimeout() time.Duration {
	return fw.Config.EvictGracePeriod + 6*time.Second
}

// Validate checks the parsed flags.
func (fw *Framework) Validate() error {
	if err := fw.Config.Validate(); err != nil {
		return err
	}
	// The loops were built at Install, before the flags were parsed: give
	// them the parsed intervals.
	fw.QoS.SetInterval(fw.Config.QoSReconcileInterval)
	fw.memcg.SetInterval(fw.Config.QoSReconcileInterval)
	fw.adopt.SetScanInterval(fw.Config.ContainerCgroupsScanInterval)
	fw.Watch.SetResyncInterval(fw.Config.ResyncInterval)
	fw.lsWait.SetInterval(fw.Config.Interference.Interval)
	return nil
}
