// Package realyarn starts Hadoop's own ResourceManager and NodeManager (the
// real-YARN peer, test/yarnpeer) on a node in a box, as the e2e tests and
// make measure-jobs run them: the NodeManager's JVM in the NodeManager
// pod's cgroups, its container cgroups under the box's YARN hierarchy, the
// box's container-executor stand-in.
package realyarn

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
	"github.com/koordlet-yarn/koordlet-yarn/test/yarnpeer"
)

// Start starts the peer with o on b, a box started with ExternalNM: it
// makes the YARN hierarchy, copies the container-executor stand-in into
// the box (its call log goes beside it) and fills o's Top, Dir, Executor,
// Hierarchy, MountPath and Procs from the box. koordlet is not started
// (Box.StartKoordletFor with the peer's NMWeb does).
func Start(ctx context.Context, b *nodebox.Box, top string, o yarnpeer.Options) (*yarnpeer.Peer, error) {
	if o.Hadoop == "" {
		o.Hadoop = yarnpeer.Hadoop35
	}
	if err := yarnpeer.Built(top, o.Hadoop); err != nil {
		return nil, err
	}
	if err := b.MakeYARNHierarchy(); err != nil {
		return nil, fmt.Errorf("the YARN hierarchy: %w", err)
	}
	ce := filepath.Join(b.Dir(), "container-executor")
	bin, err := os.ReadFile(filepath.Join(top, nodebox.ContainerExecutorBin))
	if err != nil {
		return nil, fmt.Errorf("the container-executor stand-in (nodebox.EnsureBinaries builds it): %w", err)
	}
	if err := os.WriteFile(ce, bin, 0o755); err != nil {
		return nil, err
	}
	o.Top, o.Dir, o.Executor = top, filepath.Join(b.Dir(), "yarn"), ce
	o.Hierarchy, o.MountPath, o.Procs = "/"+b.Hierarchy(), b.CgroupRoot(), b.NMPodProcs()
	return yarnpeer.Start(ctx, o)
}
