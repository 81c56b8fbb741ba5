// Package promreg registers koordlet_yarn_* collectors on a Prometheus
// registerer the way every package of the plugin set needs: a collector
// already registered (a second Install in one process, as tests do) is no
// error.
package promreg

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers each collector on reg (nothing when reg is nil),
// tolerating collectors already registered.
func Register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	if reg == nil {
		return nil
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return fmt.Errorf("register a metric: %w", err)
			}
		}
	}
	return nil
}
