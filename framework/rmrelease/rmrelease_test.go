package rmrelease

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWindow(t *testing.T) {
	var w Window
	now := time.Unix(1700000000, 0)
	_, ok := w.Pending(now)
	assert.False(t, ok, "nothing asked")
	was, _ := w.End(now)
	assert.False(t, was)

	w.Start(Ask{At: now, Timeout: 10 * time.Second, MemoryMB: 1024})
	a, ok := w.Pending(now.Add(10 * time.Second))
	assert.True(t, ok, "pending until the timeout and the grace")
	assert.Equal(t, int64(1024), a.MemoryMB)
	_, ok = w.Pending(now.Add(10*time.Second + DefaultGrace + time.Millisecond))
	assert.False(t, ok, "past the deadline the evictor acts on its own")
	assert.NotNil(t, w.Status().Pending, "still shown until the over-commit ends")

	was, inTime := w.End(now.Add(time.Minute))
	assert.True(t, was)
	assert.False(t, inTime)
	w.Start(Ask{At: now, Timeout: time.Second})
	was, inTime = w.End(now.Add(2 * time.Second))
	assert.True(t, was)
	assert.True(t, inTime)
	assert.Equal(t, Status{Released: 1, Expired: 1}, w.Status())

	var nilWindow *Window
	_, ok = nilWindow.Pending(now)
	assert.False(t, ok, "no window: nothing pending")
}

func TestUsageAsk(t *testing.T) {
	var w Window
	_, ok := w.UsageAsk()
	assert.False(t, ok)
	w.AskUsage(6000)
	w.AskUsage(7000) // a smaller release later in the episode: the lower cap stays
	c, ok := w.UsageAsk()
	assert.True(t, ok)
	assert.Equal(t, int64(6000), c)
	w.AskUsage(5000)
	c, _ = w.UsageAsk()
	assert.Equal(t, int64(5000), c)
	require.NotNil(t, w.Status().UsageCapMB)
	w.EndUsage()
	_, ok = w.UsageAsk()
	assert.False(t, ok)
	assert.Nil(t, w.Status().UsageCapMB)
}
