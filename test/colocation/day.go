package colocation

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

// LS is the harness's LS service for a caller that drives the load itself
// (make measure-jobs' day): the same service in the box's LS pod, the same
// open-loop load generator and calibration as Run's.
type LS struct {
	h *harness
	// holder holds the pod's memory beside the service (HoldMemory).
	holder *helperProc
}

// StartLS starts the LS service in box's LS pod (BoxOptions) and
// calibrates a request's CPU with opts' work; Close stops it.
func StartLS(ctx context.Context, box *nodebox.Box, opts Options) (*LS, error) {
	h, err := startHarness(ctx, box, &opts)
	if err != nil {
		if h != nil {
			_ = h.close()
		}
		return nil, err
	}
	return &LS{h: h}, nil
}

// RateFor is the request rate that loads level (0–1) of the node's CPUs.
func (l *LS) RateFor(level float64) int { return l.h.rateFor(level) }

// RequestCPU is the LS pod's CPU time per request, with LS alone.
func (l *LS) RequestCPU() time.Duration { return l.h.requestCPU }

// Realtime says whether the load generator runs SCHED_FIFO.
func (l *LS) Realtime() bool { return l.h.realtime }

// PhaseResult is one phase of load.
type PhaseResult struct {
	Rate int
	LS   Latencies
	// PacerLagP99 is how late the generator sent its requests (p99).
	PacerLagP99 time.Duration
	// NodeUtilisation is the node's CPU utilisation over the phase.
	NodeUtilisation float64
	// BatchCPUSeconds, LSCPUSeconds and KoordletCPUSeconds are the
	// phase's CPU time of YARN's hierarchy, the LS pod and koordlet.
	BatchCPUSeconds, LSCPUSeconds, KoordletCPUSeconds float64
	// LoadgenCPUSeconds is the load generator's (it stands for clients
	// on other machines).
	LoadgenCPUSeconds float64
	// Windows are the p99s of the phase's whole SLOWindow windows
	// (client side, WindowQuantiles; NoRequests for an empty one).
	Windows []time.Duration
	// Stalls are what LS and the node waited for over the phase.
	Stalls Stalls
}

// Phase loads the service at rate for d and returns what it measured over
// the whole phase (rate 0: no load, the counters only).
func (l *LS) Phase(ctx context.Context, rate int, d time.Duration) (PhaseResult, error) {
	res := PhaseResult{Rate: rate}
	from, err := l.h.sample()
	if err != nil {
		return res, err
	}
	if rate > 0 {
		began, results, err := l.h.attack(ctx, rate, d, nil)
		if err != nil {
			return res, fmt.Errorf("load at %d req/s: %w", rate, err)
		}
		samples, lag := windowSamples(results, began, rate, began, began.Add(d))
		res.LS, res.PacerLagP99 = Summarise(samples), lag
		res.Windows = WindowQuantiles(timedSamples(results, began, rate, began, began.Add(d)), d, SLOWindow, SLOQuantile)
	} else {
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(d):
		}
	}
	to, err := l.h.sample()
	if err != nil {
		return res, err
	}
	res.NodeUtilisation = Utilisation(from.cpu, to.cpu)
	res.BatchCPUSeconds, res.LSCPUSeconds, res.KoordletCPUSeconds = to.batch-from.batch, to.ls-from.ls, to.koordlet-from.koordlet
	res.LoadgenCPUSeconds = to.loadgen - from.loadgen
	res.Stalls = to.stalls.Sub(from.stalls)
	return res, nil
}

// DeclareSLO declares the service's SLO on its pod as a user would: the
// annotation lsslo.Annotation naming the service's histogram on its port,
// the p99 over SLOWindow at most target (set or replaced through the box's
// API server).
func (l *LS) DeclareSLO(ctx context.Context, target time.Duration) error {
	return l.h.declareSLO(ctx, target)
}

// HoldMemory makes the LS pod hold mib MiB beside the service (what its
// caches and connections hold at a load), touched, by a process in the
// pod's cgroups that replaces the previous one (0: none). It returns once
// the memory is held.
func (l *LS) HoldMemory(mib int) error {
	if l.holder != nil {
		l.holder.kill()
		l.holder = nil
	}
	if mib <= 0 {
		return nil
	}
	pod := l.h.box.PodCgroup(LSPodName)
	var dirs []string
	for _, ctrl := range l.h.box.Controllers() {
		dirs = append(dirs, filepath.Join(l.h.box.CgroupRoot(), ctrl, pod))
	}
	p, err := startHelper([]string{helperEnv + "=hold", memEnv + "=" + strconv.Itoa(mib)}, dirs, false)
	if err != nil {
		return fmt.Errorf("the LS pod's memory: %w", err)
	}
	if line, err := p.line(); err != nil || line != "holding" {
		p.kill()
		return fmt.Errorf("the LS pod's memory holder: %q %v", line, err)
	}
	l.holder = p
	return nil
}

// Close stops the service and removes what StartLS made.
func (l *LS) Close() error {
	if l.holder != nil {
		l.holder.kill()
	}
	return l.h.close()
}
