package koordletyarn

import (
	"flag"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/koordlet-yarn/koordlet-yarn/framework/promreg"
	"github.com/koordlet-yarn/koordlet-yarn/framework/version"
)

// VersionFlag prints the build's version and exits.
const VersionFlag = "version"

// initVersionFlag registers --version.
func (fw *Framework) initVersionFlag(fs *flag.FlagSet) {
	fs.BoolVar(&fw.flags.version, VersionFlag, false, "Print koordlet-yarn's version, the Koordinator it is built on and the Go toolchain, and exit.")
}

// VersionRequested reports whether --version was given.
func (fw *Framework) VersionRequested() bool { return fw.flags.version }

// registerBuildInfo publishes koordlet_yarn_build_info: 1, labelled with
// the build's version, Koordinator and Go versions and the node. Installed
// twice in one process (tests), the first registration is kept.
func registerBuildInfo(reg prometheus.Registerer, info version.Info) error {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "koordlet_yarn_build_info",
		Help: "1, labelled with koordlet-yarn's version, the Koordinator it is built on and the Go toolchain.",
	}, []string{"version", "koordinator", "go", "node"})
	if err := promreg.Register(reg, &g); err != nil {
		return err
	}
	g.WithLabelValues(info.Version, info.Koordinator, info.Go, os.Getenv("NODE_NAME")).Set(1)
	return nil
}
