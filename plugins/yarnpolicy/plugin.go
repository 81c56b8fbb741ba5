// Package yarnpolicy runs the YARN QoS policy (gate YARNQoSPolicy): it
// loads and watches the policy file, fetches the applications' data from
// the ResourceManager into the application cache, binds both to the
// resolver the evict strategies and the QoS appliers share, re-applies the
// QoS of containers whose tier may have changed, and exports each
// container's queue, rule, tier and effective priority.
package yarnpolicy

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	koordmetrics "github.com/koordinator-sh/koordinator/pkg/koordlet/metrics"

	"github.com/koordlet-yarn/koordlet-yarn/framework/appmeta"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/policy"
	"github.com/koordlet-yarn/koordlet-yarn/framework/promreg"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// Options wire the plugin.
type Options struct {
	Store *store.Store
	// Resolver is shared with the evict strategies and the QoS appliers;
	// the plugin binds the policy and the applications to it.
	Resolver *policy.Resolver
	// File returns --yarn-qos-policy-file (read when the loop starts).
	File func() string
	// RM returns the shared ResourceManager client (nil: none configured).
	RM func() *yarn.RMClient
	// RMTimeout bounds each application fetch.
	RMTimeout func() time.Duration
	// Reapply re-applies the QoS of containers (nil: all).
	Reapply func(cs []*store.Container)
	// NMPriority returns the NodeManager pod's koord priority.
	NMPriority func() int64
	// Interval is the period of the metrics and of the cache's pruning.
	Interval   time.Duration
	Registerer prometheus.Registerer
	NodeName   string
	// PerContainerSeries reports whether per-container series are
	// exported (--yarn-container-metrics=container); nil: yes.
	PerContainerSeries func() bool
}

// Plugin is the policy loop.
type Plugin struct {
	opts    Options
	holder  *policy.Holder
	apps    *appmeta.Cache
	reloads *prometheus.CounterVec
	prio    *prometheus.GaugeVec
	// series are the label values exported per container.
	series map[string][]string
}

// New returns the plugin; its metrics are registered in opts.Registerer.
func New(opts Options) (*Plugin, error) {
	p := &Plugin{opts: opts, series: map[string][]string{},
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: koordmetrics.KoordletSubsystem,
			Name: "yarn_qos_policy_reloads_total", Help: "YARN QoS policy file loads by result: loaded, unchanged, rejected (the previous policy stays)."},
			[]string{"node", "result"}),
		prio: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: koordmetrics.KoordletSubsystem,
			Name: "yarn_container_effective_priority", Help: "The koord priority a YARN container ranks with for eviction, with its queue (from the ResourceManager), the YARN QoS policy rule and tier that gave it."},
			[]string{"node", "container_id", "application_id", "queue", "rule", "tier"}),
	}
	if err := errors.Join(promreg.Register(opts.Registerer, &p.reloads), promreg.Register(opts.Registerer, &p.prio)); err != nil {
		return nil, err
	}
	return p, nil
}

// Name names the loop.
func (p *Plugin) Name() string { return "YARN QoS policy" }

// Enabled reports the YARNQoSPolicy gate.
func (p *Plugin) Enabled() bool { return features.Enabled(features.YARNQoSPolicy) }

// Holder returns the policy holder (nil before Run, or without a file).
func (p *Plugin) Holder() *policy.Holder { return p.holder }

// Apps returns the application cache (nil without a ResourceManager).
func (p *Plugin) Apps() *appmeta.Cache { return p.apps }

