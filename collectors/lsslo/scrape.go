package lsslo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// acceptHeader asks for OpenMetrics first, then the text format (as
// Prometheus does; no protobuf).
const acceptHeader = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"

// scraper reads one declared pod's histogram over HTTP.
type scraper struct {
	client    *http.Client
	maxBody   int64
	maxSeries int
}

// newClient is the collector's one HTTP client: no proxy, no redirects,
// the timeout on every scrape.
func newClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: timeout}).DialContext,
			MaxIdleConnsPerHost: 1,
			IdleConnTimeout:     30 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// scrapeURL is where s is scraped at ip.
func scrapeURL(ip string, s SLO) string {
	return "http://" + net.JoinHostPort(ip, strconv.Itoa(s.Port)) + s.Path
}

// scrape reads s's buckets from url.
func (sc *scraper) scrape(ctx context.Context, url string, s SLO) (Buckets, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Buckets{}, fail(ReasonDown, "scrape %s: %v", url, err)
	}
	req.Header.Set("Accept", acceptHeader)
	resp, err := sc.client.Do(req)
	if err != nil {
		return Buckets{}, transportError(url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return Buckets{}, fail(ReasonHTTPStatus, "scrape %s: HTTP %d", url, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, sc.maxBody+1))
	if err != nil {
		return Buckets{}, transportError(url, err)
	}
	if int64(len(body)) > sc.maxBody {
		return Buckets{}, fail(ReasonTooLarge, "scrape %s: the body is larger than %d bytes", url, sc.maxBody)
	}
	b, err := Decode(body, resp.Header.Get("Content-Type"), s.Metric, s.Labels, sc.maxSeries)
	if err != nil {
		return Buckets{}, &Error{Reason: ReasonOf(err), Err: fmt.Errorf("scrape %s: %w", url, err)}
	}
	return b, nil
}

// transportError classifies a failed request or body read.
func transportError(url string, err error) error {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return &Error{Reason: ReasonTimeout, Err: fmt.Errorf("scrape %s: timed out", url)}
	}
	return &Error{Reason: ReasonDown, Err: fmt.Errorf("scrape %s: %w", url, unwrapURL(err))}
}

// unwrapURL drops url.Error's method and address (the message names the
// URL already).
func unwrapURL(err error) error {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner
		}
	}
	return err
}
