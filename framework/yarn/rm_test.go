package yarn

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rmServer is one emulated RM endpoint counting its requests.
type rmServer struct {
	*httptest.Server
	hits atomic.Int32
}

func newRMServer(t *testing.T, h http.HandlerFunc) *rmServer {
	s := &rmServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func active(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}
}

func standbyRedirect(to string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", to+r.URL.RequestURI())
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusTemporaryRedirect)
		_, _ = io.WriteString(w, "This is standby RM. The redirect url is: "+to)
	}
}

func TestRMClientFailover(t *testing.T) {
	never := newRMServer(t, active(`{"never":true}`)) // only reachable through a redirect
	slow := make(chan struct{})
	t.Cleanup(func() { close(slow) })
	cases := []struct {
		name     string
		first    http.HandlerFunc
		wantBody string
		wantErr  error
		// firstOnly: the second endpoint must not be asked.
		firstOnly bool
	}{
		{name: "active first", first: active(`{"a":1}`), wantBody: `{"a":1}`, firstOnly: true},
		{name: "307 standby", first: standbyRedirect(never.URL), wantBody: `{"second":true}`},
		{name: "503", first: func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "starting", http.StatusServiceUnavailable)
		}, wantBody: `{"second":true}`},
		{name: "200 standby page without an active RM", first: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "There is no active RM right now.\nHA Zookeeper Connection State: CONNECTED")
		}, wantBody: `{"second":true}`},
		{name: "refresh page", first: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Refresh", "1;url=/x")
			w.WriteHeader(http.StatusTemporaryRedirect)
			_, _ = io.WriteString(w, "Can not find any active RM. Will retry in next 1 seconds.")
		}, wantBody: `{"second":true}`},
		{name: "JSON naming the marker is an answer", first: active(`{"name":"This is standby RM"}`),
			wantBody: `{"name":"This is standby RM"}`, firstOnly: true},
		{name: "unreachable", first: nil, wantBody: `{"second":true}`},
		{name: "slow", first: func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-slow:
			case <-r.Context().Done():
			}
		}, wantBody: `{"second":true}`},
		{name: "404 of the active RM is definitive", first: func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"RemoteException":{"exception":"NotFoundException"}}`, http.StatusNotFound)
		}, wantErr: &RMHTTPError{}, firstOnly: true},
		{name: "500 tries the next RM", first: func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "NullPointerException", http.StatusInternalServerError)
		}, wantBody: `{"second":true}`},
		{name: "oversized answer is definitive", first: active(`{"x":"` + strings.Repeat("a", 2048) + `"}`),
			wantErr: ErrResponseTooLarge, firstOnly: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var firstURL string
			var first *rmServer
			if tc.first != nil {
				first = newRMServer(t, tc.first)
				firstURL = first.URL
			} else {
				dead := httptest.NewServer(http.NotFoundHandler())
				firstURL = dead.URL
				dead.Close()
			}
			second := newRMServer(t, active(`{"second":true}`))
			c, err := NewRMClient(RMOptions{Endpoints: []string{firstURL, second.URL}, Timeout: 200 * time.Millisecond, MaxResponseBytes: 1024})
			require.NoError(t, err)
			body, err := c.Do(context.Background(), http.MethodGet, "/ws/v1/cluster/info", nil)
			if tc.wantErr != nil {
				var httpErr *RMHTTPError
				if errors.As(tc.wantErr, &httpErr) {
					require.ErrorAs(t, err, &httpErr)
					assert.Equal(t, http.StatusNotFound, httpErr.StatusCode)
				} else {
					require.ErrorIs(t, err, tc.wantErr)
				}
			} else {
				require.NoError(t, err)
				assert.JSONEq(t, tc.wantBody, string(body))
			}
			assert.Zero(t, never.hits.Load(), "a redirect must not be followed")
			if tc.firstOnly {
				assert.Zero(t, second.hits.Load())
				assert.Equal(t, firstURL, c.Active())
				return
			}
			assert.EqualValues(t, 1, second.hits.Load())
			assert.Equal(t, second.URL, c.Active())
			// The next call starts at the endpoint that answered.
			before := int32(0)
			if first != nil {
				before = first.hits.Load()
			}
			_, err = c.Do(context.Background(), http.MethodGet, "/ws/v1/cluster/info", nil)
			require.NoError(t, err)
			if first != nil {
				assert.Equal(t, before, first.hits.Load())
			}
		})
	}
}

func TestRMClientNoActive(t *testing.T) {
	a := newRMServer(t, standbyRedirect("http://127.0.0.1:1"))
	b := newRMServer(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) })
	c, err := NewRMClient(RMOptions{Endpoints: []string{a.URL, b.URL}})
	require.NoError(t, err)
	_, err = c.Do(context.Background(), http.MethodGet, "/ws/v1/cluster/info", nil)
	require.ErrorIs(t, err, ErrNoActiveRM)
	assert.ErrorIs(t, err, ErrStandbyRM)
	assert.ErrorContains(t, err, "HTTP 502")

	// A 500 with no other RM answering is the RM's error, not "no active RM".
	e := newRMServer(t, func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", http.StatusInternalServerError) })
	c, err = NewRMClient(RMOptions{Endpoints: []string{a.URL, e.URL}})
	require.NoError(t, err)
	_, err = c.Do(context.Background(), http.MethodGet, "/ws/v1/cluster/info", nil)
	var httpErr *RMHTTPError
	require.ErrorAs(t, err, &httpErr)
	assert.Equal(t, http.StatusInternalServerError, httpErr.StatusCode)
}

func TestRMClientContext(t *testing.T) {
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	a := newRMServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	})
	b := newRMServer(t, active(`{}`))
	c, err := NewRMClient(RMOptions{Endpoints: []string{a.URL, b.URL}, Timeout: time.Minute})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = c.Do(ctx, http.MethodGet, "/ws/v1/cluster/info", nil)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.NotErrorIs(t, err, ErrNoActiveRM)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Zero(t, b.hits.Load(), "a cancelled call tries no other endpoint")
}

func TestNewRMClientValidates(t *testing.T) {
	for _, eps := range [][]string{nil, {"127.0.0.1:8088"}, {"http://rm:8088/ws"}, {"http://rm:8088", "ftp://x"}} {
		_, err := NewRMClient(RMOptions{Endpoints: eps})
		assert.Error(t, err, "%v", eps)
	}
}

func TestUpdateNodeResource(t *testing.T) {
	var got struct {
		method, path, user, ctype string
		body                      ResourceOption
		raw                       map[string]any
	}
	s := newRMServer(t, func(w http.ResponseWriter, r *http.Request) {
		got.method, got.path, got.user, got.ctype = r.Method, r.URL.EscapedPath(), r.URL.Query().Get("user.name"), r.Header.Get("Content-Type")
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &got.body)
		_ = json.Unmarshal(b, &got.raw)
		active(`{"memory":4096,"vCores":3}`)(w, r)
	})
	c, err := NewRMClient(RMOptions{Endpoints: []string{s.URL}, User: "yarn admin"})
	require.NoError(t, err)
	require.NoError(t, c.UpdateNodeResource(context.Background(), "node-1:45454", NodeResource{MemoryMB: 4096, VCores: 3}))
	assert.Equal(t, http.MethodPost, got.method)
	assert.Equal(t, "/ws/v1/cluster/nodes/node-1:45454/resource", got.path)
	assert.Equal(t, "yarn admin", got.user)
	assert.Equal(t, "application/json", got.ctype)
	assert.Equal(t, ResourceOption{Resource: NodeResource{MemoryMB: 4096, VCores: 3}, OverCommitTimeout: -1}, got.body)
	assert.Equal(t, map[string]any{"resource": map[string]any{"memory": 4096.0, "vCores": 3.0}, "overCommitTimeout": -1.0}, got.raw)

	for _, bad := range []string{"", "a/b", "x?y", "n%2F"} {
		assert.Error(t, c.UpdateNodeResource(context.Background(), bad, NodeResource{}), bad)
	}
	assert.Error(t, c.UpdateNodeResource(context.Background(), "n:1", NodeResource{MemoryMB: -1}))
	assert.EqualValues(t, 1, s.hits.Load(), "invalid input sends nothing")
}

func TestRMApp(t *testing.T) {
	const doc = `{"app":{"id":"application_1700000000000_0042","user":"alice","name":"pi","queue":"root.batch",
	"state":"RUNNING","finalStatus":"UNDEFINED","applicationType":"SPARK","applicationTags":"a, b,,c",
	"priority":"3","amContainerLogs":"http://nm:8042/node/containerlogs/container_e17_1700000000000_0042_01_000001/alice",
	"amHostHttpAddress":"nm:8042","startedTime":1700000000123,"allocatedMB":2048,"allocatedVCores":2,"runningContainers":"2"}}`
	s := newRMServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ws/v1/cluster/apps/application_1700000000000_0042" {
			http.Error(w, `{"RemoteException":{}}`, http.StatusNotFound)
			return
		}
		active(doc)(w, r)
	})
	c, err := NewRMClient(RMOptions{Endpoints: []string{s.URL}})
	require.NoError(t, err)
	app, err := c.App(context.Background(), "application_1700000000000_0042")
	require.NoError(t, err)
	assert.Equal(t, "root.batch", app.Queue)
	assert.Equal(t, []string{"a", "b", "c"}, app.ApplicationTags)
	assert.EqualValues(t, 3, app.Priority)
	assert.EqualValues(t, 2, app.RunningContainers)
	assert.EqualValues(t, 1700000000123, app.StartedTime)
	am, ok := app.AMContainerID()
	require.True(t, ok)
	assert.Equal(t, "container_e17_1700000000000_0042_01_000001", am.String())

	_, err = c.App(context.Background(), "application_1700000000000_0043")
	var httpErr *RMHTTPError
	require.ErrorAs(t, err, &httpErr)
	assert.Equal(t, http.StatusNotFound, httpErr.StatusCode)

	hits := s.hits.Load()
	for _, bad := range []string{"", "application_1", "application_1_2/../x", "container_1_2_3_4", "application_a_1"} {
		_, err := c.App(context.Background(), bad)
		assert.Error(t, err, bad)
	}
	assert.Equal(t, hits, s.hits.Load())

	for _, body := range []string{`<html>`, `{}`, `{"app":null}`, `{"app":{"id":""}}`, `[1]`} {
		_, err := DecodeRMApp([]byte(body))
		assert.Error(t, err, body)
	}
}

func TestDecodeNodeInfo(t *testing.T) {
	cases := []struct {
		body, want string
		ok         bool
	}{
		{`{"nodeInfo":{"id":"host-1:45454","nodeHostName":"host-1"}}`, "host-1:45454", true},
		{`{"nodeInfo":{"nodeId":"host-2:8041"}}`, "host-2:8041", true},
		{`{"nodeInfo":{}}`, "", false},
		{`{"nodeInfo":{"id":"a/b:1"}}`, "", false},
		{`{}`, "", false},
		{`garbage`, "", false},
	}
	for _, tc := range cases {
		got, err := DecodeNodeInfo([]byte(tc.body))
		if !tc.ok {
			assert.Error(t, err, tc.body)
			continue
		}
		require.NoError(t, err, tc.body)
		assert.Equal(t, tc.want, got.NodeID)
	}
}
