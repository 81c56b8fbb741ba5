package yarnadopt

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseStat(t *testing.T) {
	// A command with spaces and parentheses; fields 48/49 are the
	// environment's addresses.
	rest := make([]string, 0, 50)
	for i := 3; i <= 52; i++ {
		rest = append(rest, map[int]string{3: "S", 4: "41", 22: "123456", 48: "140737488347000", 49: "140737488347010", 50: "140737488347010", 51: "140737488347010"}[i])
		if rest[len(rest)-1] == "" {
			rest[len(rest)-1] = "0"
		}
	}
	st, err := parseStat([]byte("4242 (a b) (c)) " + strings.Join(rest, " ") + "\n"))
	require.NoError(t, err)
	assert.Equal(t, procStat{PPid: 41, Start: 123456, EnvStart: 140737488347000, ArgEnd: 140737488347010,
		EnvBegin: 140737488347010, EnvEnd: 140737488347010}, st)
	assert.True(t, st.emptyLaidOut(), "an environment that begins where the arguments end and ends where it begins")
	for _, mid := range []procStat{{}, {EnvStart: 1, ArgEnd: 1}, {EnvStart: 1, ArgEnd: 9, EnvBegin: 9, EnvEnd: 20}} {
		assert.False(t, mid.emptyLaidOut(), "%+v: mid-exec or not empty", mid)
	}
	_, err = parseStat([]byte("4242 (x S 1 2"))
	assert.Error(t, err)
	_, err = parseStat([]byte("no command"))
	assert.Error(t, err)

	self, err := readStat("/proc", os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, os.Getppid(), self.PPid)
	assert.NotZero(t, self.EnvStart)
	assert.Less(t, self.EnvBegin, self.EnvEnd, "this process has an environment")
	assert.False(t, self.emptyLaidOut())
}
