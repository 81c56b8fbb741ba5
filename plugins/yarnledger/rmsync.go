package yarnledger

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/backoff"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/rmrelease"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// maxRMBackoff bounds the wait between failed pushes.
const maxRMBackoff = 5 * time.Minute

// RMSyncOptions configure the ResourceManager push.
type RMSyncOptions struct {
	// Client returns the RM client; nil (no --yarn-rm-endpoints) disables
	// the push. It is called after koordlet's flags are parsed.
	Client func() *yarn.RMClient
	// NodeID returns the YARN node id ("" when not known yet).
	NodeID func() string
	// View returns the ledger's current view.
	View func() View
	// Interval returns how often the capacity is compared with what was
	// pushed; read when the loop starts, after koordlet parsed its flags.
	Interval func() time.Duration
	// ReadBack returns how often what the RM holds for the node is read
	// back (GET /ws/v1/cluster/nodes/{id}) while nothing changed on this
	// side; it is also read back after any RM error. An RM restart, a
	// failover or the NodeManager registering again resets the node to its
	// yarn-site capacity: the read-back finds that and pushes again.
	ReadBack func() time.Duration
	Timeout  time.Duration
	Metrics  *Metrics
	NodeName string
	// PreemptionTimeout returns the over-commit timeout pushed with a
	// capacity below YARN's allocation when YARNRMPreemption is on.
	PreemptionTimeout func() time.Duration
	// Release records the release asked of the RM and what the RM holds
	// for the node (nil: not recorded).
	Release *rmrelease.Window
	// PreemptionGrace returns the least grace after the over-commit
	// timeout (nil: rmrelease.DefaultGrace); the grace is derived from the
	// RM's node heartbeat interval where its /conf answers
	// (rmrelease.GraceFor), this value where not.
	PreemptionGrace func() time.Duration
	// NMResync returns the NodeManager informer's resync interval (how
	// late a container the RM preempted shows; nil: 0).
	NMResync func() time.Duration
	// Record is the file recording YARN's own capacity for the node (what
	// the RM held before the first push), so that it is given back when the
	// gate is off, also after a crash (nil or "": in memory only); read
	// after koordlet parsed its flags.
	Record func() string
}

// RMSync pushes YARN's capacity on the node to the ResourceManager
// (updateNodeResource) when it changes. It runs on its own goroutine: a
// slow, down or standby RM never blocks koordlet.
type RMSync struct {
	opts RMSyncOptions

	mu sync.Mutex
	st RMSyncStatus
	// bo counts consecutive RM errors and the delay before the next try
	// (from the sync interval, doubling, jittered).
	bo       *backoff.Backoff
	errKinds map[string]bool
	// warnOnce says once that the gate is on without an RM.
	warnOnce sync.Once
	// readBackNow: an RM error happened since the last read-back.
	readBackNow bool

	// pushMu serialises a step's RM calls with the give-back (Restore);
	// closed is set by Restore: no push after it.
	pushMu sync.Mutex
	closed bool
	// own is YARN's own capacity for the node (see capacityRecord); nil
	// until known. ownLoaded: the record file was read once.
	own       *capacityRecord
	ownLoaded bool
	// sent: what was pushed since the RM last confirmed what it holds.
	sent sentValues
	// saidGrace: the grace's source was logged.
	saidGrace, saidRecord bool
}

// RMSyncStatus is the push's state, served at /yarn/ledger.
type RMSyncStatus struct {
	Enabled bool   `json:"enabled"`
	NodeID  string `json:"nodeId,omitempty"`
	// Pushed is the resource the RM last accepted.
	Pushed     *yarn.NodeResource `json:"pushed,omitempty"`
	LastPush   time.Time          `json:"lastPush,omitzero"`
	Active     string             `json:"activeRM,omitempty"`
	LastError  string             `json:"lastError,omitempty"`
	NextTry    time.Time          `json:"nextTry,omitzero"`
	Pushes     int                `json:"pushes"`
	Skipped    string             `json:"skipped,omitempty"`
	LastChange time.Time          `json:"lastChange,omitzero"`
	// RMHas is what the RM held for the node at the last read-back.
	RMHas        *yarn.NodeResource `json:"rmHas,omitempty"`
	LastReadBack time.Time          `json:"lastReadBack,omitzero"`
	ReadBacks    int                `json:"readBacks"`
	// Drifts counts the read-backs that found the RM holding something
	// else than was pushed (then pushed again).
	Drifts int `json:"drifts"`
	// PushedTimeout is the over-commit timeout sent with Pushed (nil: -1,
	// never preempt).
	PushedTimeout *time.Duration `json:"pushedTimeoutNanos,omitempty"`
	// Preemption is the release asked of the RM (YARNRMPreemption).
	Preemption *rmrelease.Status `json:"preemption,omitempty"`
	// RMHeartbeat is the RM's node heartbeat interval as its /conf said
	// (0: not read) and PreemptionGrace the grace derived from it at the
	// last push that read it (every ask, and the first push with
	// YARNRMPreemption on): the grace an ask carries.
	RMHeartbeat     time.Duration `json:"rmHeartbeatNanos,omitempty"`
	PreemptionGrace time.Duration `json:"preemptionGraceNanos,omitempty"`
	// Own is YARN's own capacity for the node (what the RM held before the
	// first push), given back at a start with the gate off.
	Own *yarn.NodeResource `json:"own,omitempty"`
}

