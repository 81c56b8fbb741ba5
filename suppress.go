package koordletyarn

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	qmplugins "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/plugins"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/plugins/cpusuppress"

	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnsuppress"
)

// installSuppress builds BE suppress (koordlet's replaced) on the shared
// quota writer, with the interference controller's threshold, and its
// gate-off restorer.
func (fw *Framework) installSuppress(nodeReg prometheus.Registerer) error {
	lsPeakMetrics, err := yarnsuppress.NewLSPeakMetrics(nodeReg)
	if err != nil {
		return fmt.Errorf("register the BE suppress LS peak metric: %w", err)
	}
	factory, err := yarnsuppress.NewFactory(yarnsuppress.Deps{Hierarchy: fw.Informer.HierarchyDir,
		Store: fw.Store, Quota: fw.quota, Threshold: fw.interference.Threshold,
		LSPeakWindow: fw.Config.Suppress.LSPeakWindow, LSPeakMetrics: lsPeakMetrics})
	if err != nil {
		return err
	}
	restorer, err := yarnsuppress.NewRestorer(fw.Informer.HierarchyDir, fw.quota)
	if err != nil {
		return err
	}
	qmplugins.StrategyPlugins[cpusuppress.CPUSuppressName] = factory
	fw.loops = append(fw.loops, restorer)
	return nil
}
