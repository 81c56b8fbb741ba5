package yarn

import (
	"encoding/json"
	"errors"
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
//   - an entry whose id is not a container id YARN prints (see
//     ParseContainerID: an id with more leading zeros only resembles
//     another container and must not stand for it) is dropped;
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
// document (RemoteException), a list of more than MaxNMContainers entries
// (ErrTooManyContainers), a value (an entry, a string, an unknown field's
// value) longer than MaxNMValueBytes (ErrResponseTooLarge) or an object of
// the document's structure with a flood of keys is an error.
//
// The body is decoded as a stream: json.Decoder tokens for the document's
// structure and one Decode per list entry (which skips unknown fields by
// scanning), each in a window of at most MaxNMValueBytes, so nothing holds
// the body. What decoding holds is bounded by the entries it keeps (at most
// MaxNMContainers, each string field cut to maxKeptString) and one value,
// whatever the body's size or shape.
func DecodeContainers(r io.Reader) ([]NMContainer, error) {
	list, _, err := decodeContainers(r, MaxNMContainers)
	return list, err
}

// MaxNMContainers caps the entries of one NM containers document. An NM lists
// the containers of its context: the running ones (bounded by the node's
// vcores and memory over the scheduler's minimum allocation: hundreds, a few
// thousand on the largest nodes) and the finished ones until the RM has
// acknowledged them (a heartbeat or two); 16,384 is far above both. A longer
// list is not an NM's: decoding stops at the cap (so a 50,000-entry answer
// never costs more than the cap) and fails the document with
// ErrTooManyContainers, so the store keeps what it knew instead of trusting
// a truncated view (a container missing from a truncated list would read as
// gone).
const MaxNMContainers = 1 << 14

// MaxNMValueBytes caps one value json.Decoder reads whole from an NM answer:
// a list entry, a string, an unknown field's value. The longest an NM
// writes is an entry with a finished container's diagnostics (a stack trace
// with the tail of its stderr, yarn.nodemanager.container.stderr.tail.bytes,
// 4 KiB by default): kilobytes. A longer value fails the answer with
// ErrResponseTooLarge; it would otherwise be buffered whole.
const MaxNMValueBytes = 1 << 20

// maxKeptString caps each string field kept from an entry (diagnostics,
// user, state, execution type); a longer one is cut.
const maxKeptString = 1 << 10

// ErrTooManyContainers is returned for an NM answer that lists more than
// MaxNMContainers entries.
var ErrTooManyContainers = errors.New("too many container entries")

// maxStructureKeys caps the keys of the document's object and of its
// "containers" object: an NM writes one or two; a flood of unknown keys is
// not an NM's answer and would cost a token each.
const maxStructureKeys = 64

// maxEntryKeys caps the keys of the single-object entry, read key by key
// (an NM writes about a dozen).
const maxEntryKeys = 256

// maxEntryLogs caps the per-entry log lines of one document.
const maxEntryLogs = 16

// decodeReport counts what decoding one document rejected, for metrics.
type decodeReport struct {
	// invalidIDs counts entries dropped for an id that is not a container
	// id, nonCanonical those whose id only resembles one.
	invalidIDs, nonCanonical int
}

// decodeContainers decodes a containers document from r, taking at most
// maxEntries list entries.
func decodeContainers(r io.Reader, maxEntries int) ([]NMContainer, decodeReport, error) {
	g := &valueGuard{r: r, max: MaxNMValueBytes + guardChunk}
	st := &stream{g: g, dec: json.NewDecoder(g), max: maxEntries}
	list, err := st.document()
	st.flushLogs()
	if err != nil {
		return nil, st.report, fmt.Errorf("decode NM containers document: %w", err)
	}
	if list == nil {
		list = []NMContainer{}
	}
	return list, st.report, nil
}

// stream decodes one document token by token.
type stream struct {
	g      *valueGuard
	dec    *json.Decoder
	max    int
	report decodeReport
	// whole is set while one window spans a whole value (see entry).
	whole bool
	// logged and unlogged bound the per-entry log lines.
	logged, unlogged int
}

func (st *stream) logf(format string, args ...any) {
	if st.logged >= maxEntryLogs {
		st.unlogged++
		return
	}
	st.logged++
	klog.Warningf(format, args...)
}

func (st *stream) flushLogs() {
	if st.unlogged > 0 {
		klog.Warningf("yarn: %d more NM container entries were dropped or had invalid fields (not logged one by one)", st.unlogged)
		st.unlogged = 0
	}
}

// window starts a window for the next call, unless one spans a whole value.
func (st *stream) window() {
	if !st.whole {
		st.g.window()
	}
}

// token reads the next token in its own window.
func (st *stream) token() (json.Token, error) {
	st.window()
	return st.dec.Token()
}

// more reports whether the list or object being read has another element,
// in its own window.
func (st *stream) more() bool {
	st.window()
	return st.dec.More()
}

// value decodes the next value into v in its own window: json.Decoder
// skips what v does not take (unknown fields) without allocating.
func (st *stream) value(v any) error {
	st.window()
	return st.dec.Decode(v)
}

// document decodes the top level: an object with "containers" (and maybe
// "RemoteException"), or null.
func (st *stream) document() ([]NMContainer, error) {
	tok, err := st.token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	var list []NMContainer
	var remote *remoteException
	switch tok {
	case nil:
	case json.Delim('{'):
		for n := 0; st.more(); n++ {
			key, err := st.key(n)
			if err != nil {
				return nil, err
			}
			switch {
			case strings.EqualFold(key, "containers"):
				if list, err = st.containers(); err != nil {
					return nil, err
				}
			case strings.EqualFold(key, "RemoteException"):
				remote = nil
				if err := st.value(&remote); err != nil {
					return nil, err
				}
			default:
				if err := st.skip(); err != nil {
					return nil, err
				}
			}
		}
		if _, err := st.token(); err != nil { // '}'
			return nil, err
		}
	default:
		return nil, fmt.Errorf("the document must be an object, got %s", describeToken(tok))
	}
	if _, err := st.token(); !errors.Is(err, io.EOF) {
		if err == nil {
			return nil, errors.New("data after the document")
		}
		return nil, err
	}
	if remote != nil {
		return nil, fmt.Errorf("NM returned %.200s: %.1000s", remote.Exception, remote.Message)
	}
	return list, nil
}

// key reads key n of an object of the document's structure (not an
// entry's); more than maxStructureKeys fail the document.
func (st *stream) key(n int) (string, error) {
	if n >= maxStructureKeys {
		return "", fmt.Errorf("more than %d fields in an object of the document", maxStructureKeys)
	}
	return st.entryKey()
}

// entryKey reads an object key.
func (st *stream) entryKey() (string, error) {
	tok, err := st.token()
	if err != nil {
		return "", err
	}
	k, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("object key %s", describeToken(tok))
	}
	return k, nil
}

