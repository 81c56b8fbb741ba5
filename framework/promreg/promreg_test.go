package promreg

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRegister(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g", Help: "h"})
	require.NoError(t, Register(reg, g))
	require.NoError(t, Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: "g", Help: "h"})), "already registered: no error")
	assert.Error(t, Register(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: "g", Help: "other"})), "a different metric of the same name")
	assert.NoError(t, Register(nil, g))
}
