package koordletyarn

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/koordlet-yarn/koordlet-yarn/preflight"
)

// PreflightFlag is the flag that makes koordlet print the node preflight
// and exit.
const PreflightFlag = "yarn-preflight"

// preflightTimeout bounds the whole preflight (the NodeManager request and
// the pod list have their own, shorter timeouts).
const preflightTimeout = 30 * time.Second

// initPreflightFlag registers --yarn-preflight and its output format on fs.
func (fw *Framework) initPreflightFlag(fs *flag.FlagSet) {
	fs.BoolVar(&fw.flags.preflight, PreflightFlag, false,
		"Inspect this node for the YARN plugin set (cgroups, YARN hierarchy, eBPF, resctrl, QoS files, NodeManager, the NodeSLO's host application and BE thresholds, the ResourceManager, koordlet's RBAC, what each enabled gate does here), print the report and exit: 0 when nothing blocks, 1 otherwise.")
	fs.StringVar(&fw.flags.preflightOutput, "yarn-preflight-output", "text", "Format of the --yarn-preflight report: text or json.")
}

// PreflightRequested reports whether --yarn-preflight was given.
func (fw *Framework) PreflightRequested() bool { return fw.flags.preflight }

// RunPreflight inspects the node with koordlet's parsed flags and gates,
// writes the report to w and returns the exit code. kube returns a client
// for the node's pod list (to find the NodeManager pod); it may fail (no
// API access), which the report then says.
func (fw *Framework) RunPreflight(w io.Writer, restConfig func() (*rest.Config, error)) int {
	if fw.flags.preflightOutput != "text" && fw.flags.preflightOutput != "json" {
		fmt.Fprintf(os.Stderr, "koordlet: --yarn-preflight-output %q: must be text or json\n", fw.flags.preflightOutput)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), preflightTimeout)
	defer cancel()
	node := os.Getenv("NODE_NAME")
	// One client for the pod list and the permission checks.
	kube := sync.OnceValues(func() (kubernetes.Interface, error) {
		rc, err := restConfig()
		if err != nil {
			return nil, err
		}
		return kubernetes.NewForConfig(rc)
	})
	return preflight.Run(ctx, preflight.Options{Config: fw.Config, Pods: preflight.NodePods(kube, node, fw.Config.NMTimeout),
		Cluster: preflight.APIServerChecks(restConfig, kube, node, fw.Config.NMTimeout), JSON: fw.flags.preflightOutput == "json"}, w)
}