// NewRMSync returns the push.
func NewRMSync(opts RMSyncOptions) *RMSync {
	if opts.Interval == nil {
		opts.Interval = func() time.Duration { return 10 * time.Second }
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.ReadBack == nil {
		opts.ReadBack = func() time.Duration { return DefaultRMReadBack }
	}
	return &RMSync{opts: opts, bo: backoff.New(maxRMBackoff), errKinds: map[string]bool{}}
}

// Name names the loop in logs.
func (r *RMSync) Name() string { return "YARN ResourceManager node resource sync" }

// Enabled needs the gate and an RM endpoint.
func (r *RMSync) Enabled() bool {
	if !features.Enabled(features.YARNRMNodeResourceSync) {
		return false
	}
	if r.opts.Client == nil || r.opts.Client() == nil {
		r.warnOnce.Do(func() {
			klog.Warningf("yarn: %s is on but no ResourceManager is configured (--yarn-rm-endpoints): YARN's capacity is not pushed", features.YARNRMNodeResourceSync)
		})
		return false
	}
	return true
}

// Status returns a copy of the push's state.
func (r *RMSync) Status() RMSyncStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.st
	if s.Pushed != nil {
		p := *s.Pushed
		s.Pushed = &p
	}
	if s.PushedTimeout != nil {
		d := *s.PushedTimeout
		s.PushedTimeout = &d
	}
	if r.own != nil {
		o := r.own.Own
		s.Own = &o
	}
	if r.opts.Release != nil && features.Enabled(features.YARNRMPreemption) {
		st := r.opts.Release.Status()
		s.Preemption = &st
	}
	return s
}

