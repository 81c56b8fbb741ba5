package yarnledger

import (
	"context"
	"errors"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"

	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

// maxBackoff bounds the wait between failed patches.
const maxBackoff = time.Minute

// refreshPeriod is how often the view is recomputed without a store event
// (the pods' requests, the Node's origin and the NM's health change
// without one).
const refreshPeriod = time.Second

// Options are the ledger's inputs and outputs.
type Options struct {
	Store *store.Store
	// NM returns when the NodeManager last answered a container list and
	// whether the latest list succeeded.
	NM func() (lastSuccess time.Time, ok bool)
	// Node and Pods are koordlet's view of the node and its pods.
	Node func() *corev1.Node
	Pods func() []*statesinformer.PodMeta
	// Client is koordlet's Kubernetes client (nil until koordlet made it).
	Client   func() kubernetes.Interface
	NodeName string
	// PatchInterval returns the patch interval (at most one patch per
	// interval); it is read at each patch, after koordlet parsed its flags.
	PatchInterval func() time.Duration
	Metrics       *Metrics
	// Patch turns the Node patch on (gate YARNBatchLedger); nil: the gate.
	Patch func() bool
	// RequestResync asks the informer for a container resync (NM list);
	// the ledger asks when a container appears in cgroups before the NM
	// listed it (its request is then known at once, not at the next
	// periodic resync), at most once per patch interval.
	RequestResync func()
}

// Ledger computes the node's batch ledger and keeps the hadoop-yarn entry
// of the Node's thirdPartyAllocations true. It is a framework loop.
type Ledger struct {
	opts Options

	mu sync.Mutex
	st Status
	// want is the YARN allocation to write; failures counts consecutive
	// failed writes (backoff); errKinds the kinds of error already logged.
	failures int
	errKinds map[string]bool
	// wake is signalled after each container resync (Notify).
	wake chan struct{}
	// lastAsk is when the ledger last asked for a resync.
	askMu   sync.Mutex
	lastAsk time.Time
	// askPending: a deferred request is scheduled.
	askPending bool
}

// Status is the ledger's state, served at /yarn/ledger.
type Status struct {
	View
	// YARNAllocatedKnown is false until the NodeManager answered once;
	// YARNAllocatedAsOf is when it last did (the value is kept while it
	// does not answer) and YARNAllocatedAgeSeconds its age.
	YARNAllocatedKnown      bool             `json:"yarnAllocatedKnown"`
	YARNAllocatedAsOf       time.Time        `json:"yarnAllocatedAsOf,omitzero"`
	YARNAllocatedAgeSeconds float64          `json:"yarnAllocatedAgeSeconds"`
	NodeManagerOK           bool             `json:"nodeManagerOK"`
	OriginError             string           `json:"originError,omitempty"`
	Annotation              AnnotationStatus `json:"annotation"`
	Computed                time.Time        `json:"computed,omitzero"`
}

// AnnotationStatus is the state of the Node patch.
type AnnotationStatus struct {
	Enabled bool `json:"enabled"`
	// Written is the value last written (or found already there).
	Written      *Batch    `json:"written,omitempty"`
	LastWrite    time.Time `json:"lastWrite,omitzero"`
	LastAttempt  time.Time `json:"lastAttempt,omitzero"`
	Patches      int       `json:"patches"`
	LastError    string    `json:"lastError,omitempty"`
	PendingSince time.Time `json:"pendingSince,omitzero"`
}

// New returns the ledger.
func New(opts Options) *Ledger {
	if opts.PatchInterval == nil {
		opts.PatchInterval = func() time.Duration { return time.Second }
	}
	if opts.Patch == nil {
		opts.Patch = func() bool { return features.Enabled(features.YARNBatchLedger) }
	}
	return &Ledger{opts: opts, errKinds: map[string]bool{}, wake: make(chan struct{}, 1)}
}

// Name names the loop in logs.
func (l *Ledger) Name() string { return "YARN batch ledger" }

// Enabled is true when the ledger or the RM sync is on.
func (l *Ledger) Enabled() bool {
	return features.Enabled(features.YARNBatchLedger) || features.Enabled(features.YARNRMNodeResourceSync)
}

// Status returns a copy of the ledger's state.
func (l *Ledger) Status() Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.st
	if s.Annotation.Written != nil {
		w := *s.Annotation.Written
		s.Annotation.Written = &w
	}
	if s.YARNAllocatedKnown {
		s.YARNAllocatedAgeSeconds = time.Since(s.YARNAllocatedAsOf).Seconds()
	}
	return s
}

