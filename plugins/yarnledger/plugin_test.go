package yarnledger

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// fakeNM is the NM health the ledger reads.
type fakeNM struct {
	last time.Time
	ok   bool
}

func newLedger(t *testing.T, st *store.Store, nm *fakeNM, client kubernetes.Interface, interval time.Duration) *Ledger {
	return New(Options{
		Store: st, NM: func() (time.Time, bool) { return nm.last, nm.ok },
		Node:   func() *corev1.Node { return nil },
		Pods:   func() []*statesinformer.PodMeta { return nil },
		Client: func() kubernetes.Interface { return client }, NodeName: "n1",
		PatchInterval: func() time.Duration { return interval }, Patch: func() bool { return true },
		// Every change once the interval passed (the PatchPolicy's
		// hysteresis and max age have their own test).
		MaxAge: func() time.Duration { return interval },
	})
}

func resync(t *testing.T, st *store.Store, list []yarn.NMContainer) {
	st.Resync(store.Observation{NM: list, NMOK: true, ScanOK: true, Started: time.Now()}, time.Now())
}

func nmc(t *testing.T, id, state string, vcores, mb int64) yarn.NMContainer {
	cid, err := yarn.ParseContainerID(id)
	require.NoError(t, err)
	return yarn.NMContainer{ID: cid, State: state, TotalVCoresNeeded: vcores, TotalMemoryNeededMB: mb}
}

func annotation(t *testing.T, client kubernetes.Interface) (Batch, bool) {
	node, err := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	require.NoError(t, err)
	b, ok, err := Entry(node.Annotations[AnnotationKey])
	require.NoError(t, err)
	return b, ok
}

func TestLedgerFollowsNMAndKeepsValueWhileDown(t *testing.T) {
	client := fake.NewClientset(testNode(nil))
	st := store.New()
	nm := &fakeNM{}
	l := newLedger(t, st, nm, client, 50*time.Millisecond)
	ctx := context.Background()
	t0 := time.Now()
	tNM := t0.Add(-time.Minute) // when the NM answered

	// The NM never answered: nothing is known, nothing written.
	l.Refresh(t0)
	assert.Zero(t, l.Sync(ctx, t0))
	_, ok := annotation(t, client)
	assert.False(t, ok)

	resync(t, st, []yarn.NMContainer{
		nmc(t, "container_1700000000000_0001_01_000001", yarn.StateRunning, 1, 1024),
		nmc(t, "container_1700000000000_0001_01_000002", yarn.StateLocalizing, 2, 2048),
		nmc(t, "container_1700000000000_0001_01_000003", yarn.StateExitedWithSuccess, 4, 4096),
	})
	nm.last, nm.ok = tNM, true
	v := l.Refresh(t0)
	assert.Equal(t, Batch{MilliCPU: 3000, MemoryBytes: 3072 << 20}, v.YARNAllocated)
	assert.Zero(t, l.Sync(ctx, t0))
	got, ok := annotation(t, client)
	require.True(t, ok)
	assert.Equal(t, Batch{MilliCPU: 3000, MemoryBytes: 3072 << 20}, got)

	// Churn inside the interval is coalesced: one pending write, later.
	resync(t, st, []yarn.NMContainer{nmc(t, "container_1700000000000_0001_01_000001", yarn.StateRunning, 1, 1024)})
	l.Refresh(t0)
	assert.Equal(t, int64(3000), l.Status().YARNAllocated.MilliCPU, "no new NM answer: the value stays")
	nm.last = tNM.Add(time.Second)
	l.Refresh(t0)
	wait := l.Sync(ctx, time.Now())
	assert.Greater(t, wait, time.Duration(0))
	got, _ = annotation(t, client)
	assert.Equal(t, int64(3000), got.MilliCPU, "not yet")
	time.Sleep(wait)
	assert.Zero(t, l.Sync(ctx, time.Now()))
	got, _ = annotation(t, client)
	assert.Equal(t, Batch{MilliCPU: 1000, MemoryBytes: 1024 << 20}, got)
	assert.Equal(t, 2, l.Status().Annotation.Patches)

	// NM down: the store's view moves on (a cgroup removal), the value does not.
	nm.ok = false
	resync(t, st, nil)
	time.Sleep(60 * time.Millisecond)
	l.Refresh(time.Now())
	assert.Zero(t, l.Sync(ctx, time.Now()))
	s := l.Status()
	assert.False(t, s.NodeManagerOK)
	assert.True(t, s.YARNAllocatedKnown)
	assert.Equal(t, tNM.Add(time.Second), s.YARNAllocatedAsOf)
	assert.GreaterOrEqual(t, s.YARNAllocatedAgeSeconds, 0.05)
	got, _ = annotation(t, client)
	assert.Equal(t, int64(1000), got.MilliCPU)

	// Back: the empty node is written.
	nm.last, nm.ok = tNM.Add(2*time.Second), true
	l.Refresh(time.Now())
	assert.Zero(t, l.Sync(ctx, time.Now()))
	got, ok = annotation(t, client)
	require.True(t, ok)
	assert.Equal(t, Batch{}, got)
}

