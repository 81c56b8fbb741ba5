package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
	"github.com/koordlet-yarn/koordlet-yarn/test/soak"
)

// TestSoak is the short churn soak (make soak runs the long one): with
// every YARN gate on, 300 YARN containers with real processes come and go
// over about 40 s, at most 50 alive; koordlet's fds, goroutines and heap
// stay flat and the store equals the container cgroups at the end.
func TestSoak(t *testing.T) {
	port, err := soak.FreePort()
	require.NoError(t, err)
	t.Setenv("GODEBUG", soak.Godebug())
	b := startBox(t, nodebox.Options{KoordletArgs: soak.KoordletArgs(port), NodeSLO: soak.NodeSLO()})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := soak.Run(ctx, b, soak.Config{Containers: 300, Duration: 40 * time.Second, Concurrency: 50, PprofPort: port})
	require.NoError(t, err)
	var out strings.Builder
	rep.Print(&out)
	t.Logf("soak:\n%s", out.String())
	for _, c := range rep.Checks {
		assert.True(t, c.OK, "%s: %s", c.Name, c.Note)
	}
}
