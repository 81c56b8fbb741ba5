package kill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFlights(t *testing.T) {
	f := NewFlights(time.Minute)
	now := time.Unix(1000, 0)
	f.now = func() time.Time { return now }
	require.NoError(t, f.begin("a"))
	assert.ErrorIs(t, f.begin("a"), ErrInFlight)
	assert.True(t, f.Busy("a"))
	f.end("a", false)
	assert.False(t, f.Busy("a"), "a failed kill does not exclude the container")
	require.NoError(t, f.begin("a"))
	f.end("a", true)
	assert.ErrorIs(t, f.begin("a"), ErrAlreadyEvicted)
	now = now.Add(2 * time.Minute)
	assert.False(t, f.Busy("a"), "forgotten after the keep period")
	assert.True(t, f.Wait(0))

	// Wait blocks while a kill is in flight and returns when the last ends.
	require.NoError(t, f.begin("b"))
	require.NoError(t, f.begin("c"))
	assert.False(t, f.Wait(20*time.Millisecond), "two in flight")
	f.end("b", false)
	assert.False(t, f.Wait(20*time.Millisecond), "one in flight")
	go func() {
		time.Sleep(50 * time.Millisecond)
		f.end("c", true)
	}()
	start := time.Now()
	assert.True(t, f.Wait(5*time.Second), "the last kill ended")
	assert.Less(t, time.Since(start), 4*time.Second)
	assert.True(t, f.Wait(0))
	require.NoError(t, f.begin("d"))
	assert.False(t, f.Wait(0), "in flight again")
	f.end("d", false)
	var nilFlights *Flights
	assert.NoError(t, nilFlights.begin("x"))
	assert.False(t, nilFlights.Busy("x"))
}
