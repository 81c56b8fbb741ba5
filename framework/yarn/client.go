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
	"sync"
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

	// bufs recycles response buffers between requests.
	bufs sync.Pool
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

// ListContainers fetches and decodes GET /ws/v1/node/containers.
func (c *NMClient) ListContainers(ctx context.Context) ([]NMContainer, error) {
	buf, _ := c.bufs.Get().(*bytes.Buffer)
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	defer func() {
		buf.Reset()
		c.bufs.Put(buf)
	}()
	body, err := c.get(ctx, containersPath, buf)
	if err != nil {
		return nil, err
	}
	list, err := decodeContainers(body)
	if err != nil {
		return nil, fmt.Errorf("NM %s: %w", c.Endpoint, err)
	}
	return list, nil
}

// get fetches path into buf and returns its bytes.
func (c *NMClient) get(ctx context.Context, path string, buf *bytes.Buffer) ([]byte, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultNMTimeout
	}
	limit := c.MaxResponseBytes
	if limit <= 0 {
		limit = DefaultNMMaxResponseBytes
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	target := strings.TrimRight(c.Endpoint, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, fmt.Errorf("build NM request %s: %w", target, err)
	}
	req.Header.Set("Accept", "application/json")
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", target, err)
	}
	defer resp.Body.Close()
	if resp.ContentLength > 0 && resp.ContentLength <= limit {
		buf.Grow(int(resp.ContentLength))
	}
	if _, err := buf.ReadFrom(io.LimitReader(resp.Body, limit+1)); err != nil {
		return nil, fmt.Errorf("GET %s: read body: %w", target, err)
	}
	body := buf.Bytes()
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("GET %s: %w (%d bytes)", target, ErrResponseTooLarge, limit)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d: %.200s", target, resp.StatusCode, body)
	}
	return body, nil
}
