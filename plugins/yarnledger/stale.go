package yarnledger

import (
	"context"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/backoff"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
)

// StaleEntry removes the Node's hadoop-yarn entry that an earlier koordlet
// with YARNBatchLedger left when this one runs with the gate off: nothing
// would keep it current, and koord-manager would go on taking a stale YARN
// allocation out of the batch allocatable. It removes the entry only when
// this ledger wrote the annotation last (LastWrittenByUs): an entry another
// writer keeps (koord-yarn-operator) is left alone. It tries once koordlet's
// client exists and again with backoff after errors, until it is done.
type StaleEntry struct {
	// Client is koordlet's Kubernetes client (nil until koordlet made it).
	Client   func() kubernetes.Interface
	NodeName string
	// Retry is the first wait after a failure (doubled up to 5 minutes);
	// default 5 seconds.
	Retry time.Duration

	// done: an attempt found nothing left to do (RestorePending).
	done atomic.Bool
}

// RestorePending is 1 until an attempt has removed the entry or found none of
// koordlet-yarn's to remove (for koordlet_yarn_restore_pending and
// /yarn/restore), 0 after.
func (s *StaleEntry) RestorePending() int {
	if s.done.Load() {
		return 0
	}
	return 1
}

// Name names the loop in koordlet's log.
func (s *StaleEntry) Name() string { return "YARN batch ledger stale entry removal" }

// Enabled is true while YARNBatchLedger is off.
func (s *StaleEntry) Enabled() bool {
	return !features.Enabled(features.YARNBatchLedger) && s.NodeName != ""
}

// Run starts the removal; it ends when done or when stopCh closes.
func (s *StaleEntry) Run(stopCh <-chan struct{}) {
	go func() {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { <-stopCh; cancel() }()
		initial := s.Retry
		if initial <= 0 {
			initial = 5 * time.Second
		}
		bo := backoff.New(5 * time.Minute)
		logged := false
		for {
			done, err := s.Once(ctx)
			if done {
				return
			}
			if err != nil && !logged {
				logged = true
				klog.Warningf("yarn: cannot check the Node's %s for a stale %s entry (retried with backoff): %v", AnnotationKey, EntryName, err)
			}
			select {
			case <-stopCh:
				return
			case <-time.After(bo.Fail(initial)):
			}
		}
	}()
}

// Once makes one attempt; done is true when nothing is left to do.
func (s *StaleEntry) Once(ctx context.Context) (done bool, err error) {
	var client kubernetes.Interface
	if s.Client != nil {
		client = s.Client()
	}
	if client == nil {
		return false, nil
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	removed, kept, err := (&NodeWriter{Client: client, NodeName: s.NodeName}).RemoveOurs(wctx)
	if err != nil {
		return false, err
	}
	s.done.Store(true)
	switch {
	case removed:
		klog.Infof("yarn: %s is off: removed the %s entry koordlet-yarn had left in the Node's %s (nothing keeps it current now)",
			features.YARNBatchLedger, EntryName, AnnotationKey)
	case kept != "":
		klog.Infof("yarn: %s is off; the Node's %s entry in %s is left as it is: %s", features.YARNBatchLedger, EntryName, AnnotationKey, kept)
	}
	return true, nil
}
