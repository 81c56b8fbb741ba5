package nodebox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// KubeletSyncPeriod is how often the box's kubelet writes the CPU weights
// of its QoS and pod cgroups (the real kubelet: on every pod change and
// every minute; the box writes more often so that a scenario of seconds
// sees several rounds).
const KubeletSyncPeriod = 2 * time.Second

// kubeletWriter does what the kubelet's QoS container manager does to the
// box's cgroups: it writes cpu.shares of the kubepods cgroup, the QoS
// cgroups and every pod and pod container cgroup, at start and every
// KubeletSyncPeriod. With Options.KubeletCPUShares it writes the kubelet's
// values (ApplyKubeletCPUShares); without, it writes back each cgroup's
// current value, which the kernel checks all the same (a write to a group
// with cpu.idle=1 fails with EINVAL) without changing the scenario's CPU
// split. Every failed write is recorded: KubeletErrors.
type kubeletWriter struct {
	mu     sync.Mutex
	errs   []string
	rounds int
	stop   chan struct{}
	done   chan struct{}
}

// startKubeletWriter starts the loop (none on a unified hierarchy without
// the cpu controller: the hybrid host's).
func (b *Box) startKubeletWriter() {
	w := &kubeletWriter{stop: make(chan struct{}), done: make(chan struct{})}
	b.kubeletWriter = w
	if b.kubeletWeightFile() == "" {
		close(w.done)
		return
	}
	go func() {
		defer close(w.done)
		t := time.NewTicker(KubeletSyncPeriod)
		defer t.Stop()
		for {
			w.record(b.kubeletRound())
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
		}
	}()
}

func (w *kubeletWriter) record(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rounds++
	if err != nil && len(w.errs) < 20 {
		w.errs = append(w.errs, time.Now().Format("15:04:05.000")+" "+err.Error())
	}
}

func (w *kubeletWriter) close() {
	if w == nil {
		return
	}
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// kubeletRound writes once, as the kubelet would.
func (b *Box) kubeletRound() error {
	if b.opts.KubeletCPUShares {
		return b.ApplyKubeletCPUShares()
	}
	file := b.kubeletWeightFile()
	root := filepath.Join(b.cgroupRoot, "cpu")
	if b.opts.Layout.Unified {
		root = b.cgroupRoot
	}
	var errs []string
	for _, rel := range b.kubeletCgroups() {
		p := filepath.Join(root, rel, file)
		v, err := os.ReadFile(p)
		if err != nil {
			continue // a pod being torn down
		}
		if err := os.WriteFile(p, []byte(strings.TrimSpace(string(v))), 0o644); err != nil {
			errs = append(errs, fmt.Sprintf("kubelet %s: %v", file, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// kubeletWeightFile is the file the kubelet writes CPU weights to: v1
// cpu.shares, v2 cpu.weight (the kubelet converts shares to weight), or ""
// on a unified hierarchy without the cpu controller (the hybrid host's).
func (b *Box) kubeletWeightFile() string {
	if !b.opts.Layout.Unified {
		return "cpu.shares"
	}
	if _, err := os.Stat(filepath.Join(b.cgroupRoot, b.opts.Layout.kubepods(), "cpu.weight")); err != nil {
		return ""
	}
	return "cpu.weight"
}

// kubeletCgroups are the cgroups the kubelet (and the runtime) write CPU
// weights to: kubepods, the besteffort and burstable QoS cgroups, each
// pod's cgroup and its container's.
func (b *Box) kubeletCgroups() []string {
	l := b.opts.Layout
	out := []string{l.kubepods(), l.qosDir(corev1.PodQOSBestEffort), l.qosDir(corev1.PodQOSBurstable)}
	for _, rp := range b.pods {
		out = append(out, rp.cgroupDir, rp.containerCgroup)
	}
	return out
}

// KubeletErrors returns the kubelet's failed cpu.shares writes so far (at
// most 20) and how many rounds it made. A scenario fails on any: koordlet
// must never make a cgroup refuse the kubelet's writes.
func (b *Box) KubeletErrors() (errs []string, rounds int) {
	w := b.kubeletWriter
	if w == nil {
		return nil, 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.errs...), w.rounds
}
