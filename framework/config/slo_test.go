package config

import (
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSLOFlags(t *testing.T) {
	cfg := NewDefault()
	fs := flag.NewFlagSet("koordlet", flag.ContinueOnError)
	cfg.InitFlags(fs)
	require.NoError(t, fs.Parse([]string{"--yarn-slo-scrape-interval=2s", "--yarn-slo-scrape-timeout=1500ms", "--yarn-slo-window=10s",
		"--yarn-slo-max-body-bytes=65536", "--yarn-slo-max-series=500"}))
	require.NoError(t, cfg.Validate())
	assert.Equal(t, SLO{ScrapeInterval: 2 * time.Second, ScrapeTimeout: 1500 * time.Millisecond, Window: 10 * time.Second,
		MaxBodyBytes: 65536, MaxSeries: 500}, cfg.SLO)
}

func TestSLOValidate(t *testing.T) {
	require.NoError(t, NewDefault().Validate(), "the defaults are valid")
	for _, tc := range []struct {
		name   string
		mutate func(*SLO)
		flag   string
	}{
		{"interval too short", func(s *SLO) { s.ScrapeInterval = 10 * time.Millisecond }, "--yarn-slo-scrape-interval"},
		{"interval too long", func(s *SLO) { s.ScrapeInterval, s.Window = 2*time.Minute, 300*time.Second }, "--yarn-slo-scrape-interval"},
		{"no timeout", func(s *SLO) { s.ScrapeTimeout = 0 }, "--yarn-slo-scrape-timeout"},
		{"timeout over the interval", func(s *SLO) { s.ScrapeTimeout = 2 * time.Second }, "--yarn-slo-scrape-timeout"},
		{"window too short", func(s *SLO) { s.Window = 500 * time.Millisecond }, "--yarn-slo-window"},
		{"window too long", func(s *SLO) { s.Window = 301 * time.Second }, "--yarn-slo-window"},
		{"window under two intervals", func(s *SLO) { s.ScrapeInterval, s.ScrapeTimeout, s.Window = 3*time.Second, time.Second, 5*time.Second }, "--yarn-slo-window"},
		{"body cap too small", func(s *SLO) { s.MaxBodyBytes = 10 }, "--yarn-slo-max-body-bytes"},
		{"body cap too large", func(s *SLO) { s.MaxBodyBytes = 1 << 30 }, "--yarn-slo-max-body-bytes"},
		{"no series", func(s *SLO) { s.MaxSeries = 0 }, "--yarn-slo-max-series"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := NewDefault()
			tc.mutate(&cfg.SLO)
			err := cfg.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.flag)
		})
	}
}