// containers decodes the value of "containers": null, "", {}, or
// {"container": <list or single object or null or "">}.
func (st *stream) containers() ([]NMContainer, error) {
	tok, err := st.token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case nil, "":
		return nil, nil
	case json.Delim('{'):
	default:
		return nil, fmt.Errorf("\"containers\" must be an object, got %s", describeToken(tok))
	}
	var list []NMContainer
	for n := 0; st.more(); n++ {
		key, err := st.key(n)
		if err != nil {
			return nil, err
		}
		if !strings.EqualFold(key, "container") {
			if err := st.skip(); err != nil {
				return nil, err
			}
			continue
		}
		if list, err = st.containerList(); err != nil {
			return nil, err
		}
	}
	_, err = st.token() // '}'
	return list, err
}

// containerList decodes the value of "container": a list, a single object,
// or an empty value. It takes at most st.max entries.
func (st *stream) containerList() ([]NMContainer, error) {
	tok, err := st.token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case nil, "":
		return nil, nil
	case json.Delim('{'):
		rc, n, err := st.entry()
		if err != nil || n == 0 { // {}: no containers
			return nil, err
		}
		if nc, ok := st.convert(0, &rc); ok {
			return []NMContainer{nc}, nil
		}
		return nil, nil
	case json.Delim('['):
	default:
		return nil, fmt.Errorf("\"container\" must be a list or an object, got %s", describeToken(tok))
	}
	var list []NMContainer
	for i := 0; st.more(); i++ {
		if i >= st.max {
			return nil, fmt.Errorf("%w: more than %d", ErrTooManyContainers, st.max)
		}
		// One Decode per entry: json.Decoder skips unknown fields by
		// scanning, and the window bounds the entry. null is an entry
		// without id; anything but an object fails the document.
		var rc rawContainer
		if err := st.value(&rc); err != nil {
			return nil, fmt.Errorf("container entry %d: %w", i, err)
		}
		if nc, ok := st.convert(i, &rc); ok {
			list = append(list, nc)
		}
	}
	_, err = st.token() // ']'
	return list, err
}

// entry decodes one container object after its '{' field by field (the
// single-object shape); n is its number of keys. One window spans the
// whole object, so it is bounded as a list entry is.
func (st *stream) entry() (rc rawContainer, n int, err error) {
	st.g.window()
	st.whole = true
	defer func() { st.whole = false }()
	for ; st.more(); n++ {
		if n >= maxEntryKeys {
			return rc, n, fmt.Errorf("more than %d fields in a container entry", maxEntryKeys)
		}
		key, err := st.entryKey()
		if err != nil {
			return rc, n, err
		}
		switch {
		case strings.EqualFold(key, "id"):
			rc.ID, err = st.str(key)
		case strings.EqualFold(key, "state"):
			rc.State, err = st.str(key)
		case strings.EqualFold(key, "user"):
			rc.User, err = st.str(key)
		case strings.EqualFold(key, "diagnostics"):
			rc.Diagnostics, err = st.str(key)
		case strings.EqualFold(key, "executionType"):
			rc.ExecutionType, err = st.str(key)
		case strings.EqualFold(key, "exitCode"):
			rc.ExitCode, err = st.num()
		case strings.EqualFold(key, "totalMemoryNeededMB"):
			rc.TotalMemoryNeededMB, err = st.num()
		case strings.EqualFold(key, "totalVCoresNeeded"):
			rc.TotalVCoresNeeded, err = st.num()
		default:
			err = st.skip()
		}
		if err != nil {
			return rc, n, err
		}
	}
	_, err = st.token() // '}'
	return rc, n, err
}

