package nodebox

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
)

const token = "nodebox-e2e-token"

// controlPlane is etcd and kube-apiserver on loopback.
type controlPlane struct {
	etcd, apiserver *proc
	url             string
	kubeconfig      string
	// certDir holds the apiserver's self-signed serving certificate
	// (apiserver.crt: its certificate and the CA that signed it).
	certDir string
}

// controlPlaneOptions change where the API server serves and what it
// admits; the zero value is the box's: loopback, a free port, no service
// account admission (the box runs no controller-manager).
type controlPlaneOptions struct {
	address         string
	port            int
	serviceAccounts bool
}

// startControlPlane starts etcd and kube-apiserver in dir; step is told
// when each is up.
func startControlPlane(dir, binDir string, step func(string)) (*controlPlane, error) {
	return startControlPlaneWith(dir, binDir, controlPlaneOptions{}, step)
}

// startControlPlaneWith is startControlPlane with o.
func startControlPlaneWith(dir, binDir string, o controlPlaneOptions, step func(string)) (*controlPlane, error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	if o.address == "" {
		o.address = "127.0.0.1"
	}
	if o.port != 0 {
		ports[2] = o.port
	}
	admission := "--disable-admission-plugins=ServiceAccount"
	if o.serviceAccounts {
		admission = "--enable-admission-plugins=ServiceAccount"
	}
	cp := &controlPlane{certDir: filepath.Join(dir, "certs")}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	cp.etcd, err = startProc(dir, "etcd", filepath.Join(binDir, "etcd"), nil,
		"--name=e2e", "--data-dir="+filepath.Join(dir, "etcd-data"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=e2e="+peerURL, "--unsafe-no-fsync=true", "--log-level=warn")
	if err != nil {
		return nil, err
	}
	if err := waitFor(30*time.Second, "etcd health", func() bool {
		resp, err := http.Get(etcdURL + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}); err != nil {
		cp.stop()
		return nil, err
	}

	step("etcd")
	key := filepath.Join(dir, "sa.key")
	if out, err := exec.Command("openssl", "genrsa", "-out", key, "2048").CombinedOutput(); err != nil {
		cp.stop()
		return nil, fmt.Errorf("openssl genrsa: %v: %s", err, out)
	}
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(token+",admin,admin,system:masters\n"), 0o600); err != nil {
		cp.stop()
		return nil, err
	}
	step("service account key")
	cp.url = "https://" + net.JoinHostPort(o.address, strconv.Itoa(ports[2]))
	cp.apiserver, err = startProc(dir, "kube-apiserver", filepath.Join(binDir, "kube-apiserver"), nil,
		"--etcd-servers="+etcdURL, "--bind-address="+o.address, "--advertise-address="+o.address,
		"--secure-port="+strconv.Itoa(ports[2]), "--cert-dir="+cp.certDir,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+key, "--service-account-signing-key-file="+key,
		"--service-cluster-ip-range=10.0.0.0/24", "--allow-privileged=true",
		"--token-auth-file="+tokens, "--authorization-mode=AlwaysAllow",
		admission, "--endpoint-reconciler-type=none")
	if err != nil {
		cp.stop()
		return nil, err
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	// Minutes, not seconds: in the v2 guest (qemu TCG, binaries read over
	// 9p) the apiserver has taken over a minute to be ready.
	if err := waitFor(3*time.Minute, "kube-apiserver /readyz", func() bool {
		if cp.apiserver.exited() {
			return false
		}
		req, _ := http.NewRequest(http.MethodGet, cp.url+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}); err != nil {
		cp.stop()
		// The guest's files are gone with it: the log's end goes with
		// the error.
		tail, _ := os.ReadFile(cp.apiserver.log)
		if len(tail) > 4096 {
			tail = tail[len(tail)-4096:]
		}
		return nil, fmt.Errorf("%w (%s ends: %s)", err, cp.apiserver.log, tail)
	}
	step("kube-apiserver")
	cp.kubeconfig = filepath.Join(dir, "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: %s
contexts:
- name: e2e
  context:
    cluster: e2e
    user: admin
current-context: e2e
`, cp.url, token)
	if err := os.WriteFile(cp.kubeconfig, []byte(kc), 0o600); err != nil {
		cp.stop()
		return nil, err
	}
	return cp, nil
}

func (cp *controlPlane) restConfig() *rest.Config {
	return &rest.Config{
		Host:            cp.url,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS:             50, Burst: 100,
	}
}

func (cp *controlPlane) stop() {
	if cp == nil {
		return
	}
	cp.apiserver.stop(10 * time.Second)
	cp.etcd.stop(10 * time.Second)
}

var _ = context.Background
