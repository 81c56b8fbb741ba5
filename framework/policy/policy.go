// Package policy is the YARN QoS policy: ordered rules that match a YARN
// container by its application's queue, type, tags and user (from the
// ResourceManager) and its own user and execution type (from the
// NodeManager), and give it a koord priority value (its eviction order
// against BE pods and other YARN containers) and a QoS tier (whether it may
// go before pods of its priority, and CPU and Memory QoS overrides of the
// NodeSLO's BE class). The first matching rule wins; a container no rule
// matches keeps the default behaviour.
package policy

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// MaxFileBytes caps a policy file.
const MaxFileBytes = 1 << 20

// Priority bounds: koord priority values (koord-free 3000–3999, koord-batch
// 5000–5999, koord-mid 7000–7999, koord-prod 9000–9999).
const (
	MinPriority = 0
	MaxPriority = 9999
)

// Execution types a rule may match.
var executionTypes = []string{"GUARANTEED", "OPPORTUNISTIC"}

// Policy is a parsed, validated policy.
type Policy struct {
	// Tiers by name.
	Tiers map[string]Tier `json:"tiers,omitempty"`
	// Rules in order: the first that matches decides.
	Rules []Rule `json:"rules"`
}

// Tier is a QoS tier.
type Tier struct {
	// EvictBeforePods lets the tier's containers go before the BE pods of
	// their priority.
	EvictBeforePods bool `json:"evictBeforePods,omitempty"`
	// CPUQoS overrides the BE class's CPU QoS for the tier's containers.
	CPUQoS *CPUQoS `json:"cpuQoS,omitempty"`
	// MemoryQoS overrides the BE class's Memory QoS for them.
	MemoryQoS *MemoryQoS `json:"memoryQoS,omitempty"`
}

// CPUQoS overrides fields of the NodeSLO BE class's cpuQOS; nil keeps the
// BE class's value.
type CPUQoS struct {
	// Enable turns CPU QoS on or off for the tier.
	Enable *bool `json:"enable,omitempty"`
	// GroupIdentity is the Group Identity value (cpu.bvt_warp_ns: -1, 0, 1
	// or 2) under the groupIdentity policy.
	GroupIdentity *int64 `json:"groupIdentity,omitempty"`
	// SchedIdle is cpu.idle (0 or 1) under the coreSched policy.
	SchedIdle *int64 `json:"schedIdle,omitempty"`
}

// MemoryQoS overrides fields of the NodeSLO BE class's memoryQOS.
type MemoryQoS struct {
	Enable            *bool  `json:"enable,omitempty"`
	MinLimitPercent   *int64 `json:"minLimitPercent,omitempty"`
	LowLimitPercent   *int64 `json:"lowLimitPercent,omitempty"`
	ThrottlingPercent *int64 `json:"throttlingPercent,omitempty"`
}

// Rule matches containers and gives them a priority and a tier.
type Rule struct {
	// Name names the rule in logs, metrics and /yarn/containers.
	Name  string `json:"name"`
	Match Match  `json:"match"`
	// Priority is the koord priority value of the matched containers;
	// nil keeps the default (the NodeManager pod's, one less for
	// OPPORTUNISTIC).
	Priority *int64 `json:"priority,omitempty"`
	// Tier names one of Policy.Tiers; empty: none.
	Tier string `json:"tier,omitempty"`
}

// Match is what a rule matches; every field given must match (an empty
// Match matches every container). Lists match any of their values.
type Match struct {
	// Queue matches the application's queue and the queues below it
	// ("root.transcode" matches root.transcode and root.transcode.hd, not
	// root.transcoder). The CapacityScheduler of Hadoop before 3.4 names
	// an application's queue by its leaf ("transcode"; leaf names are
	// unique there): a leaf name matches the rule whose queue path ends
	// in it (a queue below the rule's is not told from such a name).
	Queue string `json:"queue,omitempty"`
	// ApplicationTypes match the application's type, case-insensitively
	// (SPARK, MAPREDUCE, Apache Flink, ...).
	ApplicationTypes []string `json:"applicationTypes,omitempty"`
	// Tags match when the application has any of them, case-insensitively.
	Tags []string `json:"tags,omitempty"`
	// Users match the container's (else the application's) user.
	Users []string `json:"users,omitempty"`
	// ExecutionTypes match the container's execution type.
	ExecutionTypes []string `json:"executionTypes,omitempty"`
}

// needsApp reports whether the match needs the ResourceManager's data.
func (m *Match) needsApp() bool {
	return m.Queue != "" || len(m.ApplicationTypes) > 0 || len(m.Tags) > 0
}

