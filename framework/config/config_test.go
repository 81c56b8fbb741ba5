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
	}))
	require.NoError(t, cfg.Validate())
	assert.Equal(t, &Config{
		NMEndpoint: "http://10.0.0.5:8042", NMPodSelector: "app=nm,tier!=x", NMPort: 8044,
		NMTimeout: 2 * time.Second, NMMaxResponseBytes: 1024, CgroupHierarchy: "/hadoop-yarn",
		ResyncInterval: 30 * time.Second, EvictGracePeriod: 2 * time.Second, QoSReconcileInterval: 10 * time.Second,
	}, cfg)

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
	}
	for _, tt := range tests {
		t.Run(tt.flag, func(t *testing.T) {
			c := NewDefault()
			tt.mutate(c)
			assert.ErrorContains(t, c.Validate(), tt.flag)
		})
	}
}
