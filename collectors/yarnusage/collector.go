// Package yarnusage is the per-container YARN usage collector: every
// collect interval it measures each YARN container's CPU (cores, from
// cpuacct deltas), memory (with and without page cache, koordlet's
// semantics; for a container without a memory cgroup of its own, the sum
// of its processes' RSS) and CPU throttling, writes them to koordlet's metric cache under
// the container kinds koordlet uses for pod containers (keyed by the
// container id), adds an all-YARN aggregate, and exports koordlet_yarn_*
// Prometheus series.
package yarnusage

import (
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/metriccache"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/config"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/logonce"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// AggregateName is the host-application name under which the sum over all
// YARN containers is stored in koordlet's metric cache (HostApp* kinds).
// It is not a NodeSLO host application, so upstream's accounting ignores it.
const AggregateName = "yarn-containers"

// Options wire the collector to koordlet.
type Options struct {
	Store *store.Store
	// Reader reads the usage files; nil means a reader of koordlet's
	// cgroup root and version, made at the first cycle.
	Reader *cgroups.UsageReader
	// MetricCache returns koordlet's metric cache (nil until koordlet has one).
	MetricCache func() metriccache.MetricCache
	// Interval returns the collect interval (koordlet's --collect-res-used-interval).
	Interval func() time.Duration
	// NodeSLO returns the node's NodeSLO; Hierarchy the YARN hierarchy dir.
	NodeSLO   func() *slov1alpha1.NodeSLO
	Hierarchy func() string
	// CgroupHierarchy returns the YARN hierarchy (proc root, cgroup
	// namespace) for reading the processes of containers without a memory
	// cgroup; ok is false until it is known. nil means koordlet's cgroup
	// and proc roots.
	CgroupHierarchy func() (cgroups.Hierarchy, bool)
	Metrics         *Metrics
	NodeName        string
	// SeriesMode returns --yarn-container-metrics (config.ContainerMetrics*);
	// nil: per container.
	SeriesMode func() string
	// NodeManagerPresent reports whether a NodeManager runs here (its pod
	// found or an endpoint configured); nil: only when containers are
	// known. The accounting series is exported only then.
	NodeManagerPresent func() bool
	// Charges records the containers whose processes were moved into
	// their memory cgroup holding memory that stayed charged where they
	// came from (YARNContainerCgroups adopting a running container); nil:
	// none. Such a container is measured by cgroups.TrueMemory until its
	// charge is its own.
	Charges *cgroups.LeftCharges
	// NMPodCgroup returns the NodeManager pod's cgroup relative to the
	// mount root and the pod's name (the adopter's Options.NMPodCgroup);
	// ok is false when no NodeManager pod is known; nil: none. Memory a
	// container koordlet moved left behind is charged there, so what that
	// cgroup is charged bounds it.
	NMPodCgroup func() (dir, pod string, ok bool)
}

// appKey identifies an application's series.
type appKey struct{ app, user string }

// appUsage sums an application's containers in one cycle.
type appUsage struct {
	cpu, mem, cpuReq, memReq, containers float64
}

// series are a container's Prometheus children and metric-cache properties,
// made once per label set so that a cycle does not hash label values.
type series struct {
	labels                                     []string
	props                                      map[metriccache.MetricProperty]string
	cpu, mem, memPC, throttled, cpuReq, memReq prometheus.Gauge
}

type prev struct {
	// dir is the container's own cgroup dir, whose files the reader keeps open.
	dir         string
	at          time.Time
	cpu         uint64
	hasCPU      bool
	throttle    system.CPUStatRaw
	hasThrottle bool
	// procs are the processes' CPU times at at, for a container whose
	// cpu cgroup has no cpuacct (hasProcs: read once).
	procs    map[int]cgroups.ProcessTicks
	hasProcs bool
	// memDir is the own memory cgroup last checked for memory charged
	// elsewhere (recheckMoved).
	memDir string
}

// Collector is the YARN usage collector.
type Collector struct {
	opts    Options
	prev    map[string]*prev
	series  map[string]*series
	samples []metriccache.MetricSample

	// said holds the conditions already logged.
	said logonce.Set
	// bootTime is the node's boot time (process start times count from it).
	bootTime time.Time

	// procMem reads the processes of containers without a memory cgroup;
	// mem records the memory accounting used.
	procMem *cgroups.ProcessMemoryReader
	mem     memoryAccounting

	accMu            sync.Mutex
	accounting       Accounting
	accountingLogged bool

	// mode is the series mode of the last cycle; discard takes the
	// per-container values when they are not exported; apps are the
	// applications exported at the last cycle (mode application).
	mode    string
	discard prometheus.Gauge
	apps    map[appKey]*appUsage
}

// New returns a collector.
func New(opts Options) *Collector {
	return &Collector{opts: opts, prev: map[string]*prev{}, series: map[string]*series{},
		discard: prometheus.NewGauge(prometheus.GaugeOpts{Name: "discarded"}), apps: map[appKey]*appUsage{}}
}

// seriesMode is the --yarn-container-metrics value in force.
func (c *Collector) seriesMode() string {
	if c.opts.SeriesMode == nil {
		return config.ContainerMetricsContainer
	}
	return c.opts.SeriesMode()
}

// Name names the loop in logs.
func (c *Collector) Name() string { return "YARN usage collector" }

// Enabled reports the YARNMetricsCollector gate.
func (c *Collector) Enabled() bool { return features.Enabled(features.YARNMetricsCollector) }

// Run collects every interval until stopCh closes; it returns at once.
func (c *Collector) Run(stopCh <-chan struct{}) {
	interval := c.opts.Interval()
	if interval <= 0 {
		interval = time.Second
	}
	go func() {
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		defer c.Close()
		for {
			c.safeCollect()
			select {
			case <-stopCh:
				return
			case <-ticker.C:
			}
		}
	}()
}

func (c *Collector) safeCollect() {
	defer func() {
		if r := recover(); r != nil {
			klog.Errorf("yarn: usage collection panicked, skipping this cycle: %v", r)
		}
	}()
	c.Collect(time.Now())
}

// Close releases the files the collector keeps open.
func (c *Collector) Close() {
	if c.opts.Reader != nil {
		c.opts.Reader.Close()
	}
	if c.procMem != nil {
		c.procMem.Close()
	}
}

// Cycle summarises one collection.
type Cycle struct {
	Containers int // containers with a cgroup
	Samples    int // samples written to the metric cache
}

// LastAccounting returns the last accounting check; ok is false before the
// first check.
func (c *Collector) LastAccounting() (acc Accounting, ok bool) {
	c.accMu.Lock()
	defer c.accMu.Unlock()
	return c.accounting, c.accountingLogged
}

// Collect runs one cycle at now. It is not safe for concurrent use.
func (c *Collector) Collect(now time.Time) Cycle {
	start := time.Now()
	if c.opts.Reader == nil {
		c.opts.Reader = cgroups.NewUsageReader(system.Conf.CgroupRootDir, system.GetCurrentCgroupVersion() == system.CgroupVersionV2)
	}
	reader := c.opts.Reader
	if mode := c.seriesMode(); mode != c.mode {
		if c.mode != "" {
			c.opts.Metrics.resetPerContainer()
			clear(c.series)
			clear(c.apps)
		}
		c.mode = mode
	}
	apps := map[appKey]*appUsage{}
	snapshot := c.opts.Store.Snapshot()
	samples := c.samples[:0]
	var cyc Cycle
	var aggCPU, aggMem, aggMemPC float64
	var haveCPU, haveMem bool
	states := map[string]float64{}
	withoutCgroup := 0.0
	live := make(map[string]struct{}, len(snapshot))
	leftCharges := c.opts.Charges.Len() > 0
	// koordlet moves processes into memory cgroups with these gates.
	recheck := c.opts.Charges != nil && (features.Enabled(features.YARNContainerCgroups) || features.Enabled(features.YARNMemoryCgroup))
	for _, ct := range snapshot {
		state := ct.State
		if state == "" {
			state = "UNKNOWN"
		}
		states[state]++
		if !ct.HasCgroup() {
			if ct.Source&store.SourceNM != 0 && ct.State == yarn.StateRunning {
				withoutCgroup++
			}
			continue
		}
		cyc.Containers++
		live[ct.Name] = struct{}{}
		sr := c.seriesOf(ct)
		sr.cpuReq.Set(float64(ct.RequestMilliCPU) / 1000)
		sr.memReq.Set(float64(ct.RequestMemoryBytes))
		var app *appUsage
		if c.mode == config.ContainerMetricsApplication {
			k := appKey{ct.ApplicationID, ct.User}
			if app = apps[k]; app == nil {
				app = &appUsage{}
				apps[k] = app
			}
			app.containers++
			app.cpuReq += float64(ct.RequestMilliCPU) / 1000
			app.memReq += float64(ct.RequestMemoryBytes)
		}
		p := c.prev[ct.Name]
		if p == nil {
			p = &prev{}
			c.prev[ct.Name] = p
		}
		props := sr.props
		p.dir = ct.Cgroups[cgroups.CPU].Dir
		if !ct.Cgroups[cgroups.CPU].Owned {
			p.dir = ct.Cgroups[cgroups.Memory].Dir
		}

		addCPU := func(cores float64) {
			samples = appendSample(samples, metriccache.ContainerCPUUsageMetric, props, now, cores)
			sr.cpu.Set(cores)
			if app != nil {
				app.cpu += cores
			}
			aggCPU += cores
			haveCPU = true
		}
		if !ct.Cgroups[cgroups.CPUAcct].Owned && ct.Cgroups[cgroups.CPU].Owned {
			// cpu and cpuacct mounted apart, YARN managing cpu only (the
			// LCE's CgroupsLCEResourcesHandler makes no cpuacct cgroup):
			// the CPU time of the processes in its cpu cgroup.
			if c.said.First("no-cpuacct") {
				klog.Infof("yarn: container %s has its own cpu cgroup but no cpuacct cgroup (cpu and cpuacct are mounted apart and YARN manages only cpu); its CPU usage is its processes' CPU time (/proc/<pid>/stat; processes that live less than a collect interval are missed)", ct.Name)
			}
			if cores, ok := c.processCPU(ct, p, now); ok {
				addCPU(cores)
			}
		}
		if ref := ct.Cgroups[cgroups.CPUAcct]; ref.Owned {
			usage, err := reader.CPUUsage(ref.Dir)
			switch {
			case err != nil:
				c.readFailed(ct, "cpuacct usage", err)
			case p.hasCPU && usage >= p.cpu && now.After(p.at):
				addCPU(float64(usage-p.cpu) / float64(now.Sub(p.at)))
				fallthrough
			default:
				p.cpu, p.at, p.hasCPU = usage, now, true
			}
		}
		var usage, withPC float64
		var haveCtMem bool
		switch acc := ct.Cgroups.MemoryAccounting(); acc {
		case cgroups.MemoryByCgroup:
			c.noteMemoryAccounting(ct, acc)
			stat, err := reader.MemoryStat(ct.Cgroups[cgroups.Memory].Dir)
			if err != nil {
				c.readFailed(ct, "memory.stat", err)
			} else {
				usage, withPC, haveCtMem = float64(stat.Usage()), float64(stat.UsageWithPageCache()), true
				// A memory cgroup new to the collector (first sight, or
				// made for a container measured by its processes so far).
				newMemcg := recheck && p.memDir != ct.Cgroups[cgroups.Memory].Dir
				if newMemcg {
					p.memDir = ct.Cgroups[cgroups.Memory].Dir
					c.recheckMoved(ct, stat.Usage())
				}
				if leftCharges || newMemcg {
					if tr, ok := c.chargedElsewhere(ct, stat.Usage()); ok {
						usage, withPC = float64(tr.Usage), withPC+float64(tr.Elsewhere)
					}
				}
			}
		case cgroups.MemoryByProcesses:
			// No memory cgroup of its own: its memory is charged to the
			// NodeManager pod's; sum its processes.
			c.noteMemoryAccounting(ct, acc)
			if pm, ok := c.processMemory(ct); ok {
				usage, withPC, haveCtMem = float64(pm.Usage()), float64(pm.UsageWithPageCache()), true
			}
		}
		if haveCtMem {
			samples = appendSample(samples, metriccache.ContainerMemUsageMetric, props, now, usage)
			samples = appendSample(samples, metriccache.ContainerMemoryUsageWithPageCacheMetric, props, now, withPC)
			sr.mem.Set(usage)
			sr.memPC.Set(withPC)
			if app != nil {
				app.mem += usage
			}
			aggMem += usage
			aggMemPC += withPC
			haveMem = true
		}
		if ref := ct.Cgroups[cgroups.CPU]; ref.Owned {
			stat, err := reader.CPUStat(ref.Dir)
			if err != nil {
				c.readFailed(ct, "cpu.stat", err)
			} else {
				if p.hasThrottle && stat.NrPeriods >= p.throttle.NrPeriods {
					ratio := system.CalcCPUThrottledRatio(&stat, &p.throttle)
					samples = appendSample(samples, metriccache.ContainerCPUThrottledMetric, props, now, ratio)
					sr.throttled.Set(ratio)
				}
				p.throttle, p.hasThrottle = stat, true
			}
		}
	}
	c.forgetGone(live)
	c.publishMemoryAccounting()

	agg := metriccache.MetricPropertiesFunc.HostApplication(AggregateName)
	if haveCPU {
		samples = appendSample(samples, metriccache.HostAppCPUUsageMetric, agg, now, aggCPU)
	}
	if haveMem {
		samples = appendSample(samples, metriccache.HostAppMemoryUsageMetric, agg, now, aggMem)
		samples = appendSample(samples, metriccache.HostAppMemoryUsageWithPageCacheMetric, agg, now, aggMemPC)
	}
	cyc.Samples = len(samples)
	c.commit(samples)
	clear(samples)
	c.samples = samples[:0]

	m := c.opts.Metrics
	if haveCPU || cyc.Containers == 0 {
		m.TotalCPUUsage.WithLabelValues(c.opts.NodeName).Set(aggCPU)
	}
	if haveMem || cyc.Containers == 0 {
		m.TotalMemoryUsage.WithLabelValues(c.opts.NodeName).Set(aggMem)
	}
	if c.opts.Charges != nil {
		m.ChargedToNodeManager.WithLabelValues(c.opts.NodeName).Set(float64(c.mem.last.ChargedToNodeManagerBytes))
	}
	c.publishApplications(apps)
	m.Containers.Reset()
	for state, n := range states {
		m.Containers.WithLabelValues(c.opts.NodeName, state).Set(n)
	}
	m.WithoutCgroup.WithLabelValues(c.opts.NodeName).Set(withoutCgroup)
	c.checkAccounting(len(snapshot) > 0 || (c.opts.NodeManagerPresent != nil && c.opts.NodeManagerPresent()))
	m.CollectDuration.WithLabelValues(c.opts.NodeName).Set(time.Since(start).Seconds())
	return cyc
}

// publishApplications sets the per-application series of this cycle and
// deletes those of applications no longer on the node.
func (c *Collector) publishApplications(apps map[appKey]*appUsage) {
	m := c.opts.Metrics
	for k := range c.apps {
		if _, ok := apps[k]; !ok {
			for _, g := range []*prometheus.GaugeVec{m.AppCPUUsage, m.AppMemoryUsage, m.AppCPURequest, m.AppMemoryRequest, m.AppContainers} {
				g.DeleteLabelValues(c.opts.NodeName, k.app, k.user)
			}
		}
	}
	for k, a := range apps {
		labels := []string{c.opts.NodeName, k.app, k.user}
		m.AppCPUUsage.WithLabelValues(labels...).Set(a.cpu)
		m.AppMemoryUsage.WithLabelValues(labels...).Set(a.mem)
		m.AppCPURequest.WithLabelValues(labels...).Set(a.cpuReq)
		m.AppMemoryRequest.WithLabelValues(labels...).Set(a.memReq)
		m.AppContainers.WithLabelValues(labels...).Set(a.containers)
	}
	c.apps = apps
}

func appendSample(samples []metriccache.MetricSample, kind metriccache.MetricResource, props map[metriccache.MetricProperty]string, at time.Time, v float64) []metriccache.MetricSample {
	s, err := kind.GenerateSample(props, at, v)
	if err != nil {
		klog.V(4).Infof("yarn: generate sample: %v", err)
		return samples
	}
	return append(samples, s)
}

func (c *Collector) commit(samples []metriccache.MetricSample) {
	if len(samples) == 0 || c.opts.MetricCache == nil {
		return
	}
	mc := c.opts.MetricCache()
	if mc == nil {
		return
	}
	app := mc.Appender()
	if err := app.Append(samples); err != nil {
		klog.Warningf("yarn: append %d usage samples to the metric cache: %v", len(samples), err)
		return
	}
	if err := app.Commit(); err != nil {
		klog.Warningf("yarn: commit usage samples to the metric cache: %v", err)
	}
}

// readFailed logs a read error, quietly when the container just vanished.
func (c *Collector) readFailed(ct *store.Container, what string, err error) {
	if cgroups.IsGone(err) {
		klog.V(5).Infof("yarn: container %s vanished while reading %s", ct.Name, what)
		return
	}
	klog.V(4).Infof("yarn: read %s of container %s: %v", what, ct.Name, err)
}

// seriesOf returns the container's series, re-making them (and deleting
// the old ones) when a label changed, e.g. once the NM reports the user.
func (c *Collector) seriesOf(ct *store.Container) *series {
	want := []string{c.opts.NodeName, ct.Name, ct.ApplicationID, ct.User, strconv.FormatBool(ct.IsAM)}
	old, ok := c.series[ct.Name]
	if ok && slices.Equal(old.labels, want) {
		return old
	}
	if ok {
		c.deleteSeries(old.labels)
	}
	m := c.opts.Metrics
	if c.mode != config.ContainerMetricsContainer {
		d := c.discard
		sr := &series{labels: want, props: metriccache.MetricPropertiesFunc.Container(ct.Name),
			cpu: d, mem: d, memPC: d, throttled: d, cpuReq: d, memReq: d}
		c.series[ct.Name] = sr
		return sr
	}
	sr := &series{
		labels:    want,
		props:     metriccache.MetricPropertiesFunc.Container(ct.Name),
		cpu:       m.CPUUsage.WithLabelValues(want...),
		mem:       m.MemoryUsage.WithLabelValues(want...),
		memPC:     m.MemoryWithPageCache.WithLabelValues(want...),
		throttled: m.CPUThrottledRatio.WithLabelValues(want...),
		cpuReq:    m.CPURequest.WithLabelValues(want...),
		memReq:    m.MemoryRequest.WithLabelValues(want...),
	}
	c.series[ct.Name] = sr
	return sr
}

// forgetGone drops the state and the series of containers no longer live.
func (c *Collector) forgetGone(live map[string]struct{}) {
	for name, sr := range c.series {
		if _, ok := live[name]; !ok {
			c.deleteSeries(sr.labels)
			delete(c.series, name)
		}
	}
	for name, p := range c.prev {
		if _, ok := live[name]; !ok {
			if c.opts.Reader != nil && p.dir != "" {
				c.opts.Reader.Forget(p.dir)
			}
			if c.procMem != nil && p.dir != "" {
				c.procMem.Forget(p.dir)
			}
			c.opts.Charges.Forget(name)
			delete(c.prev, name)
		}
	}
}

func (c *Collector) deleteSeries(labels []string) {
	m := c.opts.Metrics
	for _, g := range []interface{ DeleteLabelValues(...string) bool }{
		m.CPUUsage, m.MemoryUsage, m.MemoryWithPageCache, m.CPUThrottledRatio, m.CPURequest, m.MemoryRequest,
	} {
		g.DeleteLabelValues(labels...)
	}
}

// checkAccounting re-checks the NodeSLO host applications and logs a
// change once; nmPresent says whether a NodeManager runs here: without
// one, YARN uses nothing, so there is nothing to account and no series.
func (c *Collector) checkAccounting(nmPresent bool) {
	if c.opts.NodeSLO == nil || c.opts.Hierarchy == nil {
		return
	}
	if !nmPresent {
		c.opts.Metrics.AccountingAsBE.DeleteLabelValues(c.opts.NodeName)
		return
	}
	acc := CheckAccounting(c.opts.NodeSLO(), c.opts.Hierarchy())
	v := 0.0
	if acc.AsBE {
		v = 1
	}
	c.opts.Metrics.AccountingAsBE.WithLabelValues(c.opts.NodeName).Set(v)
	c.accMu.Lock()
	changed := !c.accountingLogged || acc.AsBE != c.accounting.AsBE
	c.accounting, c.accountingLogged = acc, true
	c.accMu.Unlock()
	if !changed {
		return
	}
	if acc.AsBE {
		klog.Infof("yarn: YARN usage is accounted as BE through NodeSLO host application %q", acc.HostApplication)
	} else {
		klog.Warningf("yarn: %s (declare it in slo-controller-config host-application-config; deploy/yarn/slo-controller-config.patch.yaml, docs/metrics.md)", acc.Reason)
	}
}

// processCPU is the CPU (cores) the processes in ct's cpu cgroup used since
// the last collect; false at the first read or when they cannot be read.
func (c *Collector) processCPU(ct *store.Container, p *prev, now time.Time) (float64, bool) {
	r := c.processReader()
	if r == nil {
		return 0, false
	}
	h := r.Hierarchy()
	if c.bootTime.IsZero() {
		bt, err := cgroups.BootTime(h.ProcRoot)
		if err != nil {
			c.readFailed(ct, "boot time", err)
			return 0, false
		}
		c.bootTime = bt
	}
	cur, err := cgroups.ReadProcessTicks(h.ProcRoot, h.AbsDir(cgroups.CPU, ct.Cgroups[cgroups.CPU].Dir))
	if err != nil {
		c.readFailed(ct, "process CPU", err)
		return 0, false
	}
	prevProcs, prevAt, had := p.procs, p.at, p.hasProcs
	p.procs, p.at, p.hasProcs = cur, now, true
	if !had || !now.After(prevAt) {
		return 0, false
	}
	ticks := cgroups.TicksSince(prevProcs, cur, prevAt, c.bootTime)
	return float64(ticks) / cgroups.ClockTicks / now.Sub(prevAt).Seconds(), true
}
