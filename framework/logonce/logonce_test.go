package logonce

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSet(t *testing.T) {
	var s Set
	assert.True(t, s.First("a"))
	assert.False(t, s.First("a"))
	assert.True(t, s.First("b"))
	calls := 0
	s.Do("a", func() { calls++ })
	s.Do("c", func() { calls++ })
	s.Do("c", func() { calls++ })
	assert.Equal(t, 1, calls)
	assert.True(t, s.Forget("a"), "a was held")
	assert.False(t, s.Forget("a"), "forgotten already")
	assert.False(t, s.Forget("never"), "never said")
	assert.True(t, s.First("a"), "forgotten: said again")
	assert.Equal(t, 3, s.Len())
}

func TestSetConcurrent(t *testing.T) {
	var s Set
	var wg sync.WaitGroup
	firsts := make(chan bool, 64)
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); firsts <- s.First("k") }()
	}
	wg.Wait()
	close(firsts)
	n := 0
	for f := range firsts {
		if f {
			n++
		}
	}
	assert.Equal(t, 1, n)
}
