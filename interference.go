package koordletyarn

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/lswait"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarninterference"
)

// installInterference adds the LS CPU wait collector (YARNLSCPUWait, or run
// for YARNInterferenceControl) and the interference controller
// (YARNInterferenceControl or YARNLSSLOControl; the declared SLOs from
// fw.sloSignal, nil when their collector is not installed) to the
// framework's loops.
func (fw *Framework) installInterference(reg prometheus.Registerer) error {
	var err error
	fw.lsWait, err = lswait.New(lswait.Options{
		Enabled: func() bool {
			return features.Enabled(features.YARNLSCPUWait) || features.Enabled(features.YARNInterferenceControl)
		},
		Pods:             fw.Handles.Pods,
		IsNodeManagerPod: fw.Informer.IsNodeManagerPod,
		YARNHierarchy:    fw.Informer.HierarchyDir,
		Interval:         fw.Config.Interference.Interval,
		Registerer:       reg,
	})
	if err != nil {
		return fmt.Errorf("register the LS CPU wait metrics: %w", err)
	}
	ctl, err := yarninterference.New(yarninterference.Options{
		Hierarchy:  fw.Informer.HierarchyDir,
		Signal:     fw.lsWait.Latest,
		SLO:        fw.sloSignal,
		Node:       fw.Handles.Node,
		NodeSLO:    fw.Handles.NodeSLO,
		Config:     &fw.Config.Interference,
		Registerer: reg,
	})
	if err != nil {
		return fmt.Errorf("register the interference controller metrics: %w", err)
	}
	fw.interference = ctl
	fw.loops = append(fw.loops, fw.lsWait, ctl)
	return nil
}
