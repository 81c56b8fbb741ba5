package nodebox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KoordManagerCRDs are the CRDs koord-manager's noderesource and nodemetric
// controllers need beyond the box's (Options.ExtraCRDs).
var KoordManagerCRDs = []string{"scheduling.sigs.k8s.io_elasticquotas.yaml"}

// KoordManager is Koordinator's own koord-manager (build/bin/koord-manager,
// make e2e-tools) run against the box's API server: its noderesource
// controller publishes the node's batch allocatable from koordlet's
// NodeMetric, as on a cluster.
type KoordManager struct {
	cmd *exec.Cmd
	log *os.File
}

// StartKoordManager writes Koordinator's slo-controller-config with
// colocationConfig (its colocation-config key, JSON) and starts
// koord-manager's noderesource and nodemetric controllers; its log is
// koord-manager.log in the box's directory. The box must have been started
// with KoordManagerCRDs.
func (b *Box) StartKoordManager(ctx context.Context, colocationConfig string) (*KoordManager, error) {
	const ns = "koordinator-system"
	_, err := b.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("koord-manager's namespace: %w", err)
	}
	_, err = b.Kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slo-controller-config"},
		Data:       map[string]string{"colocation-config": colocationConfig}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("koord-manager's slo-controller-config: %w", err)
	}
	log, err := os.Create(filepath.Join(b.dir, "koord-manager.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(b.opts.Top, "build/bin/koord-manager"), "--kubeconfig="+b.cp.kubeconfig,
		"--controllers=noderesource,nodemetric", "--enable-leader-election=false", "--feature-gates=WebhookFramework=false",
		"--enable-pprof=false", "--metrics-addr=127.0.0.1:0", "--health-probe-addr=127.0.0.1:0")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start koord-manager: %w", err)
	}
	return &KoordManager{cmd: cmd, log: log}, nil
}

// Stop kills koord-manager (only the process group it started).
func (m *KoordManager) Stop() {
	if m == nil {
		return
	}
	_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
	_ = m.cmd.Wait()
	_ = m.log.Close()
}

// LogTail returns the last n bytes of koord-manager's log.
func (m *KoordManager) LogTail(n int) string {
	b, err := os.ReadFile(m.log.Name())
	if err != nil {
		return err.Error()
	}
	return string(b[max(0, len(b)-n):])
}
