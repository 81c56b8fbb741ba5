package yarnledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/backoff"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/rmrelease"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// capacityRecord is YARN's own capacity for the node: what the RM held for
// it before koordlet's first push (the NodeManager's configured resource
// as it registered), kept in a file so that it is given back after a
// crash once the gate is off.
type capacityRecord struct {
	NodeID string            `json:"nodeId"`
	Own    yarn.NodeResource `json:"own"`
	// TimeoutSent: a push carried an over-commit timeout. The RM keeps a
	// node's timeout (a later -1 does not clear it), so the give-back
	// sends the longest one the RM takes instead of -1.
	TimeoutSent bool      `json:"timeoutSent,omitempty"`
	Since       time.Time `json:"since"`
}

// neverTimeout is the longest over-commit timeout the RM takes (its
// ResourceOption holds milliseconds in an int): about 24.8 days. Sent with
// the give-back after a timeout was sent, it moves the RM's stale deadline
// out of the way of whoever changes the node's resource next.
const neverTimeout = time.Duration(math.MaxInt32) * time.Millisecond

// readRecord reads the record file; nil without one.
func readRecord(path string) (*capacityRecord, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec capacityRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("decode %s: %w", path, err)
	}
	if rec.NodeID == "" || rec.Own.MemoryMB < 0 || rec.Own.VCores < 0 {
		return nil, fmt.Errorf("%s: no node id or a negative resource", path)
	}
	return &rec, nil
}