// Run pushes every interval until stopCh closes.
func (r *RMSync) Run(stopCh <-chan struct{}) {
	r.mu.Lock()
	r.st.Enabled = true
	r.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-stopCh
		cancel()
	}()
	go func() {
		t := time.NewTicker(r.opts.Interval())
		defer t.Stop()
		for {
			r.Step(ctx, time.Now())
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// Capacity converts YARN's capacity to the RM's units: whole MiB and whole
// vcores, rounded down (never more than the node has).
func Capacity(b Batch) yarn.NodeResource {
	return yarn.NodeResource{MemoryMB: b.MemoryBytes >> 20, VCores: b.MilliCPU / 1000}
}

// DefaultRMReadBack is the default period of the read-back: with 5,000
// nodes, about 42 GETs a second on the RM.
const DefaultRMReadBack = 2 * time.Minute

// Action is what one step does.
type Action int

// The actions of a step.
const (
	// Wait: nothing to do now.
	Wait Action = iota
	// Push: the wanted capacity differs from what the RM last accepted.
	Push
	// ReadBack: nothing changed here, but what the RM holds is due to be
	// checked (periodically, or after an RM error).
	ReadBack
)

// NextAction decides a step: push when the wanted capacity differs from
// what was pushed, or when the capacity is below YARN's allocation and must
// carry an over-commit timeout that the last push did not (timeoutMissing);
// else read back when the last read-back is older than period or an RM
// error happened since.
func NextAction(pushed *yarn.NodeResource, want yarn.NodeResource, timeoutMissing bool, lastReadBack, now time.Time, period time.Duration, errorSince bool) Action {
	switch {
	case pushed == nil || *pushed != want || timeoutMissing:
		return Push
	case errorSince || !now.Before(lastReadBack.Add(period)):
		return ReadBack
	}
	return Wait
}

// Step pushes the capacity when it differs from what the RM last accepted,
// or when a read-back finds the RM holding something else (see
// NextAction), and no backoff is pending.
func (r *RMSync) Step(ctx context.Context, now time.Time) {
	r.pushMu.Lock()
	defer r.pushMu.Unlock()
	if r.closed {
		return
	}
	r.loadOwn()
	v := r.opts.View()
	nodeID := r.opts.NodeID()
	r.mu.Lock()
	r.st.NodeID = nodeID
	switch {
	case !v.OriginKnown:
		r.st.Skipped = "the node has no origin batch allocatable (annotation " + AnnotationOrigin + ")"
	case nodeID == "":
		r.st.Skipped = "the NodeManager's YARN node id is not known yet (--yarn-rm-node-id, the NM pod's annotation or the NM's node info)"
	default:
		r.st.Skipped = ""
	}
	want := Capacity(v.YARNCapacity)
	if capMB, ok := r.usageAsk(); ok {
		want.MemoryMB = min(want.MemoryMB, capMB)
	}
	over := Above(v.YARNAllocated, want)
	timeout := time.Duration(-1)
	if over != (yarn.NodeResource{}) && features.Enabled(features.YARNRMPreemption) && r.opts.PreemptionTimeout != nil {
		// During an over-commit the first deadline holds: a changed
		// capacity carries the time left to it (the RM restarts its timer
		// at every push that changes the node's resource).
		timeout = r.opts.Release.Remaining(now, r.opts.PreemptionTimeout())
	} else if over == (yarn.NodeResource{}) && r.opts.Release != nil {
		r.endRelease(now)
	}
	action := NextAction(r.st.Pushed, want, timeout >= 0 && r.st.PushedTimeout == nil, r.st.LastReadBack, now, r.opts.ReadBack(), r.readBackNow)
	if r.st.Skipped != "" || action == Wait || now.Before(r.st.NextTry) {
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()

	client := r.opts.Client()
	if action == ReadBack {
		cctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
		has, err := client.NodeResource(cctx, nodeID)
		cancel()
		r.mu.Lock()
		r.st.Active = client.Active()
		if err != nil {
			r.failed(ctx, err)
			r.mu.Unlock()
			return
		}
		r.readBackNow = false
		r.st.RMHas, r.st.LastReadBack = &has, now
		r.rmHolds(has, true)
		r.st.ReadBacks++
		if has == want {
			r.sent.confirmed()
			r.mu.Unlock()
			return
		}
		r.st.Drifts++
		r.count("drift")
		r.noteOwn(nodeID, has)
		r.sent.confirmed()
		klog.Warningf("yarn: the ResourceManager %s holds %d MB, %d vcores for node %s, not the %d MB, %d vcores pushed (an RM restart, a failover or the NodeManager registering again); pushing again",
			r.st.Active, has.MemoryMB, has.VCores, nodeID, want.MemoryMB, want.VCores)
		r.mu.Unlock()
	}

	if err := r.learnOwn(ctx, client, nodeID, timeout >= 0); err != nil {
		r.mu.Lock()
		r.failed(ctx, err)
		r.mu.Unlock()
		return
	}
	// The grace is derived from the RM's node heartbeat for every ask, and
	// once at the first push with YARNRMPreemption on, so that relief's RM
	// rung (which reads it to judge whether the RM can release in time)
	// knows a slow-heartbeat RM before the first ask.
	grace := time.Duration(0)
	r.mu.Lock()
	firstGrace := r.st.PreemptionGrace == 0 && features.Enabled(features.YARNRMPreemption) && r.opts.PreemptionTimeout != nil
	r.mu.Unlock()
	if r.opts.Release != nil && (timeout >= 0 || firstGrace) {
		grace = r.preemptionGrace(ctx, client)
	}
	start := time.Now()
	r.sent.add(nodeID, want)
	cctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	err := client.UpdateNodeResourceWithTimeout(cctx, nodeID, want, timeout)
	cancel()
	end := time.Now()
	// The RM started its timer during the request: koordlet's record of
	// the push is on the step's clock, after it.
	at := now.Add(end.Sub(start))
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st.Active = client.Active()
	if err != nil {
		r.failed(ctx, err)
		return
	}
	if r.bo.Failures() > 0 {
		klog.Infof("yarn: the ResourceManager %s accepts YARN's capacity again", r.st.Active)
	}
	r.bo.Reset()
	r.sent.confirmed()
	r.errKinds, r.st.LastError, r.st.NextTry = map[string]bool{}, "", time.Time{}
	r.st.Pushed, r.st.LastPush, r.st.LastChange = &want, end, end
	r.st.RMHas, r.st.LastReadBack = &want, now
	r.rmHolds(want, true)
	r.st.Pushes++
	if grace > 0 {
		r.st.PreemptionGrace = grace
	}
	r.st.PushedTimeout = nil
	if timeout >= 0 {
		r.st.PushedTimeout = &timeout
		if r.opts.Release != nil {
			r.opts.Release.Start(rmrelease.Ask{At: at, Timeout: timeout, Grace: grace, MemoryMB: over.MemoryMB, VCores: over.VCores})
		}
		r.count("preempt")
		klog.Infof("yarn: pushed node %s resource %d MB, %d vcores to the ResourceManager %s, %d MB and %d vcores below YARN's allocation: the RM asks the ApplicationMasters for containers back and preempts them after %v",
			nodeID, want.MemoryMB, want.VCores, r.st.Active, over.MemoryMB, over.VCores, timeout.Round(time.Millisecond))
		return
	}
	r.count("ok")
	klog.V(2).Infof("yarn: pushed node %s resource %d MB, %d vcores to the ResourceManager %s", nodeID, want.MemoryMB, want.VCores, r.st.Active)
}

// usageAsk is the cap on YARN's memory capacity memory relief asks for
// node memory usage (MiB), with YARNRMPreemption on.
func (r *RMSync) usageAsk() (int64, bool) {
	if r.opts.Release == nil || !features.Enabled(features.YARNRMPreemption) {
		return 0, false
	}
	return r.opts.Release.UsageAsk()
}

// Above returns YARN's allocation above the capacity c, in the RM's units
// (whole MiB, whole vcores rounded up), per resource at least 0.
func Above(allocated Batch, c yarn.NodeResource) yarn.NodeResource {
	mb := (allocated.MemoryBytes + 1<<20 - 1) >> 20
	vc := (allocated.MilliCPU + 999) / 1000
	return yarn.NodeResource{MemoryMB: max(mb-c.MemoryMB, 0), VCores: max(vc-c.VCores, 0)}
}

// endRelease ends a release asked of the RM once nothing is above the
// capacity: said once, counted by whether it ended in time.
func (r *RMSync) endRelease(now time.Time) {
	was, inTime := r.opts.Release.End(now)
	if !was {
		return
	}
	if inTime {
		klog.Infof("yarn: YARN's allocation on the node is within its capacity again: the ResourceManager released the over-commit")
		r.count("preempt_released")
		return
	}
	klog.Infof("yarn: YARN's allocation on the node is within its capacity again, after the ResourceManager's over-commit timeout had passed")
	r.count("preempt_late")
}

// failed records an RM error: backoff, a read-back at the next try, one log
// line per kind of error. The caller holds r.mu.
func (r *RMSync) failed(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	r.readBackNow = true
	r.rmHolds(yarn.NodeResource{}, false)
	r.st.NextTry = time.Now().Add(r.bo.Fail(min(r.opts.Interval(), maxRMBackoff)))
	r.st.LastError = err.Error()
	r.count("error")
	kind := rmErrorKind(err)
	if !r.errKinds[kind] {
		r.errKinds[kind] = true
		klog.Errorf("yarn: cannot push YARN's capacity to the ResourceManager or read it back (%s; retried with backoff, logged once per kind): %v", kind, err)
	}
}

// rmHolds tells the release window what the RM holds for the node (ok
// false: not known), which the evictor reads before it kills for an
// over-commit.
func (r *RMSync) rmHolds(c yarn.NodeResource, ok bool) {
	if r.opts.Release != nil {
		r.opts.Release.RMHolds(rmrelease.Capacity{MemoryMB: c.MemoryMB, VCores: c.VCores}, ok)
	}
}

func (r *RMSync) count(result string) {
	if r.opts.Metrics != nil {
		r.opts.Metrics.RMUpdates.WithLabelValues(r.opts.NodeName, result).Inc()
	}
}

// rmErrorKind classes a push error for logging once per kind.
func rmErrorKind(err error) string {
	var httpErr *yarn.RMHTTPError
	var netErr net.Error
	switch {
	case errors.As(err, &httpErr):
		return fmt.Sprintf("HTTP %d", httpErr.StatusCode)
	case errors.Is(err, yarn.ErrResponseTooLarge):
		return "response too large"
	case errors.Is(err, yarn.ErrNoActiveRM) && errors.Is(err, yarn.ErrStandbyRM):
		return "no active RM (standby)"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case errors.Is(err, yarn.ErrNoActiveRM):
		return "no RM reachable"
	}
	return "other"
}

// AsksRelease reports whether a release can be asked of the RM: the push
// runs (Enabled) and YARNRMPreemption is on.
func (r *RMSync) AsksRelease() bool {
	return r.Enabled() && features.Enabled(features.YARNRMPreemption)
}
