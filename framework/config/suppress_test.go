package config

import (
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSuppressFlags(t *testing.T) {
	assert.Equal(t, DefaultSuppressLSPeakWindow, NewDefault().Suppress.LSPeakWindow)
	for _, tt := range []struct {
		arg  string
		want time.Duration
		err  bool
	}{
		{"--yarn-suppress-ls-peak-window=10s", 10 * time.Second, false},
		{"--yarn-suppress-ls-peak-window=1s", time.Second, false},
		{"--yarn-suppress-ls-peak-window=10m", 10 * time.Minute, false},
		{"--yarn-suppress-ls-peak-window=500ms", 0, true},
		{"--yarn-suppress-ls-peak-window=0s", 0, true},
		{"--yarn-suppress-ls-peak-window=11m", 0, true},
	} {
		t.Run(tt.arg, func(t *testing.T) {
			cfg := NewDefault()
			fs := flag.NewFlagSet("koordlet", flag.ContinueOnError)
			cfg.InitFlags(fs)
			require.NoError(t, fs.Parse([]string{tt.arg}))
			err := cfg.Validate()
			if tt.err {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "--yarn-suppress-ls-peak-window")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg.Suppress.LSPeakWindow)
		})
	}
}
