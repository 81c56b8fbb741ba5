// Package promreg registers koordlet_yarn_* collectors on a Prometheus
// registerer the one way every package of the plugin set uses: a collector
// already registered under the same descriptors (a second Install in one
// process, as tests do) is no error, and the caller goes on with the
// registered collector, so what it updates is what is exported.
package promreg

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers *c on reg (nothing when reg is nil). When an equal
// collector is already registered, *c becomes that collector. Any other
// registration error is returned, wrapped with the collector's kind.
func Register[T prometheus.Collector](reg prometheus.Registerer, c *T) error {
	if reg == nil {
		return nil
	}
	err := reg.Register(*c)
	if err == nil {
		return nil
	}
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) {
		return fmt.Errorf("register a %T metric: %w", *c, err)
	}
	existing, ok := are.ExistingCollector.(T)
	if !ok {
		return fmt.Errorf("register a %T metric: already registered as a %T", *c, are.ExistingCollector)
	}
	*c = existing
	return nil
}
