package yarn

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNMClient(t *testing.T) {
	slow := make(chan struct{})
	defer close(slow)
	serve := func(h http.HandlerFunc) *NMClient {
		s := httptest.NewServer(h)
		t.Cleanup(s.Close)
		c, err := NewNMClient(s.URL, 200*time.Millisecond, 1<<16)
		require.NoError(t, err)
		return c
	}

	t.Run("ok", func(t *testing.T) {
		c := serve(func(w http.ResponseWriter, r *http.Request) {
			assert.Equal(t, containersPath, r.URL.Path)
			_, _ = w.Write([]byte(documented))
		})
		got, err := c.ListContainers(context.Background())
		require.NoError(t, err)
		assert.Len(t, got, 2)
	})
	t.Run("http error", func(t *testing.T) {
		c := serve(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "boom", http.StatusInternalServerError)
		})
		_, err := c.ListContainers(context.Background())
		assert.ErrorContains(t, err, "HTTP 500")
	})
	t.Run("garbage", func(t *testing.T) {
		c := serve(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("\x00\x01garbage")) })
		_, err := c.ListContainers(context.Background())
		assert.Error(t, err)
	})
	t.Run("too large", func(t *testing.T) {
		c := serve(func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"containers":"` + strings.Repeat("x", 1<<17) + `"}`))
		})
		_, err := c.ListContainers(context.Background())
		assert.ErrorIs(t, err, ErrResponseTooLarge)
	})
	t.Run("slow", func(t *testing.T) {
		c := serve(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-slow:
			case <-r.Context().Done():
			}
		})
		start := time.Now()
		_, err := c.ListContainers(context.Background())
		assert.Error(t, err)
		assert.Less(t, time.Since(start), 2*time.Second)
	})
	t.Run("cancelled", func(t *testing.T) {
		c := serve(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-slow:
			case <-r.Context().Done():
			}
		})
		c.Timeout = time.Minute
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		start := time.Now()
		_, err := c.ListContainers(ctx)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Less(t, time.Since(start), 2*time.Second)
	})
	t.Run("down", func(t *testing.T) {
		s := httptest.NewServer(http.NotFoundHandler())
		url := s.URL
		s.Close()
		c, err := NewNMClient(url, time.Second, 0)
		require.NoError(t, err)
		_, err = c.ListContainers(context.Background())
		assert.Error(t, err)
	})
}

func TestValidateEndpoint(t *testing.T) {
	for _, ok := range []string{"http://127.0.0.1:8042", "https://nm.example:8044/", "http://[::1]:8042"} {
		assert.NoError(t, ValidateEndpoint(ok), ok)
	}
	for _, bad := range []string{"", "127.0.0.1:8042", "ftp://h:1", "http://", "http://h:8042/ws/v1", "http://h:8042?x=1", "://x"} {
		assert.Error(t, ValidateEndpoint(bad), bad)
	}
}

// TestNMClientMetrics: the client counts the entries it drops for their id
// and the answers it rejects whole.
func TestNMClientMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := NewNMMetrics(reg)
	require.NoError(t, err)
	var body string
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(body)) }))
	defer s.Close()
	c, err := NewNMClient(s.URL, time.Minute, 1<<20)
	require.NoError(t, err)
	c.Metrics = m

	body = nonCanonicalBody
	got, err := c.ListContainers(context.Background())
	require.NoError(t, err)
	require.Len(t, got, 1)
	body = `{"containers":{"container":[{"id":"container_1_0001_01_000001"},{"id":"bogus"},{"id":"container_1_0001_01_0000001"}]}}`
	_, err = c.ListContainers(context.Background())
	require.NoError(t, err)
	body = `{"containers":{"container":[` + strings.Repeat(`null,`, MaxNMContainers) + `null]}}`
	_, err = c.ListContainers(context.Background())
	assert.ErrorIs(t, err, ErrTooManyContainers)
	body = `{"containers":"` + strings.Repeat("x", 2<<20) + `"}`
	_, err = c.ListContainers(context.Background())
	assert.ErrorIs(t, err, ErrResponseTooLarge)

	assert.Equal(t, 2.0, testutil.ToFloat64(m.ids.WithLabelValues(RejectNonCanonical)))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.ids.WithLabelValues(RejectInvalid)))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.answers.WithLabelValues(RejectTooManyContainer)))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.answers.WithLabelValues(RejectTooLarge)))
	n, err := testutil.GatherAndCount(reg)
	require.NoError(t, err)
	assert.Equal(t, 4, n, "both reasons of both series exist from the start")
}

// BenchmarkDecodeContainers decodes an answer of 500 containers as the
// NodeManager writes them.
func BenchmarkDecodeContainers(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"containers":{"container":[`)
	for i := 0; i < 500; i++ {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, realEntry, i+1, i+1)
	}
	sb.WriteString(`]}}`)
	body := sb.String()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		got, err := DecodeContainers(strings.NewReader(body))
		if err != nil || len(got) != 500 {
			b.Fatalf("%d containers, %v", len(got), err)
		}
	}
}
