package config

import (
	"flag"
	"fmt"
	"time"
)

// Suppress holds the flags of the YARN-aware BE suppress.
type Suppress struct {
	// LSPeakWindow is how long each LS pod's peak CPU usage stands for its
	// usage in BE suppress's formula (gate YARNSuppressLSPeak).
	LSPeakWindow time.Duration
}

// DefaultSuppressLSPeakWindow is --yarn-suppress-ls-peak-window: 30 of
// upstream's 1 s suppress rounds (docs/interference.md says why).
const DefaultSuppressLSPeakWindow = 30 * time.Second

func (s *Suppress) initFlags(fs *flag.FlagSet) {
	fs.DurationVar(&s.LSPeakWindow, "yarn-suppress-ls-peak-window", s.LSPeakWindow,
		"How long BE suppress subtracts each LS pod's peak CPU usage instead of its last sample (gate YARNSuppressLSPeak): after LS falls, batch's budget stays at the peak's for this long, then follows at upstream's step-up. Between 1s and 10m.")
}

func (s *Suppress) validate() error {
	if s.LSPeakWindow < time.Second || s.LSPeakWindow > 10*time.Minute {
		return fmt.Errorf("--yarn-suppress-ls-peak-window %v: not between 1s and 10m", s.LSPeakWindow)
	}
	return nil
}
