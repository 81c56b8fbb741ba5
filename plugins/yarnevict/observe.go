package yarnevict

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	koordmetrics "github.com/koordinator-sh/koordinator/pkg/koordlet/metrics"

	"github.com/koordlet-yarn/koordlet-yarn/framework/promreg"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/relief"

	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/kill"
)

// Event reasons on the NodeManager pod.
const (
	EventReasonEvicted     = "YARNContainerEvicted"
	EventReasonEvictFailed = "YARNContainerEvictFailed"
)

// Metrics are the eviction series.
type Metrics struct {
	Evictions *prometheus.CounterVec
	Released  *prometheus.CounterVec
	// Needed sums what the strategies set out to release, so that
	// released ÷ needed can be followed.
	Needed *prometheus.CounterVec
	// Wakeups counts the evaluations of the evict strategies by what woke
	// them: the periodic interval or the event trigger.
	Wakeups *prometheus.CounterVec
	// Relief are the memory relief's series (relief.Relief's Metrics).
	Relief *relief.Metrics
}

// metricValue is amount of resource (milli-cores of cpu, bytes of memory)
// in the unit the resource series carry, kube-state-metrics' convention:
// cpu in cores (unit "core"), memory in bytes (unit "byte").
func metricValue(resource string, amount int64) (unit string, value float64) {
	if resource == "cpu" {
		return "core", float64(amount) / 1000
	}
	return "byte", float64(amount)
}

// AddNeeded counts what a strategy set out to release (amount as
// metricValue takes it).
func (m *Metrics) AddNeeded(node, reason, resource string, amount int64) {
	if m == nil {
		return
	}
	unit, value := metricValue(resource, amount)
	m.Needed.WithLabelValues(node, reason, resource, unit).Add(value)
}

// NewMetrics registers the eviction series in reg (reusing registered ones).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		Evictions: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: koordmetrics.KoordletSubsystem,
			Name: "yarn_container_evictions_total", Help: "YARN containers evicted by koordlet, by reason and result."},
			[]string{"node", "reason", "result"}),
		Released: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: koordmetrics.KoordletSubsystem,
			Name: "yarn_evicted_resource_total", Help: "Resource released by evicting YARN containers, of the reason's need: memory (usage, or request for the allocatable trigger) in bytes, cpu (request) in cores; the unit label says which."},
			[]string{"node", "reason", "resource", "unit"}),
		Needed: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: koordmetrics.KoordletSubsystem,
			Name: "yarn_evict_needed_resource_total", Help: "Resource the YARN-aware evict strategies set out to release when they evicted: memory in bytes, cpu in cores; the unit label says which."},
			[]string{"node", "reason", "resource", "unit"}),
		Wakeups: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: koordmetrics.KoordletSubsystem,
			Name: "yarn_evict_wakeups_total", Help: "Evaluations of the YARN-aware evict strategies, by what woke them: interval (the periodic check) or event (node memory crossed the threshold)."},
			[]string{"node", "reason", "cause"}),
	}
	rm, err := relief.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	m.Relief = rm
	if err := errors.Join(promreg.Register(reg, &m.Evictions), promreg.Register(reg, &m.Released),
		promreg.Register(reg, &m.Needed), promreg.Register(reg, &m.Wakeups)); err != nil {
		return nil, err
	}
	return m, nil
}

// releaseOf is what evicting v releases for reason, in the unit of the
// strategy's need (memory bytes of usage; milli-cores of CPU request, which
// is what the satisfaction rule releases), so that
// koordlet_yarn_evicted_resource_total and
// koordlet_yarn_evict_needed_resource_total compare per reason.
func releaseOf(reason string, v *Victim) (resource string, amount int64, text string) {
	if reason == kill.ReasonBECPUEvict || reason == kill.ReasonCPUAllocatableEvict {
		return "cpu", v.MilliCPURequest, fmt.Sprintf("cpu request %dm", v.MilliCPURequest)
	}
	if v.releaseMeasured {
		text := fmt.Sprintf("memory %dMi", v.Released>>20)
		if v.Holding > 0 {
			text += fmt.Sprintf(" (%dMi still held by exiting processes)", v.Holding>>20)
		}
		return "memory", v.Released, text
	}
	return "memory", v.MemoryUsed, fmt.Sprintf("memory %dMi", v.MemoryUsed>>20)
}

// report records one YARN container eviction: klog, a Kubernetes Event on
// the NodeManager pod, and the counters. A failed kill gives a warning
// Event and result=failed, never a "released" Event or count.
func report(rec record.EventRecorder, m *Metrics, audit *kill.Audit, node string, nmPod *corev1.Pod, v *Victim, reason string, res kill.KillResult, err error) {
	c := v.Container
	resource, amount, released := releaseOf(reason, v)
	ar := kill.AuditRecord{Time: time.Now(), Kind: kill.AuditEviction, Node: node, Reason: reason, Container: c.Name, Application: c.ApplicationID, User: c.User,
		AM: c.IsAM, Outcome: "succeeded", Resource: resource, Released: amount, Holding: v.Holding, Why: v.Why}
	if err != nil {
		ar.Outcome, ar.Released, ar.Holding, ar.Error = "failed", 0, 0, err.Error()
	}
	audit.Record(ar)
	if err != nil {
		klog.Errorf("yarn: evict container %s (application %s) for %s failed: %v", c.Name, c.ApplicationID, reason, err)
		if rec != nil && nmPod != nil {
			rec.Eventf(nmPod, corev1.EventTypeWarning, EventReasonEvictFailed,
				"evict YARN container %s (application %s) for %s failed: %v", c.Name, c.ApplicationID, reason, err)
		}
		if m != nil {
			m.Evictions.WithLabelValues(node, reason, "failed").Inc()
		}
		return
	}
	klog.Infof("yarn: evicted container %s (application %s, AM %v, %s) for %s, released %s, signalled %d processes in %d passes (cgroup.kill %v); chosen because: %s",
		c.Name, c.ApplicationID, c.IsAM, c.ExecutionType, reason, released, res.Signalled, res.Passes, res.Atomic, v.Why)
	if rec != nil && nmPod != nil {
		rec.Eventf(nmPod, corev1.EventTypeWarning, EventReasonEvicted,
			"evicted YARN container %s (application %s, AM %v) for %s, released %s; chosen because: %s", c.Name, c.ApplicationID, c.IsAM, reason, released, v.Why)
	}
	if m != nil {
		m.Evictions.WithLabelValues(node, reason, "succeeded").Inc()
		unit, value := metricValue(resource, amount)
		m.Released.WithLabelValues(node, reason, resource, unit).Add(value)
	}
}
