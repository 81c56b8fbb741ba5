package lswait

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSchedstat(t *testing.T) {
	st, err := ParseSchedstat([]byte("1000 2000 3\n"))
	require.NoError(t, err)
	assert.Equal(t, Schedstat{Run: 1000, Wait: 2000, Slices: 3}, st)
	for _, bad := range []string{"", "1 2", "1 2 x", "1 2 3 4", "-1 2 3"} {
		_, err := ParseSchedstat([]byte(bad))
		assert.Error(t, err, bad)
	}
}

func TestPSITotal(t *testing.T) {
	d, err := PSITotal([]byte("some avg10=0.00 avg60=0.00 avg300=0.00 total=12345\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=99\n"))
	require.NoError(t, err)
	assert.Equal(t, 12345*time.Microsecond, d)
	for _, bad := range []string{"", "full total=1", "some avg10=1 total=x"} {
		_, err := PSITotal([]byte(bad))
		assert.Error(t, err, bad)
	}
}

// TestSchedstatDelta: a fake proc root; waits count from a thread's second
// reading; a thread gone or a file malformed is skipped.
func TestSchedstatDelta(t *testing.T) {
	proc, cg := t.TempDir(), t.TempDir()
	write := func(tid int, s string) {
		require.NoError(t, os.MkdirAll(filepath.Join(proc, strconv.Itoa(tid)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(proc, strconv.Itoa(tid), "schedstat"), []byte(s), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(cg, "tasks"), []byte("10\n11\n12\nbad\n"), 0o644))
	write(10, "0 1000 10")
	write(11, "0 5000 5")
	write(12, "garbage")
	s := &schedstatSource{procRoot: proc, last: map[int]Schedstat{}}
	tids := readTids([]string{cg, filepath.Join(cg, "gone")}, false)
	assert.Equal(t, []int{10, 11, 12}, tids)
	next := map[int]Schedstat{}
	w, n := s.delta(tids, next)
	assert.Zero(t, w)
	assert.Zero(t, n)
	s.last = next
	write(10, "0 3000 12")
	write(11, "0 9000 9")
	next = map[int]Schedstat{}
	w, n = s.delta(tids, next)
	assert.Equal(t, time.Duration(6000), w)
	assert.Equal(t, uint64(6), n)
}

func fmtInt(i int64) string { return strconv.FormatInt(i, 10) }
