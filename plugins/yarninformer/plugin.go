// Package yarninformer is the koordlet statesinformer plugin that keeps the
// YARN container store true: the cgroup scan is the truth for existence and
// the NodeManager REST API enriches it with requests, user and state.
package yarninformer

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer/impl"

	"github.com/koordlet-yarn/koordlet-yarn/framework/backoff"
	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/config"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// Name is the plugin's key in koordlet's statesinformer plugin registry.
const Name impl.PluginName = "yarnContainerInformer"

// PodLister returns koordlet's current pods.
type PodLister func() []*statesinformer.PodMeta

// Status is what the plugin last saw, for the debug endpoint.
type Status struct {
	Enabled bool `json:"enabled"`
	// CgroupVersion is the cgroup version koordlet detected at its cgroup
	// root: "cgroup1" or "cgroup2" (as /proc/mounts names the file systems).
	CgroupVersion  string `json:"cgroupVersion,omitempty"`
	Hierarchy      string `json:"hierarchy,omitempty"`
	HierarchyFound bool   `json:"hierarchyFound"`
	ScanError      string `json:"scanError,omitempty"`
	NMEndpoint     string `json:"nmEndpoint,omitempty"`
	NMPod          string `json:"nmPod,omitempty"`
	NMError        string `json:"nmError,omitempty"`
	// NMNodeID is the NM's YARN node id (host:port) and NMNodeIDSource
	// where it came from (pod annotation or NM node info).
	NMNodeID           string        `json:"nmNodeId,omitempty"`
	NMNodeIDSource     string        `json:"nmNodeIdSource,omitempty"`
	LastNMSuccess      time.Time     `json:"lastNMSuccess,omitempty"`
	LastResync         time.Time     `json:"lastResync,omitempty"`
	LastResyncDuration time.Duration `json:"lastResyncDurationNanos"`
	Containers         int           `json:"containers"`
}

// Plugin is the statesinformer plugin.
type Plugin struct {
	cfg   *config.Config
	store *store.Store
	pods  PodLister

	enabled  bool
	scanner  *cgroups.Scanner
	selector labels.Selector
	client   *http.Client
	synced   atomic.Bool

	// nm is the client of the current NM endpoint (resync goroutine only).
	nm *yarn.NMClient

	// AfterFirstSync, when set, is started after the first resync (the
	// framework starts its event-driven discovery there, as early as koordlet
	// lets plugins run).
	AfterFirstSync func(stopCh <-chan struct{})

	// AfterResync, when set, is called at the end of every resync, once the
	// store and Status describe it (the batch ledger reads both).
	AfterResync func()

	// resyncReq holds a resync asked for by RequestResync (one at most).
	resyncReq chan struct{}

	// NMMetrics counts what the NM clients reject from the NodeManager's
	// answers (nil: not counted). Set before Start.
	NMMetrics *yarn.NMMetrics

	// LocateInterval is how often, between resyncs, koordlet's pod list is
	// looked at for the NodeManager pod: when its endpoint appears or
	// changes the NM is asked at once (see nmatonce.go). 0 turns it off.
	LocateInterval time.Duration

	// resync-loop state (one goroutine)
	nmFailing   bool
	rootMissing bool
	// lastEndpoint is the NM endpoint the last resync resolved ("" when
	// none); newEndpoint says it differed from the one before; nmOK that
	// the NM answered; nmBackoff the quick retries' delays (from
	// nmRetryMin, doubling, jittered).
	lastEndpoint string
	newEndpoint  bool
	nmOK         bool
	nmBackoff    *backoff.Backoff
	// nodeIDEndpoint is the endpoint whose node info gave the node id.
	nodeIDEndpoint string
	// layout is the node layout last logged (see logLayout); noneSeen
	// counts the resyncs in a row that saw layout "none".
	layout   store.Layout
	noneSeen int

	statusMu sync.RWMutex
	status   Status
}

// New returns the plugin; pods may be nil when no pod list is available.
func New(cfg *config.Config, st *store.Store, pods PodLister) *Plugin {
	return &Plugin{
		cfg:            cfg,
		store:          st,
		pods:           pods,
		resyncReq:      make(chan struct{}, 1),
		nmBackoff:      backoff.New(time.Minute),
		LocateInterval: DefaultLocateInterval,
		client: &http.Client{Transport: &http.Transport{
			Proxy:               nil,
			MaxIdleConnsPerHost: 2,
			IdleConnTimeout:     90 * time.Second,
		}},
	}
}

