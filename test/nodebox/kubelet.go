package nodebox

import (
	"encoding/json"
	"net"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubeletStub serves what koordlet asks of the kubelet's read-only port:
// GET /pods/ with the node's pods as running.
type kubeletStub struct {
	mu     sync.Mutex
	pods   []corev1.Pod
	server *http.Server
	port   int
}

func startKubeletStub() (*kubeletStub, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	k := &kubeletStub{port: ln.Addr().(*net.TCPAddr).Port}
	mux := http.NewServeMux()
	mux.HandleFunc("/pods/", k.servePods)
	mux.HandleFunc("/pods", k.servePods)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })
	k.server = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = k.server.Serve(ln) }()
	return k, nil
}

func (k *kubeletStub) setPods(pods []corev1.Pod) {
	k.mu.Lock()
	k.pods = pods
	k.mu.Unlock()
}

func (k *kubeletStub) servePods(w http.ResponseWriter, r *http.Request) {
	k.mu.Lock()
	list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: append([]corev1.Pod(nil), k.pods...)}
	k.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(list)
}

func (k *kubeletStub) stop() {
	if k != nil && k.server != nil {
		_ = k.server.Close()
	}
}
