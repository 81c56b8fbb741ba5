package colocation

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWorkMovesThroughMemory(t *testing.T) {
	w := newWork(1) // 16 windows
	for i := 0; i < 16; i++ {
		w.do(2)
	}
	// Every window was written (the first bytes of each: one per pass).
	for win := 0; win < 16; win++ {
		touched := w.buf[win*workWindow] != 0 || w.buf[win*workWindow+1] != 0
		assert.True(t, touched, "window %d", win)
	}
	assert.Equal(t, uint64(16), w.next.Load())
}

func TestCalibratePasses(t *testing.T) {
	passes, err := CalibratePasses(time.Millisecond)
	require.NoError(t, err)
	assert.Greater(t, passes, 10)
}
