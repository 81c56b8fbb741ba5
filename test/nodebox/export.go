package nodebox

import (
	"context"
	"os"
	"time"

	"k8s.io/client-go/rest"
)

// What the real-kubelet node (test/kubeletnode) shares with the box: its
// control plane and its child processes, so that both start, log and stop
// them one way.

// ControlPlane is etcd and kube-apiserver.
type ControlPlane = controlPlane

// ControlPlaneOptions say where the API server serves and what it admits.
type ControlPlaneOptions struct {
	// Address is the API server's bind and advertise address (default
	// 127.0.0.1); Port its secure port (default: a free one).
	Address string
	Port    int
	// ServiceAccounts admits pods with their service account's token
	// (the ServiceAccount admission plugin), as a cluster does; it needs a
	// controller-manager to make each namespace's default account.
	ServiceAccounts bool
}

// StartControlPlane starts etcd and kube-apiserver with their files in dir
// and the binaries of binDir (make e2e-tools).
func StartControlPlane(dir, binDir string, o ControlPlaneOptions) (*ControlPlane, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return startControlPlaneWith(dir, binDir, controlPlaneOptions{address: o.Address, port: o.Port, serviceAccounts: o.ServiceAccounts}, func(string) {})
}

// Kubeconfig is the path of an admin kubeconfig (a bearer token of
// system:masters, the server's certificate not verified).
func (cp *controlPlane) Kubeconfig() string { return cp.kubeconfig }

// RestConfig is the admin client configuration.
func (cp *controlPlane) RestConfig() *rest.Config { return cp.restConfig() }

// ServingCA is the file with the API server's self-signed serving
// certificate and its CA: the cluster's root CA for in-cluster clients.
func (cp *controlPlane) ServingCA() string { return cp.certDir + "/apiserver.crt" }

// Stop stops the API server, then etcd.
func (cp *controlPlane) Stop() { cp.stop() }

// Proc is a child process with its log file.
type Proc = proc

// StartProc starts bin with args in its own process group, logging to
// dir/name.log; it is killed if this process dies.
func StartProc(dir, name, bin string, env []string, args ...string) (*Proc, error) {
	return startProc(dir, name, bin, env, args...)
}

// Stop sends the process group SIGTERM, then SIGKILL after grace.
func (p *proc) Stop(grace time.Duration) { p.stop(grace) }

// Exited reports whether the process has ended.
func (p *proc) Exited() bool { return p.exited() }

// Log is the path of the process's log.
func (p *proc) Log() string { return p.log }

// WaitFor polls cond every 50 ms until it is true or timeout passes.
func WaitFor(timeout time.Duration, what string, cond func() bool) error {
	return waitFor(timeout, what, cond)
}

// ApplyKoordinatorCRDs creates the Koordinator CRDs koordlet needs (from
// the koordinator module's config/crd/bases) and waits until each
// is established.
func ApplyKoordinatorCRDs(ctx context.Context, cfg *rest.Config) error {
	dir, err := koordinatorCRDDir()
	if err != nil {
		return err
	}
	crds, err := readCRDs(dir, crdFiles)
	if err != nil {
		return err
	}
	return applyCRDs(ctx, cfg, crds)
}
