package colocation

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// RequestStartHeader carries the time a request reached the service's
// front, as proxies and load balancers stamp it for the service's own
// "request queue time" (nginx: proxy_set_header X-Request-Start
// "t=${msec}"; Heroku's router and the APM agents read the same header).
// The load generator plays the front here. The service observes each
// request from that time, not from its handler's start: a handler-time
// histogram misses the time requests wait in the socket and the run queue
// before the handler runs, which is most of what batch adds to the tail
// (on the 2026-12-04 SLO day the handler's p99 read 6–7 ms while the
// clients saw 12–35 ms, and the controller steering by it never cut).
const RequestStartHeader = "X-Request-Start"

// maxFrontAge bounds a front stamp: one older than this (or a clock that
// jumped) is not this request's arrival, and the handler's start is used.
const maxFrontAge = time.Minute

// FrontStamp is RequestStartHeader's value for t: "t=<unix seconds>.<µs>",
// nginx's ${msec} format at microsecond resolution.
func FrontStamp(t time.Time) string {
	us := t.UnixMicro()
	return fmt.Sprintf("t=%d.%06d", us/1e6, us%1e6)
}

// parseFrontStamp reads FrontStamp's format (any fraction length, as
// nginx's milliseconds); ok is false for an absent or malformed value.
func parseFrontStamp(v string) (time.Time, bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(v), "t=")
	if !found || rest == "" {
		return time.Time{}, false
	}
	secs, frac, _ := strings.Cut(rest, ".")
	s, err := strconv.ParseInt(secs, 10, 64)
	if err != nil || s < 0 {
		return time.Time{}, false
	}
	var ns int64
	if frac != "" {
		if len(frac) > 9 {
			return time.Time{}, false
		}
		f, err := strconv.ParseInt(frac, 10, 64)
		if err != nil || f < 0 {
			return time.Time{}, false
		}
		for i := len(frac); i < 9; i++ {
			f *= 10
		}
		ns = f
	}
	return time.Unix(s, ns), true
}

// servedLatency is the latency the service observes for a request whose
// handler began at began and ended at end: from the front's stamp when
// header holds a plausible one (not after began, not older than
// maxFrontAge), else from began.
func servedLatency(header string, began, end time.Time) time.Duration {
	from := began
	if t, ok := parseFrontStamp(header); ok && !t.After(began) && began.Sub(t) <= maxFrontAge {
		from = t
	}
	return end.Sub(from)
}
