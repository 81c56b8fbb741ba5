package config

import (
	"flag"
	"fmt"
	"time"
)

// SLO holds the flags of the declared LS latency SLO's collector
// (collectors/lsslo, gate YARNLSSLOControl).
type SLO struct {
	// ScrapeInterval is how often every declared pod's histogram is scraped.
	ScrapeInterval time.Duration
	// ScrapeTimeout bounds each scrape (at most ScrapeInterval).
	ScrapeTimeout time.Duration
	// Window is the default window a pod's quantile is computed over (a
	// declaration's windowSeconds overrides it).
	Window time.Duration
	// MaxBodyBytes caps a scrape's body; MaxSeries the samples of the
	// declared family kept from one scrape.
	MaxBodyBytes int64
	MaxSeries    int
}

// SLO defaults and bounds.
const (
	DefaultSLOScrapeInterval = time.Second
	DefaultSLOScrapeTimeout  = 800 * time.Millisecond
	DefaultSLOWindow         = 5 * time.Second
	DefaultSLOMaxBodyBytes   = 4 << 20
	DefaultSLOMaxSeries      = 10000
	// MinSLOWindow and MaxSLOWindow bound every window, the default's and
	// the declared ones.
	MinSLOWindow = time.Second
	MaxSLOWindow = 300 * time.Second
)

// DefaultSLO returns the SLO flags' defaults.
func DefaultSLO() SLO {
	return SLO{ScrapeInterval: DefaultSLOScrapeInterval, ScrapeTimeout: DefaultSLOScrapeTimeout, Window: DefaultSLOWindow,
		MaxBodyBytes: DefaultSLOMaxBodyBytes, MaxSeries: DefaultSLOMaxSeries}
}

func (s *SLO) initFlags(fs *flag.FlagSet) {
	fs.DurationVar(&s.ScrapeInterval, "yarn-slo-scrape-interval", s.ScrapeInterval,
		"Period at which koordlet scrapes the latency histogram of every LS pod that declares an SLO (annotation koordlet-yarn.io/latency-slo; gate YARNLSSLOControl).")
	fs.DurationVar(&s.ScrapeTimeout, "yarn-slo-scrape-timeout", s.ScrapeTimeout,
		"Timeout of each scrape of a declared LS pod's metrics (at most --yarn-slo-scrape-interval; a pod whose last scrape still runs is skipped, never scraped twice at once).")
	fs.DurationVar(&s.Window, "yarn-slo-window", s.Window,
		"Default window the declared quantile of an LS pod's latency is computed over, from the histogram's bucket deltas (1s–300s, at least two scrape intervals; a declaration's windowSeconds overrides it).")
	fs.Int64Var(&s.MaxBodyBytes, "yarn-slo-max-body-bytes", s.MaxBodyBytes,
		"Largest metrics body accepted from a declared LS pod, in bytes; a larger one fails the scrape (the pod's SLO is unknown).")
	fs.IntVar(&s.MaxSeries, "yarn-slo-max-series", s.MaxSeries,
		"Most samples of the declared histogram (its _bucket series matching the declared labels) kept from one scrape; more fail the scrape (the pod's SLO is unknown).")
}

func (s *SLO) validate() error {
	if s.ScrapeInterval < 100*time.Millisecond || s.ScrapeInterval > time.Minute {
		return fmt.Errorf("--yarn-slo-scrape-interval %v: not in 100ms–1m", s.ScrapeInterval)
	}
	if s.ScrapeTimeout <= 0 || s.ScrapeTimeout > s.ScrapeInterval {
		return fmt.Errorf("--yarn-slo-scrape-timeout %v: must be positive and at most --yarn-slo-scrape-interval (%v)", s.ScrapeTimeout, s.ScrapeInterval)
	}
	if s.Window < MinSLOWindow || s.Window > MaxSLOWindow {
		return fmt.Errorf("--yarn-slo-window %v: not in %v–%v", s.Window, MinSLOWindow, MaxSLOWindow)
	}
	if s.Window < 2*s.ScrapeInterval {
		return fmt.Errorf("--yarn-slo-window %v: less than two scrape intervals (%v)", s.Window, 2*s.ScrapeInterval)
	}
	if s.MaxBodyBytes < 1<<10 || s.MaxBodyBytes > 256<<20 {
		return fmt.Errorf("--yarn-slo-max-body-bytes %d: not in 1KiB–256MiB", s.MaxBodyBytes)
	}
	if s.MaxSeries < 1 || s.MaxSeries > 1000000 {
		return fmt.Errorf("--yarn-slo-max-series %d: not in 1–1000000", s.MaxSeries)
	}
	return nil
}
