package nodebox

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/koordlet-yarn/koordlet-yarn/test/v2guest"
)

// RepoTop is the directory of the module the go command runs in (the
// repository top when run from inside it).
func RepoTop() (string, error) {
	if top := os.Getenv(v2guest.TopEnv); top != "" {
		return top, nil // the v2 guest has no go command
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("locate the repository: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Prepare readies a tool that runs the box: it checks the prerequisites,
// finds the repository top and builds the binaries (EnsureBinaries, its
// output to log). It returns the top for Options.Top.
func Prepare(log io.Writer) (string, error) {
	if err := Prerequisites(); err != nil {
		return "", err
	}
	top, err := RepoTop()
	if err != nil {
		return "", err
	}
	if v2guest.InGuest() {
		// The host built them; the guest sees the repository read-only.
		return top, CheckBinaries(top)
	}
	if err := EnsureBinaries(top, log); err != nil {
		return "", err
	}
	return top, nil
}

// MetricFamilies reads and parses koordlet's /metrics.
func (b *Box) MetricFamilies() (map[string]*dto.MetricFamily, error) {
	text, err := b.Metrics()
	if err != nil {
		return nil, fmt.Errorf("koordlet's /metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("parse koordlet's /metrics: %w", err)
	}
	return fams, nil
}

// CounterSum sums the counter name in fams over its series whose label is
// value (every series when label is "").
func CounterSum(fams map[string]*dto.MetricFamily, name, label, value string) float64 {
	f, ok := fams[name]
	if !ok {
		return 0
	}
	sum := 0.0
	for _, m := range f.Metric {
		if label == "" {
			sum += m.GetCounter().GetValue()
			continue
		}
		for _, l := range m.Label {
			if l.GetName() == label && l.GetValue() == value {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
