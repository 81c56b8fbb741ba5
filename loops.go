package koordletyarn

import (
	"k8s.io/klog/v2"

	qmframework "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/framework"
)

// StrategyName is the framework's entry in koordlet's qosmanager strategy
// map. Its factory records koordlet's handles; its Run starts the
// framework's loops once koordlet's states informer and metric advisor have
// synced (koordlet runs strategies only then).
const StrategyName = "YARNFramework"

// Loop is a framework loop (collector, applier) that koordlet's metricsadvisor
// or runtimehooks maps cannot hold, so the framework runs it itself.
type Loop interface {
	Name() string
	Enabled() bool
	// Run starts the loop and returns; the loop ends when stopCh closes.
	Run(stopCh <-chan struct{})
}

// Restorer is a loop that, while disabled, undoes once what it wrote when
// it was enabled (a koordlet restarted with its gate off): RestoreDisabled
// returns how many values it changed. It runs inside koordlet's start-up
// (Run), so it touches the node only: a give-back that waits on a remote
// service is a loop of its own, enabled while the gate is off, that retries
// in the background (yarnledger.GiveBack for the ResourceManager,
// yarnledger.StaleEntry for the API server).
type Restorer interface {
	RestoreDisabled() int
}

// loopRunner is the qosmanager strategy that runs the framework's loops.
type loopRunner struct{ fw *Framework }

func (fw *Framework) newLoopRunner(opts *qmframework.Options) qmframework.QOSStrategy {
	fw.Handles.Set(opts)
	klog.V(2).Info("yarn: koordlet handles recorded")
	return &loopRunner{fw: fw}
}

// Enabled is true when any loop is enabled or can restore what it wrote.
func (r *loopRunner) Enabled() bool {
	for _, l := range r.fw.loops {
		if _, ok := l.(Restorer); ok || l.Enabled() {
			return true
		}
	}
	return false
}

func (r *loopRunner) Setup(*qmframework.Context) {}

// Run restores what the disabled loops wrote earlier, then starts every
// enabled loop: a loop that starts first could otherwise read a value a
// restore is about to change (the interference controller the YARN root's
// quota the suppress restorer puts back).
func (r *loopRunner) Run(stopCh <-chan struct{}) {
	for _, l := range r.fw.loops {
		if l.Enabled() {
			continue
		}
		klog.Infof("yarn: %s disabled", l.Name())
		if rs, ok := l.(Restorer); ok {
			if n := rs.RestoreDisabled(); n > 0 {
				klog.Infof("yarn: %s disabled: %d values it wrote earlier restored", l.Name(), n)
			}
		}
	}
	for _, l := range r.fw.loops {
		if l.Enabled() {
			klog.Infof("yarn: starting %s", l.Name())
			l.Run(stopCh)
		}
	}
}
