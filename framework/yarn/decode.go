package yarn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"k8s.io/klog/v2"
)

// DecodeContainers decodes the body of the NodeManager's
// GET /ws/v1/node/containers. It accepts every shape NMs of different Hadoop
// versions send: {"containers":{"container":[...]}}, a single object where the
// list is expected, null, an empty object or an empty string for "no
// containers", numbers rendered as strings, and unknown extra fields.
//
// Bad entries never fail the document:
//   - an entry whose id is not a valid container id is dropped;
//   - a container whose number field (totalVCoresNeeded,
//     totalMemoryNeededMB, exitCode) is not a finite number in range (see
//     MaxVCores, MaxMemoryMB; requests must be >= 0, the exit code an int32)
//     keeps its identity and its other fields, and that field is treated as
//     unknown: 0 for a request (as before the NM has reported it),
//     ExitCodeInvalid for the exit code. One log line per container names
//     the container id and the bad fields.
//
// Logging is bounded: at most maxEntryLogs such lines per document, then one
// line with the count of the rest. Only a malformed document, an NM error
// document (RemoteException) or a list of more than MaxNMContainers entries
// is an error. Memory is bounded by the valid containers kept, never by the
// body's shape: entries are decoded one at a time.
func DecodeContainers(r io.Reader) ([]NMContainer, error) {
	body, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read NM containers body: %w", err)
	}
	return decodeContainers(body)
}

// MaxNMContainers caps the entries of one NM containers document. An NM lists
// its running containers (bounded by the node's vcores and memory over the
// scheduler's minimum allocation: hundreds, a few thousand on the largest
// nodes) and the stopped ones it still tracks
// (yarn.nodemanager.duration-to-track-stopped-containers, 10 minutes by
// default: thousands under heavy churn); 65,536 is far above both. A longer
// list is not an NM's and fails the document, so the store keeps what it
// knew instead of trusting a truncated view.
const MaxNMContainers = 1 << 16

// maxEntryLogs caps the per-entry log lines of one document.
const maxEntryLogs = 16

func decodeContainers(body []byte) ([]NMContainer, error) {
	d := &decoder{}
	var doc struct {
		Containers      containersField `json:"containers"`
		RemoteException *struct {
			Exception string `json:"exception"`
			Message   string `json:"message"`
		} `json:"RemoteException"`
	}
	doc.Containers.d = d
	err := json.Unmarshal(body, &doc)
	d.flushLogs()
	if err != nil {
		return nil, fmt.Errorf("decode NM containers document: %w", err)
	}
	if doc.RemoteException != nil {
		return nil, fmt.Errorf("NM returned %s: %s", doc.RemoteException.Exception, doc.RemoteException.Message)
	}
	if doc.Containers.list == nil {
		return []NMContainer{}, nil
	}
	return doc.Containers.list, nil
}

// decoder turns raw entries into NMContainers and bounds the log lines of
// one document.
type decoder struct {
	logged, unlogged int
}

func (d *decoder) logf(format string, args ...any) {
	if d.logged >= maxEntryLogs {
		d.unlogged++
		return
	}
	d.logged++
	klog.Warningf(format, args...)
}

func (d *decoder) flushLogs() {
	if d.unlogged > 0 {
		klog.Warningf("yarn: %d more NM container entries were dropped or had invalid fields (not logged one by one)", d.unlogged)
		d.unlogged = 0
	}
}

