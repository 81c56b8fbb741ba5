package koordletyarn

import (
	"flag"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/lsslo"
)

// TestInstallSLO: the declared SLO's collector is a loop, installed before
// the interference controller, gives fw.sloSignal and runs with the parsed
// flags.
func TestInstallSLO(t *testing.T) {
	fs := flag.NewFlagSet("koordlet", flag.ContinueOnError)
	fw, err := install(fs, prometheus.NewRegistry())
	require.NoError(t, err)
	require.NoError(t, fs.Parse([]string{"--yarn-slo-scrape-interval=2s", "--yarn-slo-scrape-timeout=1s", "--yarn-slo-window=10s"}))
	require.NoError(t, fw.Validate())
	require.NotNil(t, fw.sloSignal)
	slo, ctl := -1, -1
	for i, l := range fw.loops {
		if c, ok := l.(*lsslo.Collector); ok {
			slo = i
			assert.Equal(t, 2*time.Second, c.Config().ScrapeInterval)
			assert.Equal(t, 10*time.Second, c.Config().Window)
			assert.False(t, c.Enabled(), "YARNLSSLOControl is off by default")
		}
		if l == Loop(fw.interference) {
			ctl = i
		}
	}
	require.GreaterOrEqual(t, slo, 0, "the collector is a loop")
	assert.Less(t, slo, ctl, "installed before the interference controller")
	_, ok := fw.sloSignal()
	assert.False(t, ok, "no signal before it runs")
}
