package yarn

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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
