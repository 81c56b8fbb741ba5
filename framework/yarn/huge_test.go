package yarn

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The answers of a misbehaving NodeManager, at the sizes that blew up
// koordlet's memory: a 64 MiB body and 50,000 containers.
const (
	hugeBodyBytes  = 64 << 20
	hugeContainers = 50000
	// heapBound is what decoding one such answer may hold on the heap
	// above what the test holds before.
	heapBound = 16 << 20
)

// entriesReader yields prefix, n entries made by entry, separated by
// commas, then suffix, without holding more than one entry.
type entriesReader struct {
	prefix, suffix string
	n              int
	entry          func(i int) string
	i              int
	pending        string
	done           bool
}

func (r *entriesReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if r.pending == "" {
			switch {
			case r.prefix != "":
				r.pending, r.prefix = r.prefix, ""
			case r.i < r.n:
				r.pending = r.entry(r.i)
				if r.i > 0 {
					r.pending = "," + r.pending
				}
				r.i++
			case !r.done:
				r.pending, r.done = r.suffix, true
			default:
				if n == 0 {
					return 0, io.EOF
				}
				return n, nil
			}
		}
		c := copy(p[n:], r.pending)
		r.pending = r.pending[c:]
		n += c
	}
	return n, nil
}

// hugeAnswer is one of the misbehaving NM's answers.
type hugeAnswer struct {
	name string
	body func() io.Reader
	// fails says on what the answer fails.
	fails failure
}

type failure int

const (
	// bodyCap: the NM client's cap on the body (DecodeContainers, which
	// has none, takes it).
	bodyCap failure = iota
	// valueCap: MaxNMValueBytes.
	valueCap
	// countCap: MaxNMContainers.
	countCap
)

const realEntry = `{"nodeId":"host.domain.com:8041","totalMemoryNeededMB":2048,"totalVCoresNeeded":1,"state":"RUNNING","diagnostics":"",` +
	`"containerLogsLink":"http://host.domain.com:8042/node/containerlogs/container_1700000000000_0001_01_%06d/alice",` +
	`"user":"alice","id":"container_1700000000000_0001_01_%06d","exitCode":-1000,"executionType":"GUARANTEED","containerLogFiles":["stdout","stderr","syslog"]}`

func hugeAnswers() []hugeAnswer {
	const list = `{"containers":{"container":[`
	return []hugeAnswer{
		{"64 MiB of entries under 1 MiB each", func() io.Reader {
			pad := strings.Repeat("1,", 499000) + "1"
			return &entriesReader{prefix: list, suffix: `]}}`, n: hugeBodyBytes / len(pad),
				entry: func(i int) string {
					return fmt.Sprintf(`{"id":"container_1700000000000_0001_01_%06d","x":[%s]}`, i+1, pad)
				}}
		}, bodyCap},
		{"an entry's unknown field of 64 MiB", func() io.Reader {
			return &entriesReader{prefix: list + `{"id":"container_1700000000000_0001_01_000001","x":[`, suffix: `]}]}}`,
				n: hugeBodyBytes / 2, entry: func(int) string { return "1" }}
		}, valueCap},
		{"64 MiB diagnostics", func() io.Reader {
			const chunk = 1 << 16
			x := strings.Repeat("x", chunk)
			return &entriesReader{prefix: list + `{"id":"container_1700000000000_0001_01_000001","diagnostics":"`, suffix: `"}]}}`,
				n: hugeBodyBytes / chunk, entry: func(i int) string {
					if i > 0 {
						return x[1:] // the reader adds a comma: make it part of the string
					}
					return x
				}}
		}, valueCap},
		{"50,000 containers", func() io.Reader {
			return &entriesReader{prefix: list, suffix: `]}}`, n: hugeContainers,
				entry: func(i int) string { return fmt.Sprintf(realEntry, i+2, i+2) }}
		}, countCap},
	}
}

// sampledReader calls sample after every MiB read through it.
type sampledReader struct {
	r      io.Reader
	n      int
	sample func()
}

func (s *sampledReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if s.n += n; s.n >= 1<<20 {
		s.n = 0
		s.sample()
	}
	return n, err
}

// heapPeak runs f with a sample function that records the live heap
// (after a collection) and returns the largest sample above the heap
// before f.
func heapPeak(f func(sample func())) uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	base, peak := m.HeapAlloc, m.HeapAlloc
	sample := func() {
		runtime.GC()
		runtime.ReadMemStats(&m)
		peak = max(peak, m.HeapAlloc)
	}
	f(sample)
	sample()
	return peak - base
}

// TestDecodeHugeAnswersHeapBounded: decoding the answers of a misbehaving
// NM holds at most heapBound, whatever their size or count.
func TestDecodeHugeAnswersHeapBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes 64 MiB bodies")
	}
	for _, a := range hugeAnswers() {
		t.Run(a.name, func(t *testing.T) {
			var err error
			var got []NMContainer
			peak := heapPeak(func(sample func()) {
				got, err = DecodeContainers(&sampledReader{r: a.body(), sample: sample})
				sample()
			})
			t.Logf("peak heap %d MiB, %d containers, err %v", peak>>20, len(got), err)
			switch a.fails {
			case bodyCap:
				assert.NoError(t, err, "no body cap here")
			case valueCap:
				assert.ErrorIs(t, err, ErrResponseTooLarge)
				assert.Empty(t, got)
			case countCap:
				assert.ErrorIs(t, err, ErrTooManyContainers)
				assert.Empty(t, got)
			}
			assert.LessOrEqual(t, peak, uint64(heapBound), "heap while decoding")
		})
	}
}

// TestNMClientHugeAnswersHeapBounded: three polls of each answer through
// the NM client fail (the body's size, the container count) and hold at
// most heapBound each.
func TestNMClientHugeAnswersHeapBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("serves 64 MiB bodies")
	}
	for _, a := range hugeAnswers() {
		t.Run(a.name, func(t *testing.T) {
			var sample func()
			done := make(chan struct{}, 1)
			s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer func() { done <- struct{}{} }()
				_, _ = io.Copy(w, &sampledReader{r: a.body(), sample: sample})
			}))
			defer s.Close()
			c, err := NewNMClient(s.URL, DefaultNMTimeout*6, 0)
			require.NoError(t, err)
			for poll := 0; poll < 3; poll++ {
				var got []NMContainer
				peak := heapPeak(func(smp func()) {
					sample = smp
					got, err = c.ListContainers(context.Background())
					<-done
				})
				t.Logf("poll %d: peak heap %d MiB, %d containers, err %v", poll, peak>>20, len(got), err)
				if a.fails == countCap {
					assert.ErrorIs(t, err, ErrTooManyContainers)
				} else {
					assert.ErrorIs(t, err, ErrResponseTooLarge)
				}
				assert.Empty(t, got)
				assert.LessOrEqual(t, peak, uint64(heapBound), "heap while polling")
			}
		})
	}
}
