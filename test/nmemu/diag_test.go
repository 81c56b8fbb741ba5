package nmemu

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestKilledDiagnostics: the emulator reports an outside kill as the real
// NodeManager does (TestRealYARN/pressure shows the real one's lines).
func TestKilledDiagnostics(t *testing.T) {
	at := time.Date(2026, 11, 25, 17, 46, 18, 670e6, time.UTC)
	d := killedDiagnostics(at, 143)
	assert.Equal(t, "[2026-11-25 17:46:18.670]Container killed on request. Exit code is 143\n"+
		"[2026-11-25 17:46:18.670]Container exited with a non-zero exit code 143. \n"+
		"[2026-11-25 17:46:18.670]Killed by external signal\n", d)
	assert.False(t, strings.Contains(killedDiagnostics(at, 134), "killed on request"), "SIGABRT is no kill on request")
}
