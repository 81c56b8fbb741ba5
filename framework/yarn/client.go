package yarn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults of the NM client.
const (
	DefaultNMTimeout          = 5 * time.Second
	DefaultNMMaxResponseBytes = 32 << 20
	containersPath            = "/ws/v1/node/containers"
)

// ErrResponseTooLarge is returned when the NM or the RM sends more than the
// client's cap.
var ErrResponseTooLarge = errors.New("response exceeds the size cap")

// NMClient talks to one NodeManager's REST API.
type NMClient struct {
	// Endpoint is the NM web address, e.g. http://10.0.0.5:8042.
	Endpoint string
	// Timeout bounds each request; zero means DefaultNMTimeout.
	Timeout time.Duration
	// MaxResponseBytes caps a response body; zero means DefaultNMMaxResponseBytes.
	MaxResponseBytes int64
	// HTTPClient is used for requests; nil means a client without its own timeout.
	HTTPClient *http.Client
	// Metrics counts rejected ids and answers (nil: not counted).
	Metrics *NMMetrics
}

// NewNMClient returns a client for the NM at endpoint (scheme://host:port).
func NewNMClient(endpoint string, timeout time.Duration, maxResponseBytes int64) (*NMClient, error) {
	if err := ValidateEndpoint(endpoint); err != nil {
		return nil, err
	}
	return &NMClient{Endpoint: strings.TrimRight(endpoint, "/"), Timeout: timeout, MaxResponseBytes: maxResponseBytes}, nil
}

// ValidateEndpoint checks that endpoint is an http(s) URL with a host and no path.
func ValidateEndpoint(endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		return fmt.Errorf("invalid NM endpoint %q: %w", endpoint, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("invalid NM endpoint %q: scheme must be http or https", endpoint)
	}
	if u.Host == "" {
		return fmt.Errorf("invalid NM endpoint %q: no host", endpoint)
	}
	if strings.Trim(u.Path, "/") != "" || u.RawQuery != "" {
		return fmt.Errorf("invalid NM endpoint %q: must not have a path or query", endpoint)
	}
	return nil
}

// ListContainers fetches and decodes GET /ws/v1/node/containers. The body
// is decoded as it arrives (see DecodeContainers), never held: an answer
// larger than MaxResponseBytes fails with ErrResponseTooLarge, one listing
// more than MaxNMContainers entries with ErrTooManyContainers, and either
// costs what the capped decoding holds, not what the NM sent. A failed
// answer returns no containers, so the caller keeps its last good view.
func (c *NMClient) ListContainers(ctx context.Context) ([]NMContainer, error) {
	body, done, err := c.open(ctx, containersPath)
	if err != nil {
		return nil, err
	}
	defer done()
	list, report, err := decodeContainers(body, MaxNMContainers)
	c.Metrics.observe(report, err)
	if err != nil {
		return nil, fmt.Errorf("NM %s: %w", c.Endpoint, err)
	}
	return list, nil
}

// open sends GET path and returns the body of its 200 answer, capped at the
// client's MaxResponseBytes, and the function that ends the request.
func (c *NMClient) open(ctx context.Context, path string) (io.Reader, func(), error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultNMTimeout
	}
	limit := c.MaxResponseBytes
	if limit <= 0 {
		limit = DefaultNMMaxResponseBytes
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	target := strings.TrimRight(c.Endpoint, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("build NM request %s: %w", target, err)
	}
	req.Header.Set("Accept", "application/json")
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("GET %s: %w", target, err)
	}
	done := func() {
		// Closing without draining: a capped or failed answer's rest is
		// never read (the connection is not reused).
		resp.Body.Close()
		cancel()
	}
	if resp.StatusCode != http.StatusOK {
		head, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		done()
		return nil, nil, fmt.Errorf("GET %s: HTTP %d: %s", target, resp.StatusCode, head)
	}
	if resp.ContentLength > limit {
		done()
		return nil, nil, fmt.Errorf("GET %s: %w: Content-Length %d, the cap is %d bytes (--yarn-nm-max-response-bytes)",
			target, ErrResponseTooLarge, resp.ContentLength, limit)
	}
	return &cappedReader{r: resp.Body, left: limit, limit: limit, what: "GET " + target}, done, nil
}

// cappedReader reads at most left bytes of r and fails with an error
// wrapping ErrResponseTooLarge when r holds more.
type cappedReader struct {
	r    io.Reader
	left int64
	// limit is the cap, what names the read in the error.
	limit int64
	what  string
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, c.tooLarge()
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1] // one byte more tells a body of exactly the cap from a larger one
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n + int(c.left), c.tooLarge()
	}
	return n, err
}

func (c *cappedReader) tooLarge() error {
	return fmt.Errorf("%s: %w: more than %d bytes (--yarn-nm-max-response-bytes)", c.what, ErrResponseTooLarge, c.limit)
}

// readCapped reads all of r, at most limit bytes, growing its buffer only
// as the body arrives (sized from sizeHint when that is known and within
// the cap); more than limit bytes fail with an error wrapping
// ErrResponseTooLarge. It is for the small documents read whole (the NM's
// node info, the RM's answers).
func readCapped(r io.Reader, limit, sizeHint int64) ([]byte, error) {
	var buf bytes.Buffer
	if sizeHint > 0 && sizeHint <= limit {
		buf.Grow(int(sizeHint))
	}
	if _, err := buf.ReadFrom(io.LimitReader(r, limit+1)); err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	if int64(buf.Len()) > limit {
		return nil, fmt.Errorf("%w (%d bytes)", ErrResponseTooLarge, limit)
	}
	return buf.Bytes(), nil
}
