package preflight

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Severity grades a finding.
type Severity int

// Severities, mildest first.
const (
	// OK: works as the plugin set expects.
	OK Severity = iota
	// Info: a fact worth knowing; nothing to fix.
	Info
	// Warn: a feature is degraded or off here; koordlet still runs.
	Warn
	// Block: an enabled feature cannot work as configured; fix it first.
	Block
)

func (s Severity) String() string {
	switch s {
	case OK:
		return "ok"
	case Info:
		return "info"
	case Warn:
		return "WARN"
	case Block:
		return "BLOCK"
	}
	return "?"
}

// MarshalText spells the severity in JSON: ok, info, warn, block.
func (s Severity) MarshalText() ([]byte, error) {
	return []byte(strings.ToLower(s.String())), nil
}

// Finding is one line of the report.
type Finding struct {
	// Check names what was looked at ("cgroup", "YARN hierarchy", ...).
	Check    string   `json:"check"`
	Severity Severity `json:"severity"`
	// Detail says what was found.
	Detail string `json:"detail"`
	// Fix says what to do (Warn and Block findings).
	Fix string `json:"fix,omitempty"`
}

// GateEffect says what an enabled gate will do on this node.
type GateEffect struct {
	Gate   string `json:"gate"`
	Effect string `json:"effect"`
}

// Report is the preflight's outcome.
type Report struct {
	Findings []Finding    `json:"findings"`
	Gates    []GateEffect `json:"gates"`
}

// jsonReport is the report as --yarn-preflight-output=json prints it.
type jsonReport struct {
	Node     string `json:"node,omitempty"`
	ExitCode int    `json:"exitCode"`
	Blocking int    `json:"blocking"`
	Warnings int    `json:"warnings"`
	Report
}

// WriteJSON prints the report as one JSON object on one line (node: the
// node it ran on, "" if unknown), so that a log holding klog's lines too
// keeps each report findable (grep '^{').
func (r Report) WriteJSON(w io.Writer, node string) error {
	out := jsonReport{Node: node, ExitCode: r.ExitCode(), Blocking: len(r.Blocking()), Report: r}
	for _, f := range r.Findings {
		if f.Severity == Warn {
			out.Warnings++
		}
	}
	if out.Gates == nil {
		out.Gates = []GateEffect{}
	}
	return json.NewEncoder(w).Encode(out)
}

// Blocking returns the Block findings.
func (r Report) Blocking() []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Severity == Block {
			out = append(out, f)
		}
	}
	return out
}

// ExitCode is 1 when a finding blocks, else 0.
func (r Report) ExitCode() int {
	if len(r.Blocking()) > 0 {
		return 1
	}
	return 0
}

// Write prints the report.
func (r Report) Write(w io.Writer) error {
	var b strings.Builder
	b.WriteString("koordlet-yarn preflight\n\n")
	warn := 0
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "%-5s  %-24s %s\n", f.Severity, f.Check, f.Detail)
		if f.Fix != "" && f.Severity >= Warn {
			fmt.Fprintf(&b, "%-5s  %-24s fix: %s\n", "", "", f.Fix)
		}
		if f.Severity == Warn {
			warn++
		}
	}
	b.WriteString("\nEnabled YARN gates on this node:\n")
	if len(r.Gates) == 0 {
		b.WriteString("  (none)\n")
	}
	for _, g := range r.Gates {
		fmt.Fprintf(&b, "  %-24s %s\n", g.Gate, g.Effect)
	}
	fmt.Fprintf(&b, "\n%d blocking problem(s), %d warning(s).\n", len(r.Blocking()), warn)
	_, err := io.WriteString(w, b.String())
	return err
}
