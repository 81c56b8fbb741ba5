package yarnledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"

	"github.com/koordlet-yarn/koordlet-yarn/framework/backoff"
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
	// Hysteresis (percent of the origin batch allocatable) and MaxAge
	// complete the PatchPolicy (nil: DefaultHysteresis, DefaultMaxAge).
	Hysteresis func() int64
	MaxAge     func() time.Duration
	Metrics    *Metrics
	// Patch turns the Node patch on (gate YARNBatchLedger); nil: the gate.
	Patch func() bool
	// Expiry returns how long the NodeManager may be gone (not answering,
	// no YARN container left on the node) before the entry is withdrawn so
	// that batch capacity comes back (nil: DefaultExpiry).
	Expiry func() time.Duration
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
	// bo counts consecutive failed writes and the delay before the next
	// (twice the patch interval, doubling, jittered); errKinds the kinds of
	// error already logged.
	bo       *backoff.Backoff
	errKinds map[string]bool
	// wake is signalled after each container resync (Notify).
	wake chan struct{}
	// lastAsk is when the ledger last asked for a resync.
	askMu   sync.Mutex
	lastAsk time.Time
	// askPending: a deferred request is scheduled.
	askPending bool
	// started is when the ledger was made: the NodeManager's absence is
	// counted from it when it never answered.
	started time.Time
	// corrected counts corrections of the Node's entry (logged in full
	// the first time).
	corrected int
}

// Defaults of the PatchPolicy (see the fleet measurement in docs/figures.md).
const (
	DefaultPatchInterval = 5 * time.Second
	DefaultHysteresis    = 10
	DefaultMaxAge        = 2 * time.Minute
)

// DefaultExpiry is how long the NodeManager may be gone before the entry
// is withdrawn.
const DefaultExpiry = 10 * time.Minute

// cacheLag is how long a value the ledger wrote is trusted over the Node
// koordlet's informer shows (which may not have caught up with the write
// yet); after that, the informer's Node decides.
const cacheLag = 10 * time.Second

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
	// Corrections counts the times the Node held another hadoop-yarn
	// value than the ledger had written (a re-registered Node, a hand
	// edit, another writer) and the ledger wrote it again.
	Corrections int `json:"corrections"`
	// Expired is set while the entry is withdrawn because the NodeManager
	// is gone (see Options.Expiry).
	Expired bool `json:"expired,omitempty"`
}