// Notify wakes the ledger; the informer calls it after each resync, once
// the store and its NM status describe the same NM answer.
func (l *Ledger) Notify() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Run starts the loop; it ends when stopCh closes.
func (l *Ledger) Run(stopCh <-chan struct{}) {
	unsubscribe := l.opts.Store.Subscribe("yarnledger", l.onEvent)
	go func() {
		defer unsubscribe()
		l.loop(stopCh)
	}()
}

// onEvent asks for a resync when a container appears that the NM has not
// listed yet (found by its cgroup): YARN allocated it, the ledger needs
// its request.
func (l *Ledger) onEvent(ev store.Event) {
	if ev.Type != store.Added || ev.Container == nil || ev.Container.Source&store.SourceNM != 0 || l.opts.RequestResync == nil {
		return
	}
	l.askMu.Lock()
	defer l.askMu.Unlock()
	if l.askPending {
		return
	}
	wait := l.opts.PatchInterval() - time.Since(l.lastAsk)
	if wait <= 0 {
		l.lastAsk = time.Now()
		l.opts.RequestResync()
		return
	}
	// Asked a moment ago: once more when the interval has passed, so a
	// container found meanwhile waits no longer than that.
	l.askPending = true
	time.AfterFunc(wait, func() {
		l.askMu.Lock()
		l.askPending, l.lastAsk = false, time.Now()
		l.askMu.Unlock()
		l.opts.RequestResync()
	})
}

func (l *Ledger) loop(stopCh <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-stopCh; cancel() }()
	tick := time.NewTicker(refreshPeriod)
	defer tick.Stop()
	var timer *time.Timer
	var timerC <-chan time.Time
	for {
		select {
		case <-stopCh:
			return
		case <-l.wake:
		case <-tick.C:
		case <-timerC:
			timerC = nil
		}
		now := time.Now()
		l.Refresh(now)
		if wait := l.Sync(ctx, now); wait > 0 && timerC == nil {
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			timerC = timer.C
		}
	}
}

// Refresh recomputes the view from the store, the NM's health, the Node
// and the pods. The YARN allocated value is recomputed only when the NM
// answered a list since the value was taken (the store then holds that
// answer); while it does not answer, the last value is kept with its time,
// whatever the cgroup scan removed meanwhile.
func (l *Ledger) Refresh(now time.Time) View {
	lastOK, nmOK := l.opts.NM()
	var pods []*corev1.Pod
	if l.opts.Pods != nil {
		for _, pm := range l.opts.Pods() {
			if pm != nil {
				pods = append(pods, pm.Pod)
			}
		}
	}
	origin, originKnown, originErr := Origin(l.opts.Node())
	l.mu.Lock()
	defer l.mu.Unlock()
	if nmOK && lastOK.After(l.st.YARNAllocatedAsOf) {
		l.st.YARNAllocated = YARNAllocated(l.opts.Store.Snapshot())
		l.st.YARNAllocatedKnown, l.st.YARNAllocatedAsOf = true, lastOK
	}
	l.st.NodeManagerOK = nmOK
	l.st.OriginError = ""
	if originErr != nil {
		l.st.OriginError = originErr.Error()
	}
	l.st.View = Compute(origin, originKnown, KubernetesRequested(pods), l.st.YARNAllocated)
	l.st.Computed = now
	l.opts.Metrics.observe(l.opts.NodeName, l.st.View)
	if l.opts.Metrics != nil && l.st.YARNAllocatedKnown {
		l.opts.Metrics.Age.WithLabelValues(l.opts.NodeName).Set(now.Sub(l.st.YARNAllocatedAsOf).Seconds())
	}
	return l.st.View
}

