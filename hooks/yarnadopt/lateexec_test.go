package yarnadopt

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBlindMoveLaunchToCgroup(t *testing.T) {
	m := blindMove{container: "c", forkMono: 1_000}
	for _, tc := range []struct {
		name          string
		ktime, made   uint64
		want          time.Duration
		wantCountable bool
	}{
		{"an exec between its fork and the cgroup", 1_500, 4_000, 2_500, true},
		{"at its fork", 1_000, 4_000, 3_000, true},
		{"at the cgroup's making", 4_000, 4_000, 0, true},
		{"before its fork: another process had the pid", 999, 4_000, 0, false},
		{"after the cgroup was made: not its launch", 4_001, 4_000, 0, false},
		{"the cgroup's making not known (made by an earlier koordlet)", 1_500, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := m.launchToCgroup(tc.ktime, tc.made)
			assert.Equal(t, tc.wantCountable, ok)
			assert.Equal(t, tc.want, d)
		})
	}
}

// The fork time from /proc's start ticks is on the exec watch's clock and
// never after the fork: a process started now was forked between the
// readings taken around its start.
func TestForkMonoBracketsAStart(t *testing.T) {
	before, ok := monoNow()
	require.True(t, ok)
	p, err := os.StartProcess("/bin/sleep", []string{"sleep", "5"}, &os.ProcAttr{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Kill(); _, _ = p.Wait() })
	after, _ := monoNow()
	st, err := readStat("/proc", p.Pid)
	require.NoError(t, err)
	fork, ok := forkMono(st.Start)
	require.True(t, ok)
	tick := uint64(time.Second / userHZ)
	assert.LessOrEqual(t, fork, after, "never after the fork")
	assert.GreaterOrEqual(t, fork+3*tick, before, "within its resolution of the fork")
}

// quietWatch is an exec watch that reports nothing by itself: the test
// hands the adopter the events, in the order it wants.
type quietWatch struct {
	done chan struct{}
	once sync.Once
}

func newQuietWatch() *quietWatch              { return &quietWatch{done: make(chan struct{})} }
func (q *quietWatch) Watch(CgroupKey) error   { return nil }
func (q *quietWatch) Unwatch(CgroupKey) error { return nil }
func (q *quietWatch) Lost() (uint64, error)   { return 0, nil }
func (q *quietWatch) Close()                  { q.once.Do(func() { close(q.done) }) }
func (q *quietWatch) Read() (ExecEvent, error) {
	<-q.done
	return ExecEvent{}, os.ErrClosed
}
