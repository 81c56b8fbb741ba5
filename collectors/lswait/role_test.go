package lswait

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodRole: a DaemonSet's Burstable or Guaranteed pod is not an LS pod
// to protect unless labelled LSE, LSR or LS; other Burstable and Guaranteed
// pods are LS by default; BE pods (labelled, or BestEffort) are batch.
func TestPodRole(t *testing.T) {
	ds := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent"}}
	rs := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web"}}
	for _, c := range []struct {
		name   string
		qos    string
		kube   corev1.PodQOSClass
		owners []metav1.OwnerReference
		phase  corev1.PodPhase
		want   Role
	}{
		{"daemonset burstable", "", corev1.PodQOSBurstable, ds, corev1.PodRunning, Other},
		{"daemonset guaranteed", "", corev1.PodQOSGuaranteed, ds, corev1.PodRunning, Other},
		{"daemonset labelled LS", "LS", corev1.PodQOSBurstable, ds, corev1.PodRunning, LS},
		{"daemonset labelled LSR", "LSR", corev1.PodQOSGuaranteed, ds, corev1.PodRunning, LS},
		{"daemonset labelled LSE", "LSE", corev1.PodQOSGuaranteed, ds, corev1.PodRunning, LS},
		{"deployment burstable", "", corev1.PodQOSBurstable, rs, corev1.PodRunning, LS},
		{"bare guaranteed", "", corev1.PodQOSGuaranteed, nil, corev1.PodRunning, LS},
		{"labelled BE", "BE", corev1.PodQOSBurstable, rs, corev1.PodRunning, Batch},
		{"besteffort", "", corev1.PodQOSBestEffort, rs, corev1.PodRunning, Batch},
		{"system", "SYSTEM", corev1.PodQOSBurstable, ds, corev1.PodRunning, Other},
		{"finished LS", "LS", corev1.PodQOSBurstable, rs, corev1.PodSucceeded, Other},
	} {
		p := testPod("p", c.qos, c.kube).Pod
		p.OwnerReferences, p.Status.Phase = c.owners, c.phase
		assert.Equal(t, c.want, PodRole(p), c.name)
	}
}

// TestSignalValueIsTheWorstPod: from eBPF the value is the worst pod's
// interference per wake-up, not the node's mean weighted by wake-ups; the
// node mean when no pod woke enough; schedstat's mean as before.
func TestSignalValueIsTheWorstPod(t *testing.T) {
	s := Signal{Source: SourceEBPF, InterferenceMean: 50 * time.Microsecond,
		Worst: PodInterference{Pod: "default/quiet", Mean: 2 * time.Millisecond, Waits: 40}}
	assert.Equal(t, 2*time.Millisecond, s.Value())
	s.Worst = PodInterference{}
	assert.Equal(t, 50*time.Microsecond, s.Value())
	assert.Equal(t, time.Millisecond, Signal{Source: SourceSchedstat, Mean: time.Millisecond}.Value())
}

// TestSignalWait: the wait signal is the worst pod's wait behind any task
// (the node's mean without one); from schedstat it is the same mean as
// the interference signal.
func TestSignalWait(t *testing.T) {
	s := Signal{Source: SourceEBPF, Mean: 80 * time.Microsecond, InterferenceMean: 3 * time.Microsecond,
		Worst:     PodInterference{Pod: "default/ls", Mean: 3 * time.Microsecond, Waits: 500},
		WorstWait: PodInterference{Pod: "default/ls", Mean: 120 * time.Microsecond, Waits: 500}}
	assert.Equal(t, 3*time.Microsecond, s.ValueOf(SignalInterference))
	assert.Equal(t, 120*time.Microsecond, s.ValueOf(SignalWait))
	s.WorstWait = PodInterference{}
	assert.Equal(t, 80*time.Microsecond, s.ValueOf(SignalWait))
	sched := Signal{Source: SourceSchedstat, Mean: time.Millisecond}
	assert.Equal(t, time.Millisecond, sched.ValueOf(SignalWait))
	assert.Equal(t, time.Millisecond, sched.ValueOf(SignalInterference))
}

// TestWorstWaitPod: the worst pod by all its waits is not the worst by
// its waits behind batch when the harm is LS queueing behind LS.
func TestWorstWaitPod(t *testing.T) {
	var a, b Waits
	a.All.Buckets[Bucket(200*time.Microsecond)], a.All.Sum = 100, 100*200*time.Microsecond
	a.Others.Buckets[Bucket(time.Microsecond)], a.Others.Sum = 100, 100*time.Microsecond
	b.All.Buckets[Bucket(50*time.Microsecond)], b.All.Sum = 100, 100*50*time.Microsecond
	b.Others = b.All
	var worst, worstWait PodInterference
	for pod, d := range map[string]Waits{"default/a": a, "default/b": b} {
		worst.consider(pod, d, d.Others)
		worstWait.consider(pod, d, d.All)
	}
	assert.Equal(t, "default/b", worst.Pod)
	assert.Equal(t, "default/a", worstWait.Pod)
	assert.Equal(t, 200*time.Microsecond, worstWait.Mean)
}

// TestWorstPod: of two pods, the one with the higher interference per
// wake-up is the worst even when the other woke far more often (and so
// weighs more in the node mean); a pod with fewer than MinPodWaits waits
// does not count.
func TestWorstPod(t *testing.T) {
	waits := func(n uint64, behindBatch time.Duration) Waits {
		var w Waits
		w.All.Buckets[Bucket(behindBatch)] = n
		w.All.Sum = time.Duration(n) * behindBatch
		w.Others = w.All
		return w
	}
	var worst PodInterference
	busy, harmed, rare := waits(10000, 10*time.Microsecond), waits(50, 2*time.Millisecond), waits(MinPodWaits-1, 50*time.Millisecond)
	worst.consider("default/busy", busy, busy.Others)
	worst.consider("default/harmed", harmed, harmed.Others)
	worst.consider("default/rare", rare, rare.Others)
	assert.Equal(t, PodInterference{Pod: "default/harmed", Mean: 2 * time.Millisecond, Waits: 50}, worst)
	var total Waits
	total.Add(busy)
	total.Add(harmed)
	assert.Less(t, total.Others.Mean(), 20*time.Microsecond, "the node mean hides the harmed pod")
}
