package nodebox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// APIServer is the box's control plane alone (etcd and kube-apiserver on
// loopback, no CRDs, no node, no cgroups), for tests that only need a real
// API server, e.g. to dry-run manifests. It takes no box lock: it touches
// nothing on the host but its own temp directory and loopback ports.
type APIServer struct {
	cp  *controlPlane
	dir string
	// Config reaches the server as an admin.
	Config *rest.Config
	// Kube is a client with Config.
	Kube kubernetes.Interface
	// own are the objects the server made itself, recorded when a box
	// first clears it (shared.go).
	own map[types.UID]bool
}

// APIServerPrerequisites says why StartAPIServer cannot run here, or nil:
// the cached kube-apiserver and etcd (make e2e-tools) and openssl.
func APIServerPrerequisites(top string) error {
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(top, "build/bin", b)); err != nil {
			return fmt.Errorf("no %s in %s/build/bin (make e2e-tools builds it): %w", b, top, err)
		}
	}
	if _, err := exec.LookPath("openssl"); err != nil {
		return errors.New("the API server needs openssl")
	}
	return nil
}

// StartAPIServer starts etcd and kube-apiserver from top/build/bin. Boxes
// can share it (Options.APIServer); one that boxes share is theirs alone.
func StartAPIServer(top string) (*APIServer, error) {
	if err := APIServerPrerequisites(top); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "nodebox-api-")
	if err != nil {
		return nil, err
	}
	cp, err := startControlPlane(dir, filepath.Join(top, "build/bin"), func(string) {})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	a := &APIServer{cp: cp, dir: dir, Config: cp.restConfig()}
	if a.Kube, err = kubernetes.NewForConfig(a.Config); err != nil {
		a.Stop()
		return nil, err
	}
	return a, nil
}

// Stop stops the server and removes its directory.
func (a *APIServer) Stop() {
	a.cp.stop()
	os.RemoveAll(a.dir)
}

// PIDs returns the kube-apiserver's and etcd's process ids (for CPU
// accounting by measurements).
func (a *APIServer) PIDs() (apiserver, etcd int) {
	if a.cp.apiserver != nil && a.cp.apiserver.cmd.Process != nil {
		apiserver = a.cp.apiserver.cmd.Process.Pid
	}
	if a.cp.etcd != nil && a.cp.etcd.cmd.Process != nil {
		etcd = a.cp.etcd.cmd.Process.Pid
	}
	return apiserver, etcd
}
