package koordletyarn

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/lsslo"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
)

// installSLO adds the declared LS latency SLO's collector (YARNLSSLOControl)
// to the framework's loops and gives its signal to the interference
// controller (fw.sloSignal): install it before installInterference.
func (fw *Framework) installSLO(reg prometheus.Registerer) error {
	c, err := lsslo.New(lsslo.Options{
		Enabled:          func() bool { return features.Enabled(features.YARNLSSLOControl) },
		Pods:             fw.Handles.Pods,
		IsNodeManagerPod: fw.Informer.IsNodeManagerPod,
		Config:           &fw.Config.SLO,
		Registerer:       reg,
	})
	if err != nil {
		return fmt.Errorf("register the LS latency SLO metrics: %w", err)
	}
	fw.loops = append(fw.loops, c)
	fw.sloSignal = c.Latest
	return nil
}