// writeRecord writes the record crash-safely: a temporary file synced and
// renamed over the record, the directory synced.
func writeRecord(path string, rec capacityRecord) error {
	if path == "" {
		return nil
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".yarn-rm-record-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// record is the record file's path ("": none).
func (r *RMSync) record() string {
	if r.opts.Record == nil {
		return ""
	}
	return r.opts.Record()
}

// loadOwn reads the record once (a koordlet that pushed before it
// restarted left it). The caller holds pushMu.
func (r *RMSync) loadOwn() {
	if r.ownLoaded {
		return
	}
	r.ownLoaded = true
	rec, err := readRecord(r.record())
	if err != nil {
		klog.Errorf("yarn: cannot read the record of YARN's own capacity (%s): %v; it is read again from the ResourceManager before the next push", r.record(), err)
		return
	}
	if rec != nil {
		r.own = rec
		klog.Infof("yarn: YARN's own capacity for node %s, recorded before koordlet's first push on %s: %d MB, %d vcores (given back when %s is turned off)",
			rec.NodeID, rec.Since.Format(time.RFC3339), rec.Own.MemoryMB, rec.Own.VCores, "YARNRMNodeResourceSync")
	}
}

// saveOwn writes an update of the record (a drift, a timeout sent); a
// failure is logged once (the record written before the first push stays,
// with the capacity it holds). The caller holds pushMu.
func (r *RMSync) saveOwn() {
	if err := writeRecord(r.record(), *r.own); err != nil && !r.saidRecord {
		r.saidRecord = true
		klog.Errorf("yarn: cannot update the record of YARN's own capacity in %s (logged once): %v", r.record(), err)
	}
}

// learnOwn makes sure YARN's own capacity for nodeID is known and recorded
// before a push changes it: read from the RM (the NodeManager's resource
// as it registered) the first time; timeout says the push carries an
// over-commit timeout. Until it is read and recorded nothing is pushed (an
// error): a capacity read after a push of koordlet's, by this koordlet or
// the next, would be koordlet's own and given back as YARN's ever after.
// The caller holds pushMu.
func (r *RMSync) learnOwn(ctx context.Context, client *yarn.RMClient, nodeID string, timeout bool) error {
	r.loadOwn()
	if r.own != nil && r.own.NodeID != nodeID {
		klog.Warningf("yarn: the NodeManager's YARN node id is %s now, not the recorded %s: YARN's own capacity is read again from the ResourceManager", nodeID, r.own.NodeID)
		r.own = nil
	}
	if r.own == nil {
		cctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
		has, err := client.NodeResource(cctx, nodeID)
		cancel()
		if err != nil {
			// An RM that does not list the node refuses the push too.
			return fmt.Errorf("read YARN's own capacity for node %s before the first push (nothing is pushed until it is read): %w", nodeID, err)
		}
		own := capacityRecord{NodeID: nodeID, Own: has, Since: time.Now(), TimeoutSent: timeout}
		if err := writeRecord(r.record(), own); err != nil {
			return fmt.Errorf("record YARN's own capacity for node %s in %s (nothing is pushed until it is recorded): %w", nodeID, r.record(), err)
		}
		r.own = &own
		klog.Infof("yarn: YARN's own capacity for node %s at the ResourceManager: %d MB, %d vcores (recorded; given back at a start with %s off)",
			nodeID, has.MemoryMB, has.VCores, "YARNRMNodeResourceSync")
		r.mu.Lock()
		r.st.Own = &has
		r.mu.Unlock()
		return nil
	}
	if timeout && !r.own.TimeoutSent {
		r.own.TimeoutSent = true
		r.saveOwn()
	}
	return nil
}

// noteOwn takes what the RM holds after a drift as YARN's own capacity: the
// RM resets a node to what the NodeManager registers with, and the
// NodeManager keeps a pushed resource across an RM restart or failover, so
// a drift means the NodeManager restarted with its yarn-site capacity (or
// someone else set one). A value koordlet sent since the RM last confirmed
// what it holds is koordlet's (a push the RM took whose answer was lost),
// never YARN's own. The caller holds pushMu.
func (r *RMSync) noteOwn(nodeID string, has yarn.NodeResource) {
	if r.own == nil || r.own.NodeID != nodeID || r.own.Own == has || r.sent.has(nodeID, has) {
		return
	}
	r.own.Own = has
	r.st.Own = &has
	r.saveOwn()
}

// sentValues are the capacities pushed to one node since the RM last
// confirmed what it holds (a push answered, a read-back): the RM may hold
// any of them. The caller holds pushMu.
type sentValues struct {
	node   string
	values map[yarn.NodeResource]bool
}

// add notes a push of v to node.
func (s *sentValues) add(node string, v yarn.NodeResource) {
	if s.node != node || s.values == nil {
		s.node, s.values = node, map[yarn.NodeResource]bool{}
	}
	s.values[v] = true
}

// has: v was pushed to node since the last confirmation.
func (s *sentValues) has(node string, v yarn.NodeResource) bool {
	return s.node == node && s.values[v]
}

// confirmed: the RM answered what it holds; earlier pushes are over.
func (s *sentValues) confirmed() { s.values = nil }

// preemptionGrace is the grace for an ask: derived from the RM's node
// heartbeat interval (rmrelease.GraceFor) where its /conf answers, at least
// the configured grace; read once per over-commit.
func (r *RMSync) preemptionGrace(ctx context.Context, client *yarn.RMClient) time.Duration {
	floor := rmrelease.DefaultGrace
	if r.opts.PreemptionGrace != nil {
		floor = r.opts.PreemptionGrace()
	}
	r.mu.Lock()
	cached := r.st.PreemptionGrace
	r.mu.Unlock()
	if _, pending := r.opts.Release.Pending(time.Now()); pending && cached > 0 {
		return cached
	}
	resync := time.Duration(0)
	if r.opts.NMResync != nil {
		resync = r.opts.NMResync()
	}
	cctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	hb, err := client.NodeHeartbeatInterval(cctx)
	cancel()
	if err != nil {
		if !r.saidGrace {
			r.saidGrace = true
			klog.Warningf("yarn: the ResourceManager's node heartbeat interval cannot be read (logged once): %v; the preemption grace after the over-commit timeout is --yarn-rm-preemption-grace, %v", err, floor)
		}
		return floor
	}
	grace := rmrelease.GraceFor(hb, resync, floor)
	r.mu.Lock()
	changed := r.st.RMHeartbeat != hb
	r.st.RMHeartbeat = hb
	r.mu.Unlock()
	if changed {
		klog.Infof("yarn: the ResourceManager's node heartbeat interval is %v: koordlet waits %v after the over-commit timeout for its preemption", hb, grace)
	}
	return grace
}

// Restore gives YARN's own capacity back to the RM (at a start with the
// gate off, and on a clean stop when no record file keeps it): the recorded
// capacity, with the longest timeout the RM takes if one of ours was sent,
// then the record is removed. After it the sync pushes nothing. It reports
// whether a capacity was given back.
func (r *RMSync) Restore(ctx context.Context) (bool, error) {
	r.pushMu.Lock()
	defer r.pushMu.Unlock()
	return r.restore(ctx)
}

// restore is Restore; the caller holds pushMu.
func (r *RMSync) restore(ctx context.Context) (bool, error) {
	r.closed = true
	r.loadOwn()
	if r.own == nil {
		return false, nil
	}
	var client *yarn.RMClient
	if r.opts.Client != nil {
		client = r.opts.Client()
	}
	if client == nil {
		return false, fmt.Errorf("YARN's own capacity for node %s (%d MB, %d vcores) is recorded but %w: it is not given back",
			r.own.NodeID, r.own.Own.MemoryMB, r.own.Own.VCores, errNoRM)
	}
	timeout := time.Duration(-1)
	if r.own.TimeoutSent {
		timeout = neverTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	err := client.UpdateNodeResourceWithTimeout(cctx, r.own.NodeID, r.own.Own, timeout)
	cancel()
	if err != nil {
		return false, fmt.Errorf("give YARN's own capacity back to the ResourceManager (kept in the record, given back at the next start with the gate off): %w", err)
	}
	if r.record() != "" {
		if err := os.Remove(r.record()); err != nil && !errors.Is(err, os.ErrNotExist) {
			klog.Warningf("yarn: remove %s: %v", r.record(), err)
		}
	}
	klog.Infof("yarn: gave YARN's own capacity for node %s back to the ResourceManager %s: %d MB, %d vcores",
		r.own.NodeID, client.Active(), r.own.Own.MemoryMB, r.own.Own.VCores)
	r.count("restored")
	r.rmHolds(r.own.Own, true)
	r.own = nil
	r.mu.Lock()
	r.st.Own, r.st.Pushed = nil, nil
	r.mu.Unlock()
	return true, nil
}

// Stop ends the sync on a clean stop of koordlet: nothing is pushed after
// it. The capacity pushed stays at the RM (a rollout's next koordlet
// continues from the record; one started with the gate off gives YARN's
// own back): given back here, the RM would place containers up to YARN's
// full capacity until the next koordlet's first push, which would then
// find YARN over its capacity and have it preempted. Only without a record
// file (--yarn-rm-capacity-record empty), where the next koordlet could not
// tell YARN's own capacity from koordlet's push, is it given back here.
func (r *RMSync) Stop(ctx context.Context) {
	r.mu.Lock()
	ran := r.st.Enabled
	r.mu.Unlock()
	if !ran {
		return
	}
	r.pushMu.Lock()
	defer r.pushMu.Unlock()
	r.closed = true
	if r.own == nil {
		return
	}
	if r.record() != "" {
		klog.Infof("yarn: koordlet stops: the ResourceManager keeps node %s's capacity as pushed; YARN's own (%d MB, %d vcores, in %s) goes back at a start with %s off",
			r.own.NodeID, r.own.Own.MemoryMB, r.own.Own.VCores, r.record(), features.YARNRMNodeResourceSync)
		return
	}
	if _, err := r.restore(ctx); err != nil {
		klog.Errorf("yarn: %v", err)
	}
}

// RestorePending is 1 while a record of YARN's own capacity is on the node (or
// unreadable): a capacity koordlet pushed to the ResourceManager that was
// not given back yet; 0 otherwise. For koordlet_yarn_restore_pending and
// /yarn/restore; it reads the record file, never the RM.
func (r *RMSync) RestorePending() int {
	rec, err := readRecord(r.record())
	if err != nil || rec != nil {
		return 1
	}
	return 0
}

// errNoRM: a record of YARN's own capacity, and no ResourceManager
// configured to give it back to.
var errNoRM = errors.New("no ResourceManager is configured (--yarn-rm-endpoints)")

// GiveBack gives YARN's own capacity back to the RM in the background when
// koordlet runs without the sync (YARNRMNodeResourceSync off, or no RM
// endpoint) after a koordlet that pushed left the record: it retries with
// backoff until the RM takes it or koordlet stops, so that neither a slow
// nor a down RM holds up koordlet's start (koordlet runs its strategies'
// Run one after another). RMSync.RestorePending counts it until done.
type GiveBack struct {
	Sync *RMSync
	// Retry is the first wait after a failure (doubled up to 5 minutes);
	// default: the sync interval.
	Retry time.Duration

	// done is closed when the give-back ended (tests).
	done chan struct{}
}

// Name names the loop in koordlet's log.
func (g *GiveBack) Name() string { return "YARN ResourceManager capacity give-back" }

// Enabled is true while the sync does not run.
func (g *GiveBack) Enabled() bool { return !g.Sync.Enabled() }

// Run starts the give-back and returns; it ends when the capacity is given
// back (or nothing is recorded) or when stopCh closes (the record stays).
func (g *GiveBack) Run(stopCh <-chan struct{}) {
	g.done = make(chan struct{})
	go func() {
		defer close(g.done)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-stopCh:
				cancel()
			case <-ctx.Done():
			}
		}()
		initial := g.Retry
		if initial <= 0 {
			initial = g.Sync.opts.Interval()
		}
		bo := backoff.New(maxRMBackoff)
		logged := false
		for {
			ok, err := g.Sync.Restore(ctx)
			switch {
			case err == nil:
				if ok {
					klog.Infof("yarn: %s is off: YARN's own capacity is back at the ResourceManager", features.YARNRMNodeResourceSync)
				}
				return
			case ctx.Err() != nil:
				return
			case errors.Is(err, errNoRM):
				klog.Errorf("yarn: %v", err)
				return
			case !logged:
				logged = true
				klog.Errorf("yarn: %v (retried with backoff, logged once)", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(bo.Fail(initial)):
			}
		}
	}()
}
