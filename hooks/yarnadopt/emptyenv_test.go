package yarnadopt

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestEmptyForGood(t *testing.T) {
	now := time.Unix(1000, 0)
	a := New(Options{Now: func() time.Time { return now }})
	k, other := procKey{pid: 10, start: 5, env: 0x7ffc}, procKey{pid: 10, start: 5, env: 0x7ffd}
	assert.False(t, a.emptyForGood(k), "the first empty read may be an exec in progress")
	now = now.Add(emptySettle / 2)
	assert.False(t, a.emptyForGood(k), "still within an exec's window")
	assert.False(t, a.emptyForGood(other), "another exec of the same process starts over")
	now = now.Add(emptySettle)
	assert.True(t, a.emptyForGood(k), "empty a settle later: started with none")
	assert.True(t, a.emptyForGood(k), "and stays answered")
	a.forgetExited(nil)
	assert.Empty(t, a.empties, "exited processes are forgotten")
}
