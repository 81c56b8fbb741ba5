package cgroupwatch

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestNextSources(t *testing.T) {
	both := []Source{SourceEBPF, SourceInotify}
	for _, tc := range []struct {
		name        string
		cands       []Source
		failed      Source
		up          time.Duration
		next        []Source
		wantRestart bool
	}{
		{"eBPF failed early: inotify next", both, SourceEBPF, time.Second, []Source{SourceInotify}, false},
		{"eBPF failed after a while: restarted first", both, SourceEBPF, time.Minute, both, true},
		{"inotify failed early: polling", both, SourceInotify, time.Second, []Source{}, false},
		{"inotify failed after a while: restarted", both, SourceInotify, 2 * time.Minute, []Source{SourceInotify}, true},
		{"forced eBPF failed early: polling", []Source{SourceEBPF}, SourceEBPF, 0, []Source{}, false},
		{"forced eBPF failed after a while: restarted", []Source{SourceEBPF}, SourceEBPF, time.Hour, []Source{SourceEBPF}, true},
		{"a source not among the candidates: all of them", both, SourcePolling, time.Second, both, false},
		{"no candidates: polling", nil, SourceEBPF, time.Hour, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, restart := nextSources(tc.cands, tc.failed, tc.up, time.Minute)
			assert.Equal(t, tc.next, next)
			assert.Equal(t, tc.wantRestart, restart)
		})
	}
}
