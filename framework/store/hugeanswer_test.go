package store

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// TestResyncKeepsTheLastGoodNMViewOverHugeAnswers: the NM lists the node's
// two containers, then answers three polls with a 64 MiB body and three
// with 50,000 containers, then lists its two containers again. Each huge
// answer fails, and the store keeps the containers and the NM data of the
// last good answer throughout.
func TestResyncKeepsTheLastGoodNMViewOverHugeAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("serves 64 MiB bodies")
	}
	good := `{"containers":{"container":[` + nmEntry(1, "alice", 1) + "," + nmEntry(3, "alice", 2) + `]}}`
	answers := []func(w io.Writer){func(w io.Writer) { _, _ = io.WriteString(w, good) }}
	for i := 0; i < 3; i++ {
		answers = append(answers, func(w io.Writer) { // 64 MiB: the good list, then unknown entries' padding
			_, _ = io.WriteString(w, `{"containers":{"container":[`+nmEntry(1, "mallory", 64))
			pad := `,{"x":[` + strings.Repeat("1,", 1<<18) + `1]}`
			for n := 0; n < 64<<20; n += len(pad) {
				if _, err := io.WriteString(w, pad); err != nil {
					return
				}
			}
			_, _ = io.WriteString(w, `]}}`)
		})
	}
	for i := 0; i < 3; i++ {
		answers = append(answers, func(w io.Writer) { // 50,000 containers
			_, _ = io.WriteString(w, `{"containers":{"container":[`)
			for n := 0; n < 50000; n++ {
				sep := ","
				if n == 0 {
					sep = ""
				}
				if _, err := io.WriteString(w, sep+nmEntry(int64(n+1), "mallory", 64)); err != nil {
					return
				}
			}
			_, _ = io.WriteString(w, `]}}`)
		})
	}
	answers = append(answers, answers[0])

	var poll atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answers[poll.Load()](w)
	}))
	defer srv.Close()
	c, err := yarn.NewNMClient(srv.URL, time.Minute, 0)
	require.NoError(t, err)

	s := New()
	scan := []cgroups.Container{scanned(1, 10)}
	now := t0
	resync := func() error {
		list, err := c.ListContainers(context.Background())
		now = now.Add(10 * time.Second)
		s.Resync(Observation{Scan: scan, ScanOK: true, NM: list, NMOK: err == nil}, now)
		return err
	}
	check := func(when string) {
		t.Helper()
		require.Equal(t, 2, s.Len(), when)
		require.Equal(t, []string{cid(1).String(), cid(3).String()}, names(s.Snapshot()), when)
		for _, seq := range []int64{1, 3} {
			got, ok := s.GetByID(cid(seq))
			require.True(t, ok)
			assert.Equal(t, "alice", got.User, "%s: %s", when, got.Name)
			assert.Equal(t, seq/2*1000+1000, got.RequestMilliCPU, "%s: %s", when, got.Name)
			assert.NotZero(t, got.Source&SourceNM, "%s: %s", when, got.Name)
		}
	}
	require.NoError(t, resync())
	check("after the good answer")
	for poll.Store(1); int(poll.Load()) < len(answers)-1; poll.Add(1) {
		err := resync()
		assert.Error(t, err, "poll %d", poll.Load())
		t.Logf("poll %d: %v", poll.Load(), err)
		check(fmt.Sprintf("after huge answer %d", poll.Load()))
	}
	require.NoError(t, resync())
	check("after the good answer again")
}

// nmEntry is an NM entry of container seq, of user, with vcores.
func nmEntry(seq int64, user string, vcores int) string {
	return fmt.Sprintf(`{"id":%q,"state":"RUNNING","user":%q,"totalVCoresNeeded":%d,"totalMemoryNeededMB":%d,"executionType":"GUARANTEED"}`,
		cid(seq).String(), user, vcores, vcores*1024)
}