func TestLedgerBacksOffAndKeepsMalformed(t *testing.T) {
	client := fake.NewClientset(testNode(map[string]string{AnnotationKey: "garbage"}))
	st := store.New()
	resync(t, st, []yarn.NMContainer{nmc(t, "container_1700000000000_0001_01_000002", yarn.StateRunning, 1, 1024)})
	nm := &fakeNM{last: time.Now(), ok: true}
	l := newLedger(t, st, nm, client, 100*time.Millisecond)
	now := time.Now()
	l.Refresh(now)
	d := l.Sync(context.Background(), now)
	assert.GreaterOrEqual(t, d, 200*time.Millisecond, "one failure doubles the interval")
	assert.LessOrEqual(t, d, 240*time.Millisecond, "with at most 20% jitter")
	s := l.Status()
	assert.Contains(t, s.Annotation.LastError, "malformed")
	assert.Nil(t, s.Annotation.Written)
	node, err := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "garbage", node.Annotations[AnnotationKey])
	// Within the backoff nothing is attempted.
	assert.Greater(t, l.Sync(context.Background(), time.Now()), time.Duration(0))
}

func TestLedgerAsksForResyncOnNewCgroups(t *testing.T) {
	var asks atomic.Int32
	l := New(Options{Store: store.New(), PatchInterval: func() time.Duration { return 100 * time.Millisecond },
		RequestResync: func() { asks.Add(1) }})
	id, err := yarn.ParseContainerID("container_1700000000000_0001_01_000002")
	require.NoError(t, err)
	cgroupOnly := &store.Container{Name: id.String(), ID: id, Source: store.SourceCgroup}
	listed := &store.Container{Name: id.String(), ID: id, Source: store.SourceBoth}

	l.onEvent(store.Event{Type: store.Added, Container: listed})
	l.onEvent(store.Event{Type: store.Removed, Container: cgroupOnly})
	assert.Zero(t, asks.Load(), "only containers the NM has not listed yet")
	l.onEvent(store.Event{Type: store.Added, Container: cgroupOnly})
	assert.EqualValues(t, 1, asks.Load())
	for i := 0; i < 5; i++ {
		l.onEvent(store.Event{Type: store.Added, Container: cgroupOnly})
	}
	assert.EqualValues(t, 1, asks.Load(), "at most one per interval")
	assert.Eventually(t, func() bool { return asks.Load() == 2 }, time.Second, 10*time.Millisecond,
		"the ones found meanwhile are asked for once the interval has passed")
	time.Sleep(200 * time.Millisecond)
	assert.EqualValues(t, 2, asks.Load())
}

