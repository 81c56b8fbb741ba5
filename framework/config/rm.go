package config

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// RM holds the ResourceManager REST client flags, shared by every plugin
// that talks to the RM.
type RM struct {
	// Endpoints are the RM web addresses (HA list, tried in order).
	Endpoints []string
	// User is sent as user.name (Hadoop simple authentication).
	User string
	// Timeout bounds each request to one RM.
	Timeout time.Duration
	// MaxResponseBytes caps an RM response body.
	MaxResponseBytes int64
}

// endpointList is a comma-separated flag value.
type endpointList struct{ v *[]string }

func (l endpointList) String() string {
	if l.v == nil {
		return ""
	}
	return strings.Join(*l.v, ",")
}

func (l endpointList) Set(s string) error {
	*l.v = nil
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			*l.v = append(*l.v, e)
		}
	}
	return nil
}

func (r *RM) initFlags(fs *flag.FlagSet) {
	fs.Var(endpointList{&r.Endpoints}, "yarn-rm-endpoints",
		"Comma-separated YARN ResourceManager web addresses (every RM of an HA pair), e.g. http://rm1:8088,http://rm2:8088. "+
			"A standby (redirect, 503 or its standby page) is skipped for the next. Empty: no RM is asked.")
	fs.StringVar(&r.User, "yarn-rm-user", r.User,
		"User sent to the ResourceManager as user.name (Hadoop simple authentication); empty sends none.")
	fs.DurationVar(&r.Timeout, "yarn-rm-timeout", r.Timeout, "Timeout of each ResourceManager REST request to one RM.")
	fs.Int64Var(&r.MaxResponseBytes, "yarn-rm-max-response-bytes", r.MaxResponseBytes,
		"Largest ResourceManager REST response accepted, in bytes.")
}

func (r *RM) validate() error {
	for _, e := range r.Endpoints {
		if err := yarn.ValidateEndpoint(e); err != nil {
			return fmt.Errorf("--yarn-rm-endpoints: %w", err)
		}
	}
	if r.Timeout <= 0 {
		return fmt.Errorf("--yarn-rm-timeout %v: must be positive", r.Timeout)
	}
	if r.MaxResponseBytes <= 0 {
		return fmt.Errorf("--yarn-rm-max-response-bytes %d: must be positive", r.MaxResponseBytes)
	}
	return nil
}

// Client returns a client for the configured ResourceManagers, or nil
// without an error when no endpoint is configured.
func (r *RM) Client() (*yarn.RMClient, error) {
	if len(r.Endpoints) == 0 {
		return nil, nil
	}
	return yarn.NewRMClient(yarn.RMOptions{Endpoints: r.Endpoints, User: r.User,
		Timeout: r.Timeout, MaxResponseBytes: r.MaxResponseBytes})
}