// Setup is called by koordlet's states informer before Start.
func (p *Plugin) Setup(_ *impl.PluginOption, _ *impl.PluginState) {
	if !features.Enabled(features.YARNContainerInformer) {
		klog.Infof("yarn: container informer disabled by feature gate %s", features.YARNContainerInformer)
		return
	}
	if err := p.cfg.Validate(); err != nil {
		klog.Errorf("yarn: container informer disabled, invalid configuration: %v", err)
		return
	}
	h, err := cgroups.ResolveHierarchy(p.cfg.CgroupHierarchy)
	if err != nil {
		klog.Errorf("yarn: container informer disabled: %v", err)
		return
	}
	sel, err := labels.Parse(p.cfg.NMPodSelector)
	if err != nil {
		klog.Errorf("yarn: container informer disabled: NodeManager pod selector: %v", err)
		return
	}
	p.scanner = cgroups.NewScanner(h)
	p.selector = sel
	p.enabled = true
	version := "cgroup1"
	if h.V2 {
		version = "cgroup2"
	}
	p.setStatus(func(s *Status) { s.Enabled = true; s.CgroupVersion = version; s.Hierarchy = h.String() })
	klog.Infof("yarn: container informer set up: hierarchy %s, NM %s, resync every %v", h, p.nmSourceDescription(), p.cfg.ResyncInterval)
}

func (p *Plugin) nmSourceDescription() string {
	if p.cfg.NMEndpoint != "" {
		return p.cfg.NMEndpoint
	}
	return "pod selected by " + p.cfg.NMPodSelector
}