// convert validates one raw entry (entry i of its list); ok is false when
// the entry is dropped.
func (d *decoder) convert(i int, rc *rawContainer) (NMContainer, bool) {
	if rc.ID == "" {
		d.logf("yarn: dropping NM container entry %d: no id", i)
		return NMContainer{}, false
	}
	id, err := ParseContainerID(rc.ID)
	if err != nil {
		d.logf("yarn: dropping NM container entry %d: %v", i, err)
		return NMContainer{}, false
	}
	c := NMContainer{
		ID:            id,
		State:         rc.State,
		User:          rc.User,
		Diagnostics:   rc.Diagnostics,
		ExecutionType: rc.ExecutionType,
	}
	var bad [3]string
	nbad := 0
	var ok bool
	if c.TotalVCoresNeeded, ok = rc.TotalVCoresNeeded.inRange(0, MaxVCores); !ok {
		bad[nbad] = rc.TotalVCoresNeeded.describe("totalVCoresNeeded", fmt.Sprintf("a number in [0, %d]", MaxVCores), "0")
		nbad++
	}
	if c.TotalMemoryNeededMB, ok = rc.TotalMemoryNeededMB.inRange(0, MaxMemoryMB); !ok {
		bad[nbad] = rc.TotalMemoryNeededMB.describe("totalMemoryNeededMB", fmt.Sprintf("a number in [0, %d]", MaxMemoryMB), "0")
		nbad++
	}
	exit, ok := rc.ExitCode.inRange(math.MinInt32, math.MaxInt32)
	if !ok {
		bad[nbad] = rc.ExitCode.describe("exitCode", "an int32", "-1000")
		nbad++
		exit = ExitCodeInvalid
	}
	c.ExitCode = int(exit)
	if nbad > 0 {
		d.logf("yarn: NM container %s: invalid %s; treated as unknown", id, strings.Join(bad[:nbad], ", "))
	}
	return c, true
}

type rawContainer struct {
	ID                  string  `json:"id"`
	State               string  `json:"state"`
	User                string  `json:"user"`
	ExitCode            flexNum `json:"exitCode"`
	Diagnostics         string  `json:"diagnostics"`
	TotalMemoryNeededMB flexNum `json:"totalMemoryNeededMB"`
	TotalVCoresNeeded   flexNum `json:"totalVCoresNeeded"`
	ExecutionType       string  `json:"executionType"`
}

// containersField is the value of "containers": null, "", {}, or
// {"container": <list or single object or null or "">}.
type containersField struct {
	d    *decoder
	list []NMContainer
}

func (c *containersField) UnmarshalJSON(b []byte) error {
	c.list = nil
	if isEmptyValue(b) {
		return nil
	}
	if b[0] != '{' {
		return fmt.Errorf("\"containers\" must be an object, got %.20s", b)
	}
	var inner struct {
		Container containerList `json:"container"`
	}
	inner.Container.d = c.d
	if err := json.Unmarshal(b, &inner); err != nil {
		return err
	}
	c.list = inner.Container.list
	return nil
}

// containerList is the value of "container": a list, a single object, or
// an empty value.
type containerList struct {
	d    *decoder
	list []NMContainer
}

func (c *containerList) UnmarshalJSON(b []byte) error {
	c.list = nil
	if isEmptyValue(b) {
		return nil
	}
	if c.d == nil {
		c.d = &decoder{}
	}
	var rc rawContainer
	switch b[0] {
	case '[':
		// Count the entries first (no allocation), then decode them one
		// at a time, in place, keeping only valid ones: memory is bounded
		// by the entries the list holds (at most MaxNMContainers), not by
		// how the body looks, and nothing copies the body.
		n := 0
		if err := forEachElement(b, func([]byte) error {
			if n++; n > MaxNMContainers {
				return fmt.Errorf("more than %d container entries", MaxNMContainers)
			}
			return nil
		}); err != nil {
			return err
		}
		c.list = make([]NMContainer, 0, n)
		i := 0
		return forEachElement(b, func(elem []byte) error {
			rc = rawContainer{}
			if string(elem) != "null" { // null: an entry without id
				if err := json.Unmarshal(elem, &rc); err != nil {
					return err
				}
			}
			if nc, ok := c.d.convert(i, &rc); ok {
				c.list = append(c.list, nc)
			}
			i++
			return nil
		})
	case '{':
		if err := json.Unmarshal(b, &rc); err != nil {
			return err
		}
		if nc, ok := c.d.convert(0, &rc); ok {
			c.list = []NMContainer{nc}
		}
		return nil
	}
	return fmt.Errorf("\"container\" must be a list or an object, got %.20s", b)
}

