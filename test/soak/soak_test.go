package soak

import (
	"bytes"
	"math"
	"runtime/pprof"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseHeapOwnProfile(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, pprof.Lookup("heap").WriteTo(&buf, 1))
	h, err := parseHeap(&buf)
	require.NoError(t, err)
	assert.NotZero(t, h.live)
	assert.GreaterOrEqual(t, h.inuse, h.live)
	assert.Zero(t, h.tsdb, "this process has no TSDB")
}

func TestParseHeapTSDBShare(t *testing.T) {
	const profile = `heap profile: 3: 3072 [9: 9216] @ heap/1048576
1: 1024 [4: 4096] @ 0x1 0x2
#	0x1	github.com/prometheus/prometheus/tsdb.newMemSeries+0x10	/x/head.go:1
#	0x2	github.com/koordinator-sh/koordinator/pkg/koordlet/metriccache.(*tsdbAppender).Append+0x20	/x/a.go:2

2: 2048 [5: 5120] @ 0x3
#	0x3	github.com/koordlet-yarn/koordlet-yarn/framework/store.(*Store).Observe+0x30	/x/events.go:3


# runtime.MemStats
# Alloc = 100
# HeapAlloc = 4000000
# HeapInuse = 5000000
`
	h, err := parseHeap(strings.NewReader(profile))
	require.NoError(t, err)
	assert.Equal(t, uint64(4000000), h.live)
	assert.Equal(t, uint64(5000000), h.inuse)
	// One 1 KiB object sampled at a 512 KiB rate stands for about 512 KiB.
	want := 1024 / (1 - math.Exp(-1024.0/524288))
	assert.InDelta(t, want, float64(h.tsdb), 1)
}

func TestParseHeapIncomplete(t *testing.T) {
	_, err := parseHeap(strings.NewReader("heap profile: 0: 0 [0: 0] @ heap/1048576\n"))
	assert.Error(t, err)
}

func TestFeatureGatesHaveEveryYARNGate(t *testing.T) {
	g := FeatureGates()
	for _, want := range []string{"YARNContainerInformer=true", "YARNBEMemoryEvict=true", "YARNResctrlQoS=true",
		"BEMemoryEvict=true", "BECPUEvict=true", "BECPUSuppress=true"} {
		assert.Contains(t, g, want)
	}
	assert.NotContains(t, g, "=false")
}