// New returns the ledger.
func New(opts Options) *Ledger {
	if opts.PatchInterval == nil {
		opts.PatchInterval = func() time.Duration { return DefaultPatchInterval }
	}
	if opts.Patch == nil {
		opts.Patch = func() bool { return features.Enabled(features.YARNBatchLedger) }
	}
	if opts.Expiry == nil {
		opts.Expiry = func() time.Duration { return DefaultExpiry }
	}
	if opts.Hysteresis == nil {
		opts.Hysteresis = func() int64 { return DefaultHysteresis }
	}
	if opts.MaxAge == nil {
		opts.MaxAge = func() time.Duration { return DefaultMaxAge }
	}
	return &Ledger{opts: opts, bo: backoff.New(maxBackoff), errKinds: map[string]bool{}, wake: make(chan struct{}, 1), started: time.Now()}
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

// NeedsWrite decides whether the Node's hadoop-yarn entry must be written:
// true when the Node as koordlet's informer shows it (node; nil: not known
// yet) does not hold want with the ledger's record of it, whatever the
// ledger wrote before (a re-registered Node, a hand edit or another writer
// of the entry is corrected). A value the ledger wrote less than cacheLag
// ago is trusted over the informer, which may not show the write yet.
// correction is true when the ledger had written want and the Node shows
// something else.
func NeedsWrite(node *corev1.Node, want Batch, written *Batch, lastWrite, now time.Time) (write, correction bool) {
	wroteWant := written != nil && *written == want
	if wroteWant && now.Sub(lastWrite) < cacheLag {
		return false, false
	}
	if node == nil {
		return !wroteWant, false
	}
	cur, present, err := Entry(node.Annotations[AnnotationKey])
	if err == nil && present && cur == want && node.Annotations[AnnotationWritten] == writtenRecord(want) {
		return false, false
	}
	return true, wroteWant
}

// Expired reports whether the entry is to be withdrawn: the NodeManager has
// not answered for longer than expiry (counted from its last answer, or
// from since when it never answered) and no YARN container is alive on the
// node (containers: those with a process). While containers remain their
// allocation stays in the entry.
func Expired(lastOK, since, now time.Time, nmOK bool, containers int, expiry time.Duration) bool {
	if nmOK || containers > 0 || expiry <= 0 {
		return false
	}
	if lastOK.After(since) {
		since = lastOK
	}
	return now.Sub(since) > expiry
}

// Sync patches the Node when its hadoop-yarn entry (as koordlet's informer
// shows it, see NeedsWrite) differs from the YARN allocated value and the
// patch interval (longer after failures) has passed, and withdraws the
// entry when the NodeManager is gone (Expired); it returns how long to wait
// before the next attempt is allowed when one is pending (0: none pending).
func (l *Ledger) Sync(ctx context.Context, now time.Time) time.Duration {
	if !l.opts.Patch() {
		return 0
	}
	lastOK, nmOK := l.opts.NM()
	if Expired(lastOK, l.started, now, nmOK, l.containersOnNode(), l.opts.Expiry()) {
		return l.expire(ctx, now)
	}
	var node *corev1.Node
	if l.opts.Node != nil {
		node = l.opts.Node()
	}
	l.mu.Lock()
	l.st.Annotation.Enabled = true
	if l.st.Annotation.Expired {
		l.st.Annotation.Expired = false
		klog.Infof("yarn: the NodeManager is back: the ledger writes the Node's %s entry again", EntryName)
	}
	want, known := l.st.YARNAllocated, l.st.YARNAllocatedKnown
	write, correction := NeedsWrite(node, want, l.st.Annotation.Written, l.st.Annotation.LastWrite, now)
	if !known || !write {
		if known && node != nil {
			l.st.Annotation.Written = &want // found there
		}
		l.st.Annotation.PendingSince = time.Time{}
		l.mu.Unlock()
		return 0
	}
	if l.st.Annotation.PendingSince.IsZero() {
		l.st.Annotation.PendingSince = now
	}
	// What the Node holds now (the informer's view, else the last write).
	var onNode Batch
	present := false
	if node != nil {
		if b, ok, err := Entry(node.Annotations[AnnotationKey]); err == nil && ok {
			onNode, present = b, true
		}
	} else if w := l.st.Annotation.Written; w != nil {
		onNode, present = *w, true
	}
	policy := PatchPolicy{MinInterval: l.opts.PatchInterval(), Hysteresis: l.opts.Hysteresis(), MaxAge: l.opts.MaxAge()}
	wait := policy.Due(onNode, want, l.st.View.Origin, l.st.Annotation.LastWrite, now, correction || !present)
	if l.bo.Failures() > 0 {
		wait = max(wait, l.st.Annotation.LastAttempt.Add(l.bo.Delay()).Sub(now))
	}
	if wait <= 0 && correction {
		l.noteCorrection(node, want)
	}
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
	patched, err := w.WriteFrom(wctx, node, want)
	cancel()
	end := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.st.Annotation.LastAttempt = end
	if err != nil {
		l.st.Annotation.LastError = err.Error()
		l.count("error")
		kind := errorKind(err)
		if !l.errKinds[kind] {
			l.errKinds[kind] = true
			klog.Errorf("yarn: ledger cannot write the Node's %s (%s; retried with backoff, logged once per kind): %v", AnnotationKey, kind, err)
		}
		return l.bo.Fail(l.firstRetry())
	}
	if l.bo.Failures() > 0 || l.st.Annotation.LastError != "" {
		klog.Infof("yarn: ledger writes the Node's %s again", AnnotationKey)
	}
	l.bo.Reset()
	l.st.Annotation.LastError, l.errKinds = "", map[string]bool{}
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

// noteCorrection counts and logs (in full the first time) a correction of
// the Node's entry about to be written. The caller holds l.mu.
func (l *Ledger) noteCorrection(node *corev1.Node, want Batch) {
	l.corrected++
	l.st.Annotation.Corrections++
	l.count("corrected")
	cur := "none"
	if b, ok, err := Entry(node.Annotations[AnnotationKey]); err != nil {
		cur = "malformed"
	} else if ok {
		cur = fmt.Sprintf("%dm CPU, %d bytes", b.MilliCPU, b.MemoryBytes)
	}
	msg := fmt.Sprintf("yarn: the Node's %s entry holds %s, not the %dm CPU, %d bytes the ledger wrote (a re-registered Node, a hand edit or another writer such as koord-yarn-operator); writing it again",
		EntryName, cur, want.MilliCPU, want.MemoryBytes)
	if l.corrected == 1 {
		klog.Warning(msg)
	} else {
		klog.V(2).Info(msg)
	}
}

// containersOnNode counts the YARN containers still alive on the node:
// those with a process. What the NM listed before it went away does not
// count, nor does a container_* cgroup left empty (an NM that died before
// removing its containers' cgroups): it holds nothing and would keep the
// entry, and the batch capacity it withholds, forever.
func (l *Ledger) containersOnNode() int {
	n := 0
	for _, c := range l.opts.Store.Snapshot() {
		if len(c.Pids) > 0 {
			n++
		}
	}
	return n
}

// expire withdraws the entry (once; again only if the Node shows it back)
// while the NodeManager is gone.
func (l *Ledger) expire(ctx context.Context, now time.Time) time.Duration {
	var node *corev1.Node
	if l.opts.Node != nil {
		node = l.opts.Node()
	}
	l.mu.Lock()
	l.st.Annotation.Enabled = true
	present := true
	if node != nil {
		_, present, _ = Entry(node.Annotations[AnnotationKey])
	}
	if l.st.Annotation.Expired && !present {
		l.mu.Unlock()
		return 0
	}
	wait := l.st.Annotation.LastAttempt.Add(l.retryWait()).Sub(now)
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
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	removed, kept, err := (&NodeWriter{Client: client, NodeName: l.opts.NodeName}).RemoveOurs(wctx)
	cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.st.Annotation.LastAttempt = time.Now()
	if err != nil {
		l.st.Annotation.LastError = err.Error()
		l.count("error")
		return l.bo.Fail(l.firstRetry())
	}
	l.bo.Reset()
	l.st.Annotation.LastError = ""
	if !l.st.Annotation.Expired {
		l.st.Annotation.Expired = true
		switch {
		case removed:
			l.count("expired")
			klog.Infof("yarn: the NodeManager has been gone for more than %v and no YARN container is left: the %s entry is withdrawn from the Node's %s, so its batch capacity comes back",
				l.opts.Expiry(), EntryName, AnnotationKey)
		case kept != "":
			klog.Infof("yarn: the NodeManager is gone; the Node's %s entry is left as it is: %s", EntryName, kept)
		}
	}
	l.st.Annotation.Written = nil
	l.st.YARNAllocated, l.st.YARNAllocatedKnown = Batch{}, false
	return 0
}

// firstRetry is the delay after a first failed write: twice the patch
// interval, at most maxBackoff or the patch interval if that is longer
// (the cap of the doubling, as before the shared backoff).
func (l *Ledger) firstRetry() time.Duration {
	base := l.opts.PatchInterval()
	return min(2*base, max(maxBackoff, base))
}

// retryWait is how long after the last attempt the next may come: the
// backoff's delay after failures, the patch interval otherwise; mu held.
func (l *Ledger) retryWait() time.Duration {
	if l.bo.Failures() > 0 {
		return l.bo.Delay()
	}
	return l.opts.PatchInterval()
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