// Run loads the policy, starts the file watch, the application fetches
// and the metrics, and returns; all end when stopCh closes.
func (p *Plugin) Run(stopCh <-chan struct{}) {
	file := p.opts.File()
	if file == "" {
		klog.Infof("yarn: YARNQoSPolicy is on but --yarn-qos-policy-file is empty: every YARN container keeps the NodeManager pod's priority")
	} else {
		h, err := policy.NewHolder(file, func(result string) { p.reloads.WithLabelValues(p.opts.NodeName, result).Inc() })
		if err != nil {
			klog.Error(err)
		}
		p.holder = h
		h.OnChange(func() { p.reapply(nil) })
	}
	var lookup policy.AppLookup
	if rm := p.opts.RM(); rm != nil {
		p.apps = appmeta.New(rm, 0, p.opts.RMTimeout())
		p.apps.OnFetched(func(appID string) { p.reapply(&appID) })
		lookup = p.apps.LookupAttempt
		go p.apps.Run(stopCh)
	} else {
		klog.Infof("yarn: no ResourceManager endpoint (--yarn-rm-endpoints): YARN QoS policy rules on queue, application type and tags do not match")
	}
	p.opts.Resolver.Bind(p.holder, lookup)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-stopCh
		cancel()
	}()
	if p.holder != nil {
		go p.holder.Watch(ctx, 10*time.Second)
	}
	go func() {
		t := time.NewTicker(p.opts.Interval)
		defer t.Stop()
		for {
			p.Export()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	p.reapply(nil)
}

// reapply re-applies the QoS of the containers of appID (nil: all).
func (p *Plugin) reapply(appID *string) {
	if p.opts.Reapply == nil {
		return
	}
	var cs []*store.Container
	for _, c := range p.opts.Store.Snapshot() {
		if appID == nil || c.ApplicationID == *appID {
			cs = append(cs, c)
		}
	}
	p.opts.Reapply(cs)
}

// Export sets each container's effective priority series (labels changed
// by a reload or by the RM's data replace the old ones), removes those of
// containers gone, and drops the applications none of whose containers is
// left from the cache.
func (p *Plugin) Export() {
	live := map[string]bool{}
	apps := map[string]bool{}
	nm := p.opts.NMPriority()
	export := p.opts.PerContainerSeries == nil || p.opts.PerContainerSeries()
	for _, c := range p.opts.Store.Snapshot() {
		apps[c.ApplicationID] = true
		if !c.HasCgroup() || !export {
			continue
		}
		live[c.Name] = true
		r := p.opts.Resolver.For(c)
		labels := []string{p.opts.NodeName, c.Name, c.ApplicationID, r.App.Queue, r.Rule, r.Tier}
		if old, ok := p.series[c.Name]; ok && !slices.Equal(old, labels) {
			p.prio.DeleteLabelValues(old...)
		}
		p.series[c.Name] = labels
		p.prio.WithLabelValues(labels...).Set(float64(policy.EffectivePriority(r.Effective, c.ExecutionType, nm)))
	}
	for name, labels := range p.series {
		if !live[name] {
			p.prio.DeleteLabelValues(labels...)
			delete(p.series, name)
		}
	}
	if p.apps != nil {
		p.apps.Retain(apps)
	}
}

// ContainerQoS is what /yarn/containers shows of one container's policy.
type ContainerQoS struct {
	Queue           string   `json:"queue,omitempty"`
	ApplicationType string   `json:"applicationType,omitempty"`
	Tags            []string `json:"applicationTags,omitempty"`
	// AppKnown says whether the ResourceManager's data is in.
	AppKnown          bool   `json:"appKnown"`
	Rule              string `json:"rule,omitempty"`
	Tier              string `json:"tier,omitempty"`
	EffectivePriority int64  `json:"effectivePriority"`
	EvictBeforePods   bool   `json:"evictBeforePods,omitempty"`
}

// Describe returns the policy outcome of every container, by id.
func Describe(r *policy.Resolver, cs []*store.Container, nmPriority int64) map[string]ContainerQoS {
	out := make(map[string]ContainerQoS, len(cs))
	for _, c := range cs {
		res := r.For(c)
		out[c.Name] = ContainerQoS{Queue: res.App.Queue, ApplicationType: res.App.ApplicationType, Tags: res.App.Tags,
			AppKnown: res.AppKnown, Rule: res.Rule, Tier: res.Tier, EvictBeforePods: res.EvictBeforePods,
			EffectivePriority: policy.EffectivePriority(res.Effective, c.ExecutionType, nmPriority)}
	}
	return out
}
