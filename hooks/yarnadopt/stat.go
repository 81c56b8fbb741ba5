package yarnadopt

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// procStat is what the adopter reads of /proc/<pid>/stat.
type procStat struct {
	PPid int
	// Start is the start time in clock ticks since boot: with the pid it
	// names one process.
	Start int64
	// EnvStart is the address of the arguments (field 48, arg_start): a
	// new one at every exec, so that an environment read before an exec is
	// never taken for the one after it. The kernel sets it before the
	// environment's end, so an environment read mid-exec is empty
	// (cgroups.ErrEnvironEmpty) and is not kept.
	EnvStart uint64
	// ArgEnd, EnvBegin and EnvEnd are fields 49–51 (arg_end, env_start,
	// env_end; 0 where the kernel gives fewer fields). While an exec sets
	// up the new image they are 0, then arg_end and env_start point past
	// the arguments; env_end last.
	ArgEnd, EnvBegin, EnvEnd uint64
}

// emptyLaidOut reports whether the stat shows an exec past its setup with
// no environment: the environment begins where the arguments end and ends
// where it begins. Only the kernel's few instructions between its last
// two stores look the same mid-exec.
func (s procStat) emptyLaidOut() bool {
	return s.EnvBegin != 0 && s.ArgEnd == s.EnvBegin && s.EnvEnd == s.EnvBegin
}

// readStat reads and parses procRoot/<pid>/stat.
func readStat(procRoot string, pid int) (procStat, error) {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, err
	}
	return parseStat(b)
}

// parseStat parses a /proc/<pid>/stat content; the command (field 2) may
// hold spaces and parentheses, so fields are counted after its last ')'.
func parseStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("stat without a command: %q", b)
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state): field n is f[n-3].
	if len(f) < 46 {
		return procStat{}, fmt.Errorf("stat with %d fields after the command, want at least 46", len(f))
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	start, err2 := strconv.ParseInt(string(f[19]), 10, 64)
	env, err3 := strconv.ParseUint(string(f[45]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return procStat{}, fmt.Errorf("stat fields not numbers: %q", b)
	}
	st := procStat{PPid: ppid, Start: start, EnvStart: env}
	if len(f) >= 49 {
		st.ArgEnd, _ = strconv.ParseUint(string(f[46]), 10, 64)
		st.EnvBegin, _ = strconv.ParseUint(string(f[47]), 10, 64)
		st.EnvEnd, _ = strconv.ParseUint(string(f[48]), 10, 64)
	}
	return st, nil
}