// Parse decodes and validates a policy (YAML or JSON). Unknown fields,
// unknown tiers, duplicate rule names and values out of range are errors
// that name the rule or tier.
func Parse(data []byte) (*Policy, error) {
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("policy is %d bytes, more than %d", len(data), MaxFileBytes)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("policy is empty")
	}
	var p Policy
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return nil, fmt.Errorf("parse policy: %w", err)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// Validate checks the policy and says what is wrong where.
func (p *Policy) Validate() error {
	var errs []error
	for name, t := range p.Tiers {
		if name == "" {
			errs = append(errs, errors.New("a tier has an empty name"))
		}
		if err := t.validate(); err != nil {
			errs = append(errs, fmt.Errorf("tier %q: %w", name, err))
		}
	}
	seen := map[string]bool{}
	for i, r := range p.Rules {
		where := fmt.Sprintf("rule %d (%q)", i+1, r.Name)
		switch {
		case r.Name == "":
			errs = append(errs, fmt.Errorf("rule %d: no name", i+1))
		case seen[r.Name]:
			errs = append(errs, fmt.Errorf("%s: duplicate name", where))
		}
		seen[r.Name] = true
		if r.Tier != "" {
			if _, ok := p.Tiers[r.Tier]; !ok {
				errs = append(errs, fmt.Errorf("%s: unknown tier %q", where, r.Tier))
			}
		}
		if r.Priority != nil && (*r.Priority < MinPriority || *r.Priority > MaxPriority) {
			errs = append(errs, fmt.Errorf("%s: priority %d out of [%d, %d]", where, *r.Priority, MinPriority, MaxPriority))
		}
		if r.Priority == nil && r.Tier == "" {
			errs = append(errs, fmt.Errorf("%s: gives neither a priority nor a tier", where))
		}
		for _, e := range r.Match.ExecutionTypes {
			if !slices.Contains(executionTypes, e) {
				errs = append(errs, fmt.Errorf("%s: execution type %q is not one of %v", where, e, executionTypes))
			}
		}
		if q := r.Match.Queue; q != "" && (strings.HasPrefix(q, ".") || strings.HasSuffix(q, ".") || strings.Contains(q, "..")) {
			errs = append(errs, fmt.Errorf("%s: queue %q is not a queue path", where, q))
		}
	}
	return errors.Join(errs...)
}

func (t *Tier) validate() error {
	var errs []error
	if c := t.CPUQoS; c != nil {
		if c.GroupIdentity != nil && (*c.GroupIdentity < -1 || *c.GroupIdentity > 2) {
			errs = append(errs, fmt.Errorf("cpuQoS.groupIdentity %d is not one of -1, 0, 1, 2", *c.GroupIdentity))
		}
		if c.SchedIdle != nil && *c.SchedIdle != 0 && *c.SchedIdle != 1 {
			errs = append(errs, fmt.Errorf("cpuQoS.schedIdle %d is not 0 or 1", *c.SchedIdle))
		}
	}
	if m := t.MemoryQoS; m != nil {
		for name, v := range map[string]*int64{"minLimitPercent": m.MinLimitPercent, "lowLimitPercent": m.LowLimitPercent,
			"throttlingPercent": m.ThrottlingPercent} {
			if v != nil && (*v < 0 || *v > 100) {
				errs = append(errs, fmt.Errorf("memoryQoS.%s %d is not a percent", name, *v))
			}
		}
	}
	return errors.Join(errs...)
}

// Subject is what a rule is matched against.
type Subject struct {
	// From the ResourceManager; AppKnown is false until its data came.
	AppKnown        bool
	Queue           string
	ApplicationType string
	Tags            []string
	AppUser         string
	// From the NodeManager.
	User          string
	ExecutionType string
}

// Effective is what the policy gives one container.
type Effective struct {
	// Rule and Tier name what matched ("" when nothing did).
	Rule string `json:"rule,omitempty"`
	Tier string `json:"tier,omitempty"`
	// Priority is the rule's priority; nil keeps the default.
	Priority        *int64     `json:"priority,omitempty"`
	EvictBeforePods bool       `json:"evictBeforePods,omitempty"`
	CPUQoS          *CPUQoS    `json:"cpuQoS,omitempty"`
	MemoryQoS       *MemoryQoS `json:"memoryQoS,omitempty"`
}

// Resolve returns what the first rule matching s gives (the zero Effective
// when none does, or p is nil). A rule that matches on application fields
// does not match while the application's data is unknown.
func (p *Policy) Resolve(s Subject) Effective {
	if p == nil {
		return Effective{}
	}
	for _, r := range p.Rules {
		if !r.Match.matches(s) {
			continue
		}
		e := Effective{Rule: r.Name, Tier: r.Tier, Priority: r.Priority}
		if t, ok := p.Tiers[r.Tier]; ok {
			e.EvictBeforePods, e.CPUQoS, e.MemoryQoS = t.EvictBeforePods, t.CPUQoS, t.MemoryQoS
		}
		return e
	}
	return Effective{}
}

// queueMatches reports whether the application's queue (a path, or a
// leaf name) is rule's queue or below it.
func queueMatches(rule, queue string) bool {
	if queue == rule || strings.HasPrefix(queue, rule+".") {
		return true
	}
	if !strings.Contains(queue, ".") {
		return rule[strings.LastIndex(rule, ".")+1:] == queue
	}
	return false
}

func (m *Match) matches(s Subject) bool {
	if m.needsApp() && !s.AppKnown {
		return false
	}
	if m.Queue != "" && !queueMatches(m.Queue, s.Queue) {
		return false
	}
	if len(m.ApplicationTypes) > 0 && !slices.ContainsFunc(m.ApplicationTypes, func(t string) bool { return strings.EqualFold(t, s.ApplicationType) }) {
		return false
	}
	if len(m.Tags) > 0 && !slices.ContainsFunc(m.Tags, func(t string) bool {
		return slices.ContainsFunc(s.Tags, func(have string) bool { return strings.EqualFold(t, have) })
	}) {
		return false
	}
	if len(m.Users) > 0 {
		user := s.User
		if user == "" {
			user = s.AppUser
		}
		if !slices.Contains(m.Users, user) {
			return false
		}
	}
	if len(m.ExecutionTypes) > 0 && !slices.Contains(m.ExecutionTypes, s.ExecutionType) {
		return false
	}
	return true
}