func TestNeedsWrite(t *testing.T) {
	now := time.Unix(1700000000, 0)
	want := Batch{MilliCPU: 3000, MemoryBytes: 1 << 30}
	other := Batch{MilliCPU: 1000, MemoryBytes: 1 << 30}
	nodeWith := func(b *Batch, record bool) *corev1.Node {
		ann := map[string]string{}
		if b != nil {
			v, _, err := SetEntry("", false, *b)
			require.NoError(t, err)
			ann[AnnotationKey] = v
			if record {
				ann[AnnotationWritten] = writtenRecord(*b)
			}
		}
		return testNode(ann)
	}
	old := now.Add(-time.Minute)
	for _, tc := range []struct {
		name              string
		node              *corev1.Node
		written           *Batch
		lastWrite         time.Time
		write, correction bool
	}{
		{"nothing written, no node yet", nil, nil, time.Time{}, true, false},
		{"written, no node yet", nil, &want, old, false, false},
		{"the Node holds it", nodeWith(&want, true), nil, time.Time{}, false, false},
		{"the Node holds it without the record", nodeWith(&want, false), &want, old, true, true},
		{"written a moment ago, the informer behind", nodeWith(&other, true), &want, now.Add(-time.Second), false, false},
		{"re-registered Node without the entry", nodeWith(nil, false), &want, old, true, true},
		{"another writer changed it", nodeWith(&other, false), &want, old, true, true},
		{"a new value", nodeWith(&other, true), &other, old, true, false},
	} {
		w, c := NeedsWrite(tc.node, want, tc.written, tc.lastWrite, now)
		assert.Equal(t, tc.write, w, tc.name)
		assert.Equal(t, tc.correction, c, tc.name)
	}
}

func TestExpired(t *testing.T) {
	now := time.Unix(1700000000, 0)
	for _, tc := range []struct {
		name       string
		lastOK     time.Time
		nmOK       bool
		containers int
		want       bool
	}{
		{"NM answering", now.Add(-time.Hour), true, 0, false},
		{"gone for longer, nothing left", now.Add(-11 * time.Minute), false, 0, true},
		{"gone for longer, containers left", now.Add(-11 * time.Minute), false, 2, false},
		{"gone briefly", now.Add(-time.Minute), false, 0, false},
		{"never answered since start, long ago", time.Time{}, false, 0, true},
	} {
		assert.Equal(t, tc.want, Expired(tc.lastOK, now.Add(-20*time.Minute), now, tc.nmOK, tc.containers, 10*time.Minute), tc.name)
	}
	assert.False(t, Expired(time.Time{}, now.Add(-time.Minute), now, false, 0, 10*time.Minute), "never answered, koordlet just started")
}

// TestLedgerCorrectsTheNode: the ledger compares with the Node as the
// informer shows it: an entry changed behind its back (a re-registered
// Node, a hand edit, another writer) is written again. The code before
// compared with its own last write only and never corrected it.
func TestLedgerCorrectsTheNode(t *testing.T) {
	client := fake.NewClientset(testNode(nil))
	st := store.New()
	nm := &fakeNM{last: time.Now(), ok: true}
	l := newLedger(t, st, nm, client, 10*time.Millisecond)
	l.opts.Node = func() *corev1.Node {
		n, err := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
		require.NoError(t, err)
		return n
	}
	ctx := context.Background()
	resync(t, st, []yarn.NMContainer{nmc(t, "container_1700000000000_0001_01_000002", yarn.StateRunning, 2, 2048)})
	now := time.Now()
	l.Refresh(now)
	assert.Zero(t, l.Sync(ctx, now))
	want := Batch{MilliCPU: 2000, MemoryBytes: 2048 << 20}
	got, ok := annotation(t, client)
	require.True(t, ok)
	require.Equal(t, want, got)

	// Another writer sets the entry.
	n, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	require.NoError(t, err)
	n.Annotations[AnnotationKey], _, err = SetEntry(n.Annotations[AnnotationKey], true, Batch{MilliCPU: 500})
	require.NoError(t, err)
	_, err = client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)

	later := now.Add(cacheLag + time.Second)
	l.Refresh(later)
	assert.Zero(t, l.Sync(ctx, later))
	got, _ = annotation(t, client)
	assert.Equal(t, want, got, "corrected")
	assert.Equal(t, 1, l.Status().Annotation.Corrections)
	assert.Zero(t, l.Sync(ctx, later.Add(time.Minute)))
	assert.Equal(t, 1, l.Status().Annotation.Corrections, "in sync: nothing more")
}

