package rmemu

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

func start(t *testing.T) *Server {
	s, err := Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestStandbyThenActive(t *testing.T) {
	rm1, rm2 := start(t), start(t)
	c, err := yarn.NewRMClient(yarn.RMOptions{Endpoints: []string{rm1.URL, rm2.URL}, User: "yarn", Timeout: time.Second})
	require.NoError(t, err)
	ctx := context.Background()
	res := yarn.NodeResource{MemoryMB: 8192, VCores: 4}

	require.NoError(t, c.UpdateNodeResource(ctx, "n1:45454", res))
	rm1.SetMode(ModeStandby, rm2.URL) // fail-over: rm2 becomes active
	res2 := yarn.NodeResource{MemoryMB: 4096, VCores: 2}
	require.NoError(t, c.UpdateNodeResource(ctx, "n1:45454", res2))
	assert.Equal(t, rm2.URL, c.Active())

	calls1, calls2 := rm1.Calls(), rm2.Calls()
	require.Len(t, calls1, 2)
	assert.Equal(t, ModeActive, calls1[0].Mode)
	assert.Equal(t, res, calls1[0].Resource)
	assert.EqualValues(t, -1, calls1[0].OverCommitTimeout)
	assert.Equal(t, "yarn", calls1[0].User)
	assert.Equal(t, ModeStandby, calls1[1].Mode, "the standby saw the call and redirected")
	require.Len(t, calls2, 1)
	assert.Equal(t, res2, calls2[0].Resource)
	got, ok := rm2.Node("n1:45454")
	require.True(t, ok)
	assert.Equal(t, res2, got)

	// A standby that knows no active RM answers 200 with its page.
	rm2.SetMode(ModeStandby, "")
	err = c.UpdateNodeResource(ctx, "n1:45454", res)
	require.ErrorIs(t, err, yarn.ErrNoActiveRM)
	assert.ErrorIs(t, err, yarn.ErrStandbyRM)
}

func TestFaultModes(t *testing.T) {
	for _, m := range []Mode{ModeSlow, ModeGarbage, ModeError} {
		t.Run(string(m), func(t *testing.T) {
			rm := start(t)
			rm.SetMode(m, "")
			c, err := yarn.NewRMClient(yarn.RMOptions{Endpoints: []string{rm.URL}, Timeout: 200 * time.Millisecond})
			require.NoError(t, err)
			_, err = c.App(context.Background(), "application_1_0001")
			assert.Error(t, err)
		})
	}
}

func TestRequireUserAndApps(t *testing.T) {
	rm := start(t)
	rm.RequireUser(true)
	rm.AddApp(App{ID: "application_1700000000000_0007", User: "bob", Queue: "root.etl", ApplicationType: "MAPREDUCE",
		Tags: []string{"x", "y"}, Priority: 5, AMContainer: "container_1700000000000_0007_01_000001"})
	anon, err := yarn.NewRMClient(yarn.RMOptions{Endpoints: []string{rm.URL}})
	require.NoError(t, err)
	err = anon.UpdateNodeResource(context.Background(), "n:1", yarn.NodeResource{MemoryMB: 1, VCores: 1})
	var httpErr *yarn.RMHTTPError
	require.ErrorAs(t, err, &httpErr)
	assert.Equal(t, http.StatusForbidden, httpErr.StatusCode)
	_, ok := rm.Node("n:1")
	assert.False(t, ok)

	app, err := anon.App(context.Background(), "application_1700000000000_0007")
	require.NoError(t, err, "reads need no user")
	assert.Equal(t, "root.etl", app.Queue)
	assert.Equal(t, []string{"x", "y"}, app.ApplicationTags)
	assert.EqualValues(t, 5, app.Priority)
	am, ok := app.AMContainerID()
	require.True(t, ok)
	assert.Equal(t, "container_1700000000000_0007_01_000001", am.String())
	_, err = anon.App(context.Background(), "application_1700000000000_0008")
	require.ErrorAs(t, err, &httpErr)
	assert.Equal(t, http.StatusNotFound, httpErr.StatusCode)
}