// str reads a string field (null is "").
func (st *stream) str(field string) (string, error) {
	var v string
	if err := st.value(&v); err != nil {
		return "", fmt.Errorf("field %q: %w", field, err)
	}
	return v, nil
}

// cut shortens a kept string field to maxKeptString bytes.
func cut(s string) string {
	if len(s) <= maxKeptString {
		return s
	}
	return strings.ToValidUTF8(s[:maxKeptString], "") + "..."
}

// num reads a number field: a number, a number as a string, or anything
// else kept as invalid (see flexNum).
func (st *stream) num() (flexNum, error) {
	var n flexNum
	err := st.value(&n)
	return n, err
}

// skipValue takes any JSON value and keeps nothing.
type skipValue struct{}

func (*skipValue) UnmarshalJSON([]byte) error { return nil }

// skip skips one value.
func (st *stream) skip() error {
	return st.value(&skipValue{})
}

// remoteException is the NM's error document's RemoteException.
type remoteException struct {
	Exception string `json:"exception"`
	Message   string `json:"message"`
}

// describeToken names a token for an error, shortened and quoted.
func describeToken(tok json.Token) string {
	switch v := tok.(type) {
	case nil:
		return "null"
	case json.Delim:
		return string(v)
	case string:
		return strconv.Quote(shorten([]byte(v)))
	}
	return shorten([]byte(fmt.Sprint(tok)))
}

// convert validates one raw entry (entry i of its list); ok is false when
// the entry is dropped.
func (st *stream) convert(i int, rc *rawContainer) (NMContainer, bool) {
	if rc.ID == "" {
		st.logf("yarn: dropping NM container entry %d: no id", i)
		return NMContainer{}, false
	}
	id, err := ParseContainerID(rc.ID)
	if err != nil {
		if errors.Is(err, ErrNonCanonicalContainerID) {
			st.report.nonCanonical++
		} else {
			st.report.invalidIDs++
		}
		st.logf("yarn: dropping NM container entry %d: %.300s", i, err) // the id is quoted in err
		return NMContainer{}, false
	}
	c := NMContainer{
		ID:            id,
		State:         cut(rc.State),
		User:          cut(rc.User),
		Diagnostics:   cut(rc.Diagnostics),
		ExecutionType: cut(rc.ExecutionType),
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
		st.logf("yarn: NM container %s: invalid %s; treated as unknown", id, strings.Join(bad[:nbad], ", "))
	}
	return c, true
}

// rawContainer is one entry's fields as the NM wrote them.
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

// valueGuard bounds what json.Decoder buffers: the stream starts a window
// before each Token or Decode call, and a window that reads more than max
// bytes fails with an error wrapping ErrResponseTooLarge. Each read is at
// most guardChunk bytes, so a call reads at most its value's length and
// one chunk more: a value of up to MaxNMValueBytes never fails, a longer one
// fails before the decoder has buffered much more than it.
type valueGuard struct {
	r   io.Reader
	max int
	// n is what the current window read.
	n   int
	err error
}

// guardChunk caps one read of the guard.
const guardChunk = 64 << 10

// window starts a window.
func (g *valueGuard) window() { g.n = 0 }

func (g *valueGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if len(p) > guardChunk {
		p = p[:guardChunk]
	}
	n, err := g.r.Read(p)
	if g.n += n; g.n > g.max {
		g.err = fmt.Errorf("%w: a JSON value longer than %d bytes", ErrResponseTooLarge, MaxNMValueBytes)
		return n, g.err
	}
	return n, err
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

// UnmarshalJSON decodes a number, a number as a string, null or anything
// else (kept as invalid); it never fails.
func (n *flexNum) UnmarshalJSON(b []byte) error {
	s := b
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	if string(s) == "null" {
		*n = flexNum{}
		return nil
	}
	n.parse(string(s))
	if n.state == numInvalid {
		n.raw = shorten(b)
	}
	return nil
}

// parse sets n from the text of a number (a JSON number, or the contents
// of a string holding one); "" is absent.
func (n *flexNum) parse(s string) {
	*n = flexNum{}
	if s == "" {
		return
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		n.state, n.i = numInt, v
		return
	}
	// ParseFloat also accepts "NaN", "Inf" and hex floats; inRange rejects
	// what is not finite. Out-of-range exponents fail here.
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		n.state, n.f = numFloat, v
		return
	}
	n.state = numInvalid
	n.raw = shorten([]byte(s))
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
