package jobrun

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
	"github.com/koordlet-yarn/koordlet-yarn/test/yarnpeer"
)

// evictPodSuccess is the reason of the Event koordlet's evictor records on
// a pod it evicted (Koordinator's qosmanager/helpers.EvictPodSuccess).
const evictPodSuccess = "evictPodSuccess"

// nmWatch stands for the kubelet and the DaemonSet's controller around the
// NodeManager pod, which the box has not: each time koordlet evicts the pod
// (its Event), the NodeManager is stopped as the kubelet stops the pod (it
// kills its containers; what is left in the YARN hierarchy is killed) and
// started again in the pod's cgroups on the same ports. The containers
// that ran at the eviction are counted as lost with the pod.
type nmWatch struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	containers int
	times      []time.Duration
	failure    error
}

func watchNMPod(ctx context.Context, box *nodebox.Box, peer *yarnpeer.Peer, began time.Time, log io.Writer) *nmWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &nmWatch{cancel: cancel, done: make(chan struct{})}
	ns, name := box.NMPod()
	seen := map[string]int32{}
	go func() {
		defer close(w.done)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			evs, err := box.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				continue // the API server's hiccup: the next tick
			}
			for _, e := range evs.Items {
				if e.InvolvedObject.Name != name || e.Reason != evictPodSuccess || e.Count <= seen[string(e.UID)] {
					continue
				}
				seen[string(e.UID)] = e.Count
				if err := w.evicted(ctx, box, peer, time.Since(began), log); err != nil {
					w.mu.Lock()
					w.failure = err
					w.mu.Unlock()
					return
				}
			}
		}
	}()
	return w
}

// ended are the NodeManager's container states past the container's life
// (ContainerState as the NM's REST reports it).
var ended = map[string]bool{"EXITED_WITH_SUCCESS": true, "EXITED_WITH_FAILURE": true, "KILLING": true,
	"CONTAINER_CLEANEDUP_AFTER_KILL": true, "CONTAINER_RESOURCES_CLEANINGUP": true, "DONE": true, "LOCALIZATION_FAILED": true}

// evicted is the kubelet's and the controller's work after an eviction.
func (w *nmWatch) evicted(ctx context.Context, box *nodebox.Box, peer *yarnpeer.Peer, at time.Duration, log io.Writer) error {
	running := 0
	nm, err := yarn.NewNMClient("http://"+peer.NMWeb, 5*time.Second, 64<<20)
	if err != nil {
		return err
	}
	cs, err := nm.ListContainers(ctx)
	if err != nil {
		return fmt.Errorf("the NodeManager's containers at its pod's eviction: %w", err)
	}
	for _, c := range cs {
		if !ended[c.State] {
			running++
		}
	}
	killed := 0
	if err := peer.RestartNM(ctx, func() { killed = box.KillYARNProcesses() }); err != nil {
		return fmt.Errorf("the NodeManager after its pod's eviction: %w", err)
	}
	fmt.Fprintf(log, "the NodeManager pod evicted at %v: %d containers with it (%d processes left in the YARN hierarchy killed); the NodeManager restarted\n",
		at.Round(time.Second), running, killed)
	w.mu.Lock()
	w.containers += running
	w.times = append(w.times, at)
	w.mu.Unlock()
	return nil
}

func (w *nmWatch) stop() {
	w.cancel()
	<-w.done
}

func (w *nmWatch) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failure
}