// TestLedgerExpiresWhenTheNMIsGone: the NodeManager gone for longer than
// the expiry and no container left: the entry is withdrawn (batch capacity
// comes back); it is written again when the NM is back. The code before
// kept the entry forever.
func TestLedgerExpiresWhenTheNMIsGone(t *testing.T) {
	client := fake.NewClientset(testNode(nil))
	st := store.New()
	nm := &fakeNM{last: time.Now(), ok: true}
	l := newLedger(t, st, nm, client, 10*time.Millisecond)
	l.opts.Expiry = func() time.Duration { return 10 * time.Minute }
	ctx := context.Background()
	resync(t, st, []yarn.NMContainer{nmc(t, "container_1700000000000_0001_01_000002", yarn.StateRunning, 2, 2048)})
	now := time.Now()
	l.Refresh(now)
	assert.Zero(t, l.Sync(ctx, now))
	_, ok := annotation(t, client)
	require.True(t, ok)

	// The NM pod is deleted; its containers are gone from the node.
	nm.ok = false
	st.Resync(store.Observation{NMOK: false, ScanOK: true, Started: time.Now()}, time.Now())
	l.Refresh(now.Add(5 * time.Minute))
	assert.Zero(t, l.Sync(ctx, now.Add(5*time.Minute)))
	_, ok = annotation(t, client)
	assert.True(t, ok, "within the expiry: kept")
	l.Refresh(now.Add(11 * time.Minute))
	l.Sync(ctx, now.Add(11*time.Minute))
	_, ok = annotation(t, client)
	assert.False(t, ok, "expired: withdrawn")
	assert.True(t, l.Status().Annotation.Expired)

	nm.last, nm.ok = time.Now().Add(time.Second), true
	resync(t, st, nil)
	l.Refresh(now.Add(12 * time.Minute))
	assert.Zero(t, l.Sync(ctx, now.Add(12*time.Minute)))
	got, ok := annotation(t, client)
	assert.True(t, ok, "the NM is back: written again")
	assert.Equal(t, Batch{}, got)
	assert.False(t, l.Status().Annotation.Expired)
}

// TestLedgerExpiresOverEmptyCgroups: an NM that died before removing its
// containers' cgroups leaves empty container_* directories; they hold no
// process and no allocation, so the entry expires as if they were gone.
// A cgroup that still has a process keeps the entry. The code before
// counted any container with a cgroup and kept the entry forever.
func TestLedgerExpiresOverEmptyCgroups(t *testing.T) {
	const empty, live = "container_1700000000000_0001_01_000002", "container_1700000000000_0001_01_000003"
	scan := func(t *testing.T, pids map[string][]int) []cgroups.Container {
		var out []cgroups.Container
		for name, p := range pids {
			id, err := yarn.ParseContainerID(name)
			require.NoError(t, err)
			c := cgroups.Container{Name: name, ID: id, Pids: p}
			c.Cgroups[cgroups.CPU] = cgroups.Ref{Dir: "hadoop-yarn/" + name, Owned: true}
			out = append(out, c)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		pids    map[string][]int
		expired bool
	}{
		{"only empty cgroups left", map[string][]int{empty: nil}, true},
		{"a process left in one", map[string][]int{empty: nil, live: {4242}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(testNode(nil))
			st := store.New()
			nm := &fakeNM{last: time.Now(), ok: true}
			l := newLedger(t, st, nm, client, 10*time.Millisecond)
			l.opts.Expiry = func() time.Duration { return 10 * time.Minute }
			ctx := context.Background()
			resync(t, st, []yarn.NMContainer{nmc(t, empty, yarn.StateRunning, 2, 2048), nmc(t, live, yarn.StateRunning, 1, 1024)})
			now := time.Now()
			l.Refresh(now)
			assert.Zero(t, l.Sync(ctx, now))
			_, ok := annotation(t, client)
			require.True(t, ok)

			nm.ok = false
			st.Resync(store.Observation{Scan: scan(t, tc.pids), ScanOK: true, Started: time.Now()}, time.Now())
			l.Refresh(now.Add(11 * time.Minute))
			l.Sync(ctx, now.Add(11*time.Minute))
			_, ok = annotation(t, client)
			assert.Equal(t, !tc.expired, ok, "entry present")
			assert.Equal(t, tc.expired, l.Status().Annotation.Expired)
		})
	}
}