// View returns the last computed view; ok is false before the NodeManager
// answered once.
func (l *Ledger) View() (v View, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.st.View, l.st.YARNAllocatedKnown
}

// Sync patches the Node when the YARN allocated value differs from the one
// last written and the patch interval (longer after failures) has passed;
// it returns how long to wait before the next attempt is allowed when one
// is pending (0: none pending).
func (l *Ledger) Sync(ctx context.Context, now time.Time) time.Duration {
	if !l.opts.Patch() {
		return 0
	}
	l.mu.Lock()
	l.st.Annotation.Enabled = true
	want, known := l.st.YARNAllocated, l.st.YARNAllocatedKnown
	written := l.st.Annotation.Written
	if !known || (written != nil && *written == want) {
		l.st.Annotation.PendingSince = time.Time{}
		l.mu.Unlock()
		return 0
	}
	if l.st.Annotation.PendingSince.IsZero() {
		l.st.Annotation.PendingSince = now
	}
	wait := l.st.Annotation.LastAttempt.Add(l.backoff()).Sub(now)
	l.mu.Unlock()
	if wait > 0 {
		return wait
	}
	var client kubernetes.Interface
	if l.opts.Client != nil {
		client = l.opts.Client()
	}
	if client == nil || l.opts.NodeName == "" {
		return l.opts.PatchInterval()
	}
	w := &NodeWriter{Client: client, NodeName: l.opts.NodeName}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	patched, err := w.Write(wctx, want)
	cancel()
	end := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.st.Annotation.LastAttempt = end
	if err != nil {
		l.failures++
		l.st.Annotation.LastError = err.Error()
		l.count("error")
		kind := errorKind(err)
		if !l.errKinds[kind] {
			l.errKinds[kind] = true
			klog.Errorf("yarn: ledger cannot write the Node's %s (%s; retried with backoff, logged once per kind): %v", AnnotationKey, kind, err)
		}
		return l.backoff()
	}
	if l.failures > 0 || l.st.Annotation.LastError != "" {
		klog.Infof("yarn: ledger writes the Node's %s again", AnnotationKey)
	}
	l.failures, l.st.Annotation.LastError, l.errKinds = 0, "", map[string]bool{}
	l.st.Annotation.Written = &want
	l.st.Annotation.LastWrite = end
	l.st.Annotation.PendingSince = time.Time{}
	if patched {
		l.st.Annotation.Patches++
		l.count("patched")
		klog.V(3).Infof("yarn: ledger wrote %s=%dm, %s=%d to node %s", ResourceCPU, want.MilliCPU, ResourceMemory, want.MemoryBytes, l.opts.NodeName)
	} else {
		l.count("unchanged")
	}
	return 0
}

// backoff is the patch interval, doubled per consecutive failure up to
// maxBackoff; called with mu held.
func (l *Ledger) backoff() time.Duration {
	base := l.opts.PatchInterval()
	d := base
	for i := 0; i < l.failures && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, max(maxBackoff, base))
}

func (l *Ledger) count(result string) {
	if l.opts.Metrics != nil {
		l.opts.Metrics.Patches.WithLabelValues(l.opts.NodeName, result).Inc()
	}
}

// errorKind classes a write error for logging once per kind.
func errorKind(err error) string {
	switch {
	case errors.Is(err, ErrMalformed):
		return "malformed annotation"
	case apierrors.IsConflict(err):
		return "conflicts"
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return "not allowed"
	case apierrors.IsNotFound(err):
		return "node not found"
	case errors.Is(err, context.DeadlineExceeded), apierrors.IsTimeout(err), apierrors.IsServerTimeout(err):
		return "timeout"
	}
	return "other"
}
