package policy

import (
	"sync"

	"github.com/koordlet-yarn/koordlet-yarn/framework/appmeta"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// Resolver gives each container what the policy in use says of it, with
// its application's data from the ResourceManager when known. A nil
// Resolver (no policy configured) gives nothing: today's behaviour.
type Resolver struct {
	mu     sync.RWMutex
	holder *Holder
	// apps looks an application up for a container of an attempt without
	// waiting (nil: no RM).
	apps AppLookup
}

// AppLookup looks an application up for a container of the given attempt
// (appmeta.Cache.LookupAttempt) without waiting.
type AppLookup func(appID string, attempt int64) (appmeta.App, bool)

// NewResolver resolves with the policy of h and the applications of apps
// (nil: NodeManager data only). Both may be bound later with Bind.
func NewResolver(h *Holder, apps AppLookup) *Resolver {
	return &Resolver{holder: h, apps: apps}
}

// Bind sets the holder and the application lookup (once the flags are
// parsed and the ResourceManager client exists).
func (r *Resolver) Bind(h *Holder, apps AppLookup) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.holder, r.apps = h, apps
}

// Resolved is a container's policy outcome and the data it was matched on.
type Resolved struct {
	Effective
	// App is the application's data (zero while unknown).
	App      appmeta.App `json:"-"`
	AppKnown bool        `json:"-"`
}

// For resolves c. It never waits for the ResourceManager.
func (r *Resolver) For(c *store.Container) Resolved {
	if r == nil || c == nil {
		return Resolved{}
	}
	r.mu.RLock()
	h, apps := r.holder, r.apps
	r.mu.RUnlock()
	var out Resolved
	if apps != nil {
		out.App, out.AppKnown = apps(c.ApplicationID, c.ID.AttemptID)
	}
	p := h.Policy()
	if p == nil {
		return out
	}
	s := Subject{AppKnown: out.AppKnown, Queue: out.App.Queue, ApplicationType: out.App.ApplicationType,
		Tags: out.App.Tags, AppUser: out.App.User, User: c.User, ExecutionType: c.ExecutionType}
	out.Effective = p.Resolve(s)
	return out
}

// Holder returns the policy holder (nil for a nil Resolver).
func (r *Resolver) Holder() *Holder {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.holder
}

// EffectivePriority is the koord priority a YARN container ranks with: the
// policy's, else the NodeManager pod's, one less for OPPORTUNISTIC.
func EffectivePriority(e Effective, executionType string, nmPriority int64) int64 {
	if e.Priority != nil {
		return *e.Priority
	}
	if executionType == yarn.ExecutionOpportunistic {
		return nmPriority - 1
	}
	return nmPriority
}
