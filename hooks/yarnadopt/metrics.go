package yarnadopt

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/promreg"
)

type metrics struct {
	moves   *prometheus.CounterVec
	launch  prometheus.Histogram
	charged prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		moves: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "koordlet_yarn_container_cgroup_moves_total",
			Help: "Processes of YARN containers without a cgroup of YARN's that koordlet moved (or declined to move) from the NodeManager pod's cgroup into the cgroup it made for their container, by result."},
			[]string{"result"}),
		launch: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "koordlet_yarn_container_cgroup_launch_seconds",
			Help:    "From the exec of a YARN container's first process to that process in the cgroup koordlet made for the container (exec watch only).",
			Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1}}),
		charged: prometheus.NewCounter(prometheus.CounterOpts{Name: "koordlet_yarn_container_cgroup_nm_charged_bytes_total",
			Help: "Memory (RssAnon + RssShmem) YARN container processes held when koordlet moved them out of the NodeManager pod's cgroup: charged to the NM pod, where it stays on cgroup v2 and on kernels that do not move charges."}),
	}
	if err := errors.Join(
		promreg.Register(reg, &m.moves),
		promreg.Register(reg, &m.launch),
		promreg.Register(reg, &m.charged),
	); err != nil {
		klog.Warningf("yarn: register the container cgroup metrics: %v", err)
	}
	return m
}
