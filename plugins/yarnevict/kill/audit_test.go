package kill

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAuditRingAndRotation: the ring keeps the last keep records; the file
// is rotated at its size bound (lumberjack, 1 MiB here) and keeps one old
// file, the new one's mode is the first one's; a missing directory is not
// made (memory only).
func TestAuditRingAndRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.jsonl")
	a := NewAudit(func() string { return path }, 3, 1)
	why := strings.Repeat("w", 64<<10)
	// 50 records of 64 KiB: 3.2 MiB, rotated three times.
	const n = 50
	for i := 0; i < n; i++ {
		a.Record(AuditRecord{Container: fmt.Sprint(i), Reason: "r", Outcome: "succeeded", Why: why})
	}
	rs, total := a.Recent()
	assert.Equal(t, n, total)
	require.Len(t, rs, 3)
	assert.Equal(t, []string{"47", "48", "49"}, []string{rs[0].Container, rs[1].Container, rs[2].Container})

	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.LessOrEqual(t, st.Size(), int64(1<<20), "rotated at the size bound")
	assert.Equal(t, os.FileMode(0o644), st.Mode().Perm())
	backups := func() []string {
		m, err := filepath.Glob(filepath.Join(dir, "a-*.jsonl"))
		require.NoError(t, err)
		return m
	}
	// lumberjack removes the older backups in a goroutine of its own.
	require.Eventually(t, func() bool { return len(backups()) == 1 }, 5*time.Second, 10*time.Millisecond, "one old file kept: %v", backups())
	containers := func(path string) []string {
		f, err := os.Open(path)
		require.NoError(t, err)
		defer f.Close()
		var out []string
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r AuditRecord
			require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
			out = append(out, r.Container)
		}
		require.NoError(t, sc.Err())
		return out
	}
	old, cur := containers(backups()[0]), containers(path)
	require.NotEmpty(t, old)
	require.NotEmpty(t, cur)
	assert.Equal(t, fmt.Sprint(n-1), cur[len(cur)-1], "the newest record is the current file's last line")
	assert.Equal(t, cur[0], fmt.Sprint(atoi(t, old[len(old)-1])+1), "the old file ends where the current one begins")

	missing := NewAudit(func() string { return filepath.Join(t.TempDir(), "no-such-dir", "a.jsonl") }, 0, 0)
	missing.Record(AuditRecord{Container: "x"})
	rs, _ = missing.Recent()
	assert.Len(t, rs, 1, "memory only when the file cannot be written")
	assert.NoDirExists(t, filepath.Dir(missing.Path()), "the directory is not made")
	var nilAudit *Audit
	nilAudit.Record(AuditRecord{})
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}