// Start resyncs once, reports synced (even when the NM is down), then
// resyncs every interval until stopCh closes; also at once when the NM
// pod's endpoint appears or changes in koordlet's pod list (soon again,
// backing off, while the NM there does not answer) and on RequestResync.
func (p *Plugin) Start(stopCh <-chan struct{}) {
	if !p.enabled {
		p.synced.Store(true)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stopCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	st := p.Resync(ctx)
	p.synced.Store(true)
	klog.Infof("yarn: container informer synced: %d containers (%d added)", p.store.Len(), st.Added)
	if p.AfterFirstSync != nil {
		p.AfterFirstSync(stopCh)
	}
	ticker := time.NewTicker(p.cfg.ResyncInterval)
	defer ticker.Stop()
	locate, stopLocate := p.locateTicks()
	defer stopLocate()
	retry := p.nmRetry()
	for {
		select {
		case <-stopCh:
			return
		case <-ticker.C:
			p.Resync(ctx)
		case <-p.resyncReq:
			p.Resync(ctx)
		case <-locate:
			if !p.nmEndpointChanged() {
				continue
			}
			p.Resync(ctx)
		case <-retry:
			p.Resync(ctx)
		}
		retry = p.nmRetry()
	}
}

// HierarchyDir returns the YARN hierarchy relative to the controller
// mounts, or "" before Setup or when the plugin is disabled.
func (p *Plugin) HierarchyDir() string {
	if p.scanner == nil {
		return ""
	}
	return p.scanner.Hierarchy().Dir
}

// Hierarchy returns the YARN hierarchy; ok is false before Setup or when
// the plugin is disabled.
func (p *Plugin) Hierarchy() (h cgroups.Hierarchy, ok bool) {
	if p.scanner == nil {
		return cgroups.Hierarchy{}, false
	}
	return p.scanner.Hierarchy(), true
}

// IsNodeManagerPod reports whether pod is the NodeManager pod: it matches
// --yarn-nm-pod-selector.
func (p *Plugin) IsNodeManagerPod(pod *corev1.Pod) bool {
	if pod == nil || p.selector == nil {
		return false
	}
	return p.selector.Matches(labels.Set(pod.Labels))
}

// HasSynced is true once the first resync was attempted (or the plugin is
// disabled), so the plugin never holds koordlet's start-up.
func (p *Plugin) HasSynced() bool { return p.synced.Load() }

// Status returns a copy of the plugin's status.
func (p *Plugin) Status() Status {
	p.statusMu.RLock()
	defer p.statusMu.RUnlock()
	return p.status
}

func (p *Plugin) setStatus(fn func(*Status)) {
	p.statusMu.Lock()
	fn(&p.status)
	p.statusMu.Unlock()
}

// Resync asks the NM, scans the cgroups and updates the store. It is called
// from one goroutine at a time. A panic is contained and logged.
func (p *Plugin) Resync(ctx context.Context) (st store.Stats) {
	defer func() {
		if r := recover(); r != nil {
			klog.Errorf("yarn: container resync panicked, keeping the store as it was: %v", r)
		}
	}()
	start := time.Now()
	nmList, target, nmErr := p.listNM(ctx)
	scanStart := time.Now()
	scan, scanErr := p.scanner.Scan()

	obs := store.Observation{
		Scan: scan.Containers, ScanOK: scanErr == nil,
		NM: nmList, NMOK: nmErr == nil,
		Started: scanStart,
	}
	st = p.store.Resync(obs, time.Now())
	p.logTransitions(scan, scanErr, nmErr, target.Endpoint)
	p.newEndpoint = target.Endpoint != "" && target.Endpoint != p.lastEndpoint
	p.lastEndpoint, p.nmOK = target.Endpoint, nmErr == nil
	if nmErr == nil {
		p.resolveNodeID(ctx, target)
	}

	end := time.Now()
	p.setStatus(func(s *Status) {
		s.HierarchyFound = scan.RootFound
		s.ScanError = errString(scanErr)
		s.NMEndpoint, s.NMPod, s.NMError = target.Endpoint, target.String(), errString(nmErr)
		if nmErr == nil {
			s.LastNMSuccess = end
		}
		s.LastResync = end
		s.LastResyncDuration = end.Sub(start)
		s.Containers = p.store.Len()
	})
	p.logLayout()
	if p.AfterResync != nil {
		p.AfterResync()
	}
	if st.Added+st.Updated+st.Removed > 0 {
		klog.V(3).Infof("yarn: resync: %d added, %d updated, %d removed, %d containers", st.Added, st.Updated, st.Removed, p.store.Len())
	}
	return st
}

// listNM resolves the NM endpoint and lists its containers.
func (p *Plugin) listNM(ctx context.Context) ([]yarn.NMContainer, nmPod, error) {
	target := nmPod{Endpoint: p.cfg.NMEndpoint}
	if target.Endpoint == "" {
		var pods []*statesinformer.PodMeta
		if p.pods != nil {
			pods = p.pods()
		}
		var err error
		if target, err = locateNM(pods, p.selector, p.cfg.NMPort); err != nil {
			return nil, nmPod{}, err
		}
	}
	if p.nm == nil || p.nm.Endpoint != target.Endpoint {
		p.nm = &yarn.NMClient{
			Endpoint:         target.Endpoint,
			Timeout:          p.cfg.NMTimeout,
			MaxResponseBytes: p.cfg.NMMaxResponseBytes,
			HTTPClient:       p.client,
			Metrics:          p.NMMetrics,
		}
	}
	list, err := p.nm.ListContainers(ctx)
	return list, target, err
}

// logTransitions logs a source going bad or coming back once, not on every resync.
func (p *Plugin) logTransitions(scan cgroups.ScanResult, scanErr, nmErr error, endpoint string) {
	switch {
	case nmErr != nil && !p.nmFailing:
		klog.Warningf("yarn: NodeManager unavailable, keeping the last known NM data and the cgroup view: %v", nmErr)
		p.nmFailing = true
	case nmErr != nil:
		klog.V(4).Infof("yarn: NodeManager still unavailable: %v", nmErr)
	case p.nmFailing:
		klog.Infof("yarn: NodeManager at %s reachable again", endpoint)
		p.nmFailing = false
	}
	if scanErr != nil {
		klog.Warningf("yarn: cgroup scan failed, keeping the last known cgroup view: %v", scanErr)
		return
	}
	if !scan.RootFound && !p.rootMissing {
		klog.Infof("yarn: YARN cgroup hierarchy %s not found in any controller yet; waiting for the NodeManager to create it", p.scanner.Hierarchy())
	}
	if scan.RootFound && p.rootMissing {
		klog.Infof("yarn: YARN cgroup hierarchy %s found", p.scanner.Hierarchy())
	}
	p.rootMissing = !scan.RootFound
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