// forEachElement calls fn with each element of the JSON array b, in order.
// b is normally valid (json.Unmarshal checks the whole document before it
// calls an UnmarshalJSON); on invalid input the elements it finds are
// garbage that fn's json.Unmarshal rejects, and it always ends.
func forEachElement(b []byte, fn func(elem []byte) error) error {
	i := 1 // after '['
	for {
		i = skipSpace(b, i)
		if i >= len(b) || b[i] == ']' {
			return nil
		}
		end := valueEnd(b, i)
		if err := fn(bytes.TrimRight(b[i:end], " \t\r\n")); err != nil {
			return err
		}
		i = end
		if i < len(b) && b[i] == ',' {
			i++
		} else if i < len(b) && b[i] != ']' {
			return fmt.Errorf("malformed list at offset %d", i)
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// valueEnd returns the index just after the value starting at b[i]: the
// first ',', ']' or '}' outside strings and nested values, or len(b).
func valueEnd(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			depth++
		case ']', '}':
			if depth == 0 {
				return i
			}
			depth--
		case ',':
			if depth == 0 {
				return i
			}
		}
	}
	return len(b)
}

// isEmptyValue reports whether b (a JSON value without surrounding space) is
// null, "" or {}.
func isEmptyValue(b []byte) bool {
	switch string(b) {
	case "null", `""`, "{}":
		return true
	}
	return len(b) > 1 && b[0] == '{' && len(bytes.TrimSpace(b[1:len(b)-1])) == 0
}

// flexNum is a number field of an NM entry: a JSON number or a number
// rendered as a string (older Jersey "mapped" notation); null, "" and an
// absent field mean "not reported". Any other value (a non-numeric string,
// NaN, an object) is kept as invalid for the caller to report: it never
// fails the document.
type flexNum struct {
	state numState
	i     int64   // numInt
	f     float64 // numFloat
	raw   string  // numInvalid: the value's text, shortened
}

type numState uint8

const (
	numAbsent numState = iota
	numInt
	numFloat
	numInvalid
)

func (n *flexNum) UnmarshalJSON(b []byte) error {
	*n = flexNum{}
	s := b
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	if len(s) == 0 || string(s) == "null" {
		return nil
	}
	if v, err := strconv.ParseInt(string(s), 10, 64); err == nil {
		n.state, n.i = numInt, v
		return nil
	}
	// ParseFloat also accepts "NaN", "Inf" and hex floats; inRange rejects
	// what is not finite. Out-of-range exponents fail here.
	if v, err := strconv.ParseFloat(string(s), 64); err == nil {
		n.state, n.f = numFloat, v
		return nil
	}
	n.state = numInvalid
	n.raw = shorten(b)
	return nil
}

// inRange returns the value truncated toward zero when it lies in [lo, hi]
// and is finite; an absent value is 0 and in range. lo and hi must be exact
// in float64.
func (n *flexNum) inRange(lo, hi int64) (int64, bool) {
	switch n.state {
	case numAbsent:
		return 0, true
	case numInt:
		if n.i >= lo && n.i <= hi {
			return n.i, true
		}
		return 0, false
	case numFloat:
		// NaN fails both comparisons; ±Inf fails one.
		if n.f >= float64(lo) && n.f <= float64(hi) {
			return int64(n.f), true
		}
		return 0, false
	}
	return 0, false
}

// describe names the field, its bad value, what was wanted and what is used
// instead, for a log line.
func (n *flexNum) describe(field, want, used string) string {
	var v string
	switch n.state {
	case numInt:
		v = strconv.FormatInt(n.i, 10)
	case numFloat:
		v = strconv.FormatFloat(n.f, 'g', -1, 64)
	default:
		v = strconv.Quote(n.raw) // the body's text: quoted, so it cannot forge log lines
	}
	return fmt.Sprintf("%s %s (want %s, using %s)", field, v, want, used)
}

func shorten(b []byte) string {
	const max = 32
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}
