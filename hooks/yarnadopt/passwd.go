package yarnadopt

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
)

// maxPasswdBytes bounds the /etc/passwd read.
const maxPasswdBytes = 1 << 20

// passwdCache keeps the last /etc/passwd read, keyed by the file's
// identity and change time.
type passwdCache struct {
	path string
	key  [4]int64
	uids map[string]int
}

// podUsers returns the uid of each user name in the NodeManager pod's
// /etc/passwd, read through /proc/<pid>/root of its topmost process among
// procs (one that names no container); nil when none can be read (names
// are then not checked). Users only a name service knows (LDAP) are not
// in it: their claims are not checked by uid.
func (a *Adopter) podUsers(h cgroups.Hierarchy, procs map[int]Proc) map[string]int {
	top := 0
	for pid, p := range procs {
		if p.EnvID == "" && p.ParentIn == "" && !p.Unread && (top == 0 || pid < top) {
			top = pid
		}
	}
	if top == 0 {
		return nil
	}
	return a.users.read(filepath.Join(h.ProcRoot, strconv.Itoa(top), "root/etc/passwd"))
}

func (c *passwdCache) read(path string) map[string]int {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return nil
	}
	key := [4]int64{int64(st.Dev), int64(st.Ino), st.Size, st.Ctim.Nano()}
	if c.path == path && c.key == key {
		return c.uids
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	c.path, c.key, c.uids = path, key, parsePasswd(bufio.NewReader(io.LimitReader(f, maxPasswdBytes)))
	return c.uids
}

// parsePasswd reads name → uid from passwd lines (name:pw:uid:...).
func parsePasswd(r *bufio.Reader) map[string]int {
	out := map[string]int{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		f := bytes.SplitN(line, []byte(":"), 4)
		if len(f) < 4 {
			continue
		}
		uid, err := strconv.Atoi(string(f[2]))
		name := strings.TrimSpace(string(f[0]))
		if err != nil || name == "" || strings.HasPrefix(name, "+") || strings.HasPrefix(name, "-") {
			continue
		}
		if _, dup := out[name]; !dup {
			out[name] = uid
		}
	}
	return out
}
