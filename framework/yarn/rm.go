package yarn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// Defaults of the RM client.
const (
	DefaultRMTimeout          = 5 * time.Second
	DefaultRMMaxResponseBytes = 4 << 20
)

// standbyMarkers are the texts of the ResourceManager's RMWebAppFilter on a
// standby RM: "This is standby RM. The redirect url is: ..." with a 307
// when it knows the active RM; "Can not find any active RM. Will retry in
// next N seconds." (307 with a Refresh header) or "There is no active RM
// right now." (200) when it does not.
var standbyMarkers = [][]byte{
	[]byte("This is standby RM"),
	[]byte("Can not find any active RM"),
	[]byte("There is no active RM right now"),
}

// ErrStandbyRM marks an RM endpoint that answered as a standby (a redirect,
// 503, or the standby page). The client then tries the next endpoint.
var ErrStandbyRM = errors.New("standby ResourceManager")

// ErrNoActiveRM is returned when no endpoint of the HA list answered as the
// active ResourceManager; it wraps each endpoint's error.
var ErrNoActiveRM = errors.New("no active ResourceManager")

// RMHTTPError is a non-2xx answer of the active ResourceManager (for
// example 404 for an unknown application, 403 without a user): definitive,
// the client does not try another endpoint for it.
type RMHTTPError struct {
	Method, URL string
	StatusCode  int
	// Body is the start of the response body (at most 512 bytes).
	Body string
}

func (e *RMHTTPError) Error() string {
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.Method, e.URL, e.StatusCode, e.Body)
}

// RMOptions configure an RMClient.
type RMOptions struct {
	// Endpoints are the web addresses of the ResourceManagers
	// (yarn.resourcemanager.webapp.address of each HA RM), tried in order
	// starting from the last one that answered as active.
	Endpoints []string
	// User is sent as the user.name query parameter (Hadoop's simple
	// authentication); empty sends none.
	User string
	// Timeout bounds each request to one endpoint; zero means DefaultRMTimeout.
	Timeout time.Duration
	// MaxResponseBytes caps a response body; zero means DefaultRMMaxResponseBytes.
	MaxResponseBytes int64
	// Transport performs the requests; nil means http.DefaultTransport.
	Transport http.RoundTripper
}

// RMClient talks to the ResourceManager REST API (/ws/v1/cluster) of a
// possibly highly available YARN cluster. It never follows redirects: a
// standby RM redirects to the active one, which the client reaches as the
// next endpoint of its list, so credentials go only to configured hosts.
// It is safe for concurrent use.
type RMClient struct {
	endpoints []string
	user      string
	timeout   time.Duration
	limit     int64
	hc        *http.Client
	// active is the index of the endpoint that last answered as active.
	active atomic.Int32
}

// NewRMClient returns a client for the ResourceManagers in o.Endpoints.
func NewRMClient(o RMOptions) (*RMClient, error) {
	if len(o.Endpoints) == 0 {
		return nil, errors.New("no ResourceManager endpoint")
	}
	c := &RMClient{user: o.User, timeout: o.Timeout, limit: o.MaxResponseBytes}
	for _, e := range o.Endpoints {
		if err := ValidateEndpoint(e); err != nil {
			return nil, fmt.Errorf("ResourceManager endpoint: %w", err)
		}
		c.endpoints = append(c.endpoints, strings.TrimRight(e, "/"))
	}
	if c.timeout <= 0 {
		c.timeout = DefaultRMTimeout
	}
	if c.limit <= 0 {
		c.limit = DefaultRMMaxResponseBytes
	}
	c.hc = &http.Client{
		Transport: o.Transport,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return c, nil
}

// Endpoints returns the configured endpoints.
func (c *RMClient) Endpoints() []string { return append([]string(nil), c.endpoints...) }

// Active returns the endpoint that last answered as the active RM (the
// first one before any answer).
func (c *RMClient) Active() string { return c.endpoints[c.active.Load()] }

// Do sends method path (below the endpoint, e.g. /ws/v1/cluster/info) with
// an optional JSON body to the active ResourceManager and returns the body
// of its 2xx answer. Endpoints that are unreachable, time out, redirect,
// answer 502/503/504 or with the standby page are skipped for the next; a
// 4xx answer is the active RM's and is returned as *RMHTTPError at once.
// Another 5xx (an RM failing inside) is returned as *RMHTTPError only when
// no other endpoint answers. When every endpoint failed otherwise the error
// wraps ErrNoActiveRM and each endpoint's error.
// A cancelled ctx ends the attempt at once.
func (c *RMClient) Do(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	start := int(c.active.Load())
	var errs []error
	var serverErr error
	for i := range c.endpoints {
		idx := (start + i) % len(c.endpoints)
		out, err := c.try(ctx, c.endpoints[idx], method, path, body)
		if err == nil {
			c.active.Store(int32(idx))
			return out, nil
		}
		var httpErr *RMHTTPError
		switch {
		case errors.As(err, &httpErr) && httpErr.StatusCode >= 500:
			// An RM failing inside: another one may be the active RM.
			if serverErr == nil {
				serverErr = err
			}
		case httpErr != nil || errors.Is(err, ErrResponseTooLarge):
			c.active.Store(int32(idx))
			return nil, err
		case ctx.Err() != nil:
			return nil, fmt.Errorf("%s %s: %w", method, path, ctx.Err())
		}
		errs = append(errs, err)
	}
	if serverErr != nil {
		return nil, serverErr
	}
	return nil, fmt.Errorf("%s %s: %w: %w", method, path, ErrNoActiveRM, errors.Join(errs...))
}

// try sends one request to endpoint; a standby or unreachable RM's error
// does not wrap RMHTTPError.
func (c *RMClient) try(ctx context.Context, endpoint, method, path string, body []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	target := endpoint + path
	if c.user != "" {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		target += sep + "user.name=" + url.QueryEscape(c.user)
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, fmt.Errorf("build RM request %s %s: %w", method, target, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, target, err)
	}
	defer resp.Body.Close()
	out, err := readCapped(resp.Body, c.limit, resp.ContentLength)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, target, err)
	}
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400,
		resp.StatusCode == http.StatusServiceUnavailable:
		return nil, fmt.Errorf("%s %s: HTTP %d: %w", method, target, resp.StatusCode, ErrStandbyRM)
	case resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusGatewayTimeout:
		return nil, fmt.Errorf("%s %s: HTTP %d", method, target, resp.StatusCode)
	case isStandbyPage(resp, out):
		return nil, fmt.Errorf("%s %s: HTTP %d with the standby page: %w", method, target, resp.StatusCode, ErrStandbyRM)
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return nil, &RMHTTPError{Method: method, URL: target, StatusCode: resp.StatusCode, Body: shortBody(out)}
	}
	return out, nil
}

// isStandbyPage reports whether a response that is not JSON is the
// standby RM's page (a JSON document is never taken for it, whatever
// strings it holds).
func isStandbyPage(resp *http.Response, body []byte) bool {
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err == nil && mt == "application/json" {
		return false
	}
	for _, m := range standbyMarkers {
		if bytes.Contains(body, m) {
			return true
		}
	}
	return false
}

func shortBody(b []byte) string {
	const max = 512
	b = bytes.TrimSpace(b)
	if len(b) > max {
		return fmt.Sprintf("%q...", b[:max])
	}
	return fmt.Sprintf("%q", b)
}
