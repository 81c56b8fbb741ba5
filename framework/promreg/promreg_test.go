package promreg

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRegister(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	first := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g", Help: "h"})
	require.NoError(t, Register(reg, &first))

	second := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g", Help: "h"})
	require.NoError(t, Register(reg, &second), "already registered: no error")
	assert.Same(t, first, second, "the caller goes on with the registered collector")
	second.Set(7)
	assert.Equal(t, 7.0, testutil.ToFloat64(first), "what the second caller sets is exported")

	other := prometheus.NewCounter(prometheus.CounterOpts{Name: "g", Help: "other"})
	assert.Error(t, Register(reg, &other), "a different metric of the same name")

	vec := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "v", Help: "h"}, []string{"a"})
	require.NoError(t, Register(reg, &vec))
	var asCollector prometheus.Collector = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "v", Help: "h"}, []string{"a"})
	require.NoError(t, Register(reg, &asCollector), "a collector-typed variable takes any registered collector")
	assert.Same(t, vec, asCollector)

	nilReg := prometheus.NewGauge(prometheus.GaugeOpts{Name: "n", Help: "h"})
	assert.NoError(t, Register(nil, &nilReg))
}

// mismatched registers under a gauge's descriptor but is a different type.
type mismatched struct{ prometheus.Gauge }

func TestRegisterTypeMismatch(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g", Help: "h"})
	require.NoError(t, Register(reg, &g))
	m := mismatched{prometheus.NewGauge(prometheus.GaugeOpts{Name: "g", Help: "h"})}
	err := Register(reg, &m)
	require.Error(t, err)
	assert.False(t, errors.Is(err, nil))
	assert.Contains(t, err.Error(), "already registered as")
}
