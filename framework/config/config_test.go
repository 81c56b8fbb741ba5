package config

import (
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFlagsAndValidate(t *testing.T) {
	cfg := NewDefault()
	require.NoError(t, cfg.Validate(), "defaults are valid")
	fs := flag.NewFlagSet("koordlet", flag.ContinueOnError)
	cfg.InitFlags(fs)
	require.NoError(t, fs.Parse([]string{
		"--yarn-nm-endpoint=http://10.0.0.5:8042", "--yarn-nm-pod-selector=app=nm,tier!=x",
		"--yarn-nm-port=8044", "--yarn-nm-timeout=2s", "--yarn-nm-max-response-bytes=1024",
		"--yarn-cgroup-hierarchy=/hadoop-yarn", "--yarn-resync-interval=30s", "--yarn-evict-grace-period=2s",
		"--yarn-rm-endpoints= http://rm1:8088, https://rm2:8090 ,", "--yarn-rm-user=yarn", "--yarn-rm-timeout=3s",
		"--yarn-rm-max-response-bytes=2048", "--yarn-ledger-patch-interval=2s", "--yarn-ledger-hysteresis=5", "--yarn-ledger-max-age=30s", "--yarn-rm-sync-interval=5s", "--yarn-rm-read-back-interval=30s", "--yarn-ledger-expiry=5m", "--yarn-rm-preemption-timeout=3s", "--yarn-rm-node-id=n1:45454",
		"--yarn-container-metrics=application",
		"--yarn-interference-interval=500ms", "--yarn-interference-target=800us", "--yarn-interference-min-cpu-percent=20", "--yarn-interference-step-percent=10", "--yarn-interference-signal=wait", "--yarn-interference-grow-after=5",
		"--yarn-interference-slo-shrink-below-percent=3", "--yarn-interference-slo-grow-above-percent=15", "--yarn-interference-slo-max-ls-load-percent=90",
		"--yarn-memory-throttle-band-percent=8",
	}))
	require.NoError(t, cfg.Validate())
	assert.Equal(t, &Config{
		NMEndpoint: "http://10.0.0.5:8042", NMPodSelector: "app=nm,tier!=x", NMPort: 8044,
		NMTimeout: 2 * time.Second, NMMaxResponseBytes: 1024, CgroupHierarchy: "/hadoop-yarn",
		ResyncInterval: 30 * time.Second, EvictGracePeriod: 2 * time.Second, EvictAuditFile: DefaultEvictAuditFile, QoSReconcileInterval: 10 * time.Second, ContainerCgroupsScanInterval: time.Second,
		ContainerMetrics: ContainerMetricsApplication,
		RM:               RM{Endpoints: []string{"http://rm1:8088", "https://rm2:8090"}, User: "yarn", Timeout: 3 * time.Second, MaxResponseBytes: 2048},
		Ledger:           Ledger{PatchInterval: 2 * time.Second, Hysteresis: 5, MaxAge: 30 * time.Second, RMSyncInterval: 5 * time.Second, RMReadBack: 30 * time.Second, Expiry: 5 * time.Minute, RMPreemptionTimeout: 3 * time.Second, RMNodeID: "n1:45454", RMPreemptionGrace: DefaultRMPreemptionGrace, RMCapacityRecord: DefaultRMCapacityRecord},
		Interference: Interference{Interval: 500 * time.Millisecond, Target: 800 * time.Microsecond, Signal: "wait", MinPercent: 20, StepPercent: 10, GrowAfter: 5,
			SLOShrinkBelowPercent: 3, SLOGrowAbovePercent: 15, SLOMaxLoadPercent: 90},
		SLO:                       DefaultSLO(),
		MemoryThrottleBandPercent: 8,
		Suppress:                  Suppress{LSPeakWindow: DefaultSuppressLSPeakWindow},
	}, cfg)
	rm, err := cfg.RM.Client()
	require.NoError(t, err)
	assert.Equal(t, []string{"http://rm1:8088", "https://rm2:8090"}, rm.Endpoints())
	none, err := NewDefault().RM.Client()
	require.NoError(t, err)
	assert.Nil(t, none, "no endpoint: no client")

	tests := []struct {
		mutate func(*Config)
		flag   string
	}{
		{func(c *Config) { c.NMEndpoint = "10.0.0.5:8042" }, "--yarn-nm-endpoint"},
		{func(c *Config) { c.NMPodSelector = "app in (" }, "--yarn-nm-pod-selector"},
		{func(c *Config) { c.NMPort = 0 }, "--yarn-nm-port"},
		{func(c *Config) { c.NMPort = 70000 }, "--yarn-nm-port"},
		{func(c *Config) { c.NMTimeout = 0 }, "--yarn-nm-timeout"},
		{func(c *Config) { c.NMMaxResponseBytes = -1 }, "--yarn-nm-max-response-bytes"},
		{func(c *Config) { c.CgroupHierarchy = "../../etc" }, "--yarn-cgroup-hierarchy"},
		{func(c *Config) { c.CgroupHierarchy = "/" }, "--yarn-cgroup-hierarchy"},
		{func(c *Config) { c.ResyncInterval = time.Millisecond }, "--yarn-resync-interval"},
		{func(c *Config) { c.EvictGracePeriod = -time.Second }, "--yarn-evict-grace-period"},
		{func(c *Config) { c.RM.Endpoints = []string{"rm1:8088"} }, "--yarn-rm-endpoints"},
		{func(c *Config) { c.RM.Timeout = 0 }, "--yarn-rm-timeout"},
		{func(c *Config) { c.Ledger.PatchInterval = time.Millisecond }, "--yarn-ledger-patch-interval"},
		{func(c *Config) { c.Ledger.RMSyncInterval = 0 }, "--yarn-rm-sync-interval"},
		{func(c *Config) { c.Ledger.RMReadBack = time.Millisecond }, "--yarn-rm-read-back-interval"},
		{func(c *Config) { c.Ledger.RMPreemptionTimeout = -time.Second }, "--yarn-rm-preemption-timeout"},
		{func(c *Config) { c.Ledger.RMNodeID = "a/b" }, "--yarn-rm-node-id"},
		{func(c *Config) { c.RM.MaxResponseBytes = 0 }, "--yarn-rm-max-response-bytes"},
		{func(c *Config) { c.ContainerMetrics = "per-pod" }, "--yarn-container-metrics"},
		{func(c *Config) { c.Interference.Interval = time.Millisecond }, "--yarn-interference-interval"},
		{func(c *Config) { c.Interference.Target = 0 }, "--yarn-interference-target"},
		{func(c *Config) { c.Interference.MinPercent = 0 }, "--yarn-interference-min-cpu-percent"},
		{func(c *Config) { c.Interference.StepPercent = 101 }, "--yarn-interference-step-percent"},
		{func(c *Config) { c.Interference.GrowAfter = 0 }, "--yarn-interference-grow-after"},
		{func(c *Config) { c.Interference.Signal = "p99" }, "--yarn-interference-signal"},
		{func(c *Config) { c.Interference.SLOShrinkBelowPercent = 20 }, "--yarn-interference-slo-shrink-below-percent"},
		{func(c *Config) { c.Interference.SLOGrowAbovePercent = 101 }, "--yarn-interference-slo-grow-above-percent"},
		{func(c *Config) { c.Interference.SLOMaxLoadPercent = 101 }, "--yarn-interference-slo-max-ls-load-percent"},
	}
	for _, tt := range tests {
		t.Run(tt.flag, func(t *testing.T) {
			c := NewDefault()
			tt.mutate(c)
			assert.ErrorContains(t, c.Validate(), tt.flag)
		})
	}
}
