package colocation

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

func TestFrontStampRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 4, 2, 30, 0, 123456789, time.UTC)
	v := FrontStamp(at)
	assert.Equal(t, "t=1796351400.123456", v)
	got, ok := parseFrontStamp(v)
	require.True(t, ok)
	assert.Equal(t, at.Truncate(time.Microsecond), got.UTC())
}

func TestParseFrontStamp(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want time.Time
		ok   bool
	}{
		{"microseconds", "t=1796437800.123456", time.Unix(1796437800, 123456000), true},
		{"nginx milliseconds", "t=1796437800.123", time.Unix(1796437800, 123000000), true},
		{"whole seconds", "t=1796437800", time.Unix(1796437800, 0), true},
		{"nanoseconds", "t=1796437800.123456789", time.Unix(1796437800, 123456789), true},
		{"spaces around", "  t=1796437800.5 ", time.Unix(1796437800, 500000000), true},
		{"absent", "", time.Time{}, false},
		{"no prefix", "1796437800.123", time.Time{}, false},
		{"empty value", "t=", time.Time{}, false},
		{"letters", "t=abc.def", time.Time{}, false},
		{"negative", "t=-5.0", time.Time{}, false},
		{"negative fraction", "t=5.-1", time.Time{}, false},
		{"fraction too long", "t=5.1234567891", time.Time{}, false},
		{"two dots", "t=5.1.2", time.Time{}, false},
		{"overflow", "t=99999999999999999999", time.Time{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parseFrontStamp(tc.in)
			assert.Equal(t, tc.ok, ok)
			if tc.ok {
				assert.True(t, tc.want.Equal(got), "got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestServedLatency(t *testing.T) {
	began := time.Unix(1796437800, 0)
	end := began.Add(4 * time.Millisecond)
	cases := []struct {
		name   string
		header string
		want   time.Duration
	}{
		{"no stamp: the handler's time", "", 4 * time.Millisecond},
		{"queued 30 ms before the handler", FrontStamp(began.Add(-30 * time.Millisecond)), 34 * time.Millisecond},
		{"stamped as the handler began", FrontStamp(began), 4 * time.Millisecond},
		{"a stamp after the handler began (another clock): the handler's time", FrontStamp(began.Add(time.Millisecond)), 4 * time.Millisecond},
		{"a stamp older than a minute: the handler's time", FrontStamp(began.Add(-2 * time.Minute)), 4 * time.Millisecond},
		{"a minute exactly still counts", FrontStamp(began.Add(-time.Minute)), time.Minute + 4*time.Millisecond},
		{"malformed: the handler's time", "t=soon", 4 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, servedLatency(tc.header, began, end))
		})
	}
}

// TestServiceCountsTheQueueBeforeItsHandler: a request stamped by its front
// 300 ms before it reached the handler is observed at 300 ms or more, one
// without a stamp at its handler's time (the histogram's sum says which).
func TestServiceCountsTheQueueBeforeItsHandler(t *testing.T) {
	srv := httptest.NewServer(serviceMux(newWork(1), 1))
	defer srv.Close()
	get := func(stamp string) {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/", nil)
		require.NoError(t, err)
		if stamp != "" {
			req.Header.Set(RequestStartHeader, stamp)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	sum := func() float64 { return scrapeService(t, srv.URL).GetHistogram().GetSampleSum() }
	get("")
	handlerOnly := sum()
	assert.Less(t, handlerOnly, 0.3, "one pass of work, no stamp")
	get(FrontStamp(time.Now().Add(-300 * time.Millisecond)))
	assert.GreaterOrEqual(t, sum()-handlerOnly, 0.3, "the 300 ms before the handler counted")
}

// TestFrontTargeterStampsEachRequest: the load generator's targets carry a
// stamp of the time vegeta takes them.
func TestFrontTargeterStampsEachRequest(t *testing.T) {
	tr := frontTargeter("http://127.0.0.1:1/")
	before := time.Now().Truncate(time.Microsecond)
	var tgt vegeta.Target
	require.NoError(t, tr(&tgt))
	after := time.Now()
	assert.Equal(t, http.MethodGet, tgt.Method)
	assert.Equal(t, "http://127.0.0.1:1/", tgt.URL)
	at, ok := parseFrontStamp(tgt.Header.Get(RequestStartHeader))
	require.True(t, ok)
	assert.False(t, at.Before(before) || at.After(after), "stamp %v within [%v, %v]", at, before, after)
	assert.ErrorIs(t, tr(nil), vegeta.ErrNilTarget)
}
