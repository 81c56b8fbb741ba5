package yarnadopt

import (
	"bufio"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAssign(t *testing.T) {
	const (
		c2   = "container_1700000000000_0001_01_000002"
		c3   = "container_1700000000000_0001_01_000003"
		c4   = "container_1700000000000_0001_01_000004"
		gone = "container_1700000000000_0001_01_000009"
	)
	// c2 and c4 are alice's, c3 bob's; the NodeManager runs as yarn.
	const yarnUID, alice, bob, nobody = 500, 1001, 1002, 65534
	users := map[string]int{"alice": alice, "bob": bob, "nobody": nobody}
	listed := map[string]string{c2: "alice", c3: "bob", c4: "alice"}
	claims := Claims{Listed: listed, UIDs: users}
	nm := Proc{Pid: 10, PPid: 1, UID: yarnUID}
	for _, tc := range []struct {
		name   string
		procs  []Proc
		claims *Claims
		want   map[int]string
	}{
		{"the NodeManager and its helpers stay", []Proc{nm, {Pid: 11, PPid: 10, UID: yarnUID}}, nil, map[int]string{}},
		{"a launch script and its children", []Proc{nm, {Pid: 20, PPid: 10, EnvID: c2, UID: alice}, {Pid: 21, PPid: 20, EnvID: c2, UID: alice}, {Pid: 22, PPid: 21, UID: alice}},
			nil, map[int]string{20: c2, 21: c2, 22: c2}},
		{"two containers side by side", []Proc{nm, {Pid: 20, PPid: 10, EnvID: c2, UID: alice}, {Pid: 30, PPid: 10, EnvID: c3, UID: bob}, {Pid: 31, PPid: 30, UID: bob}},
			nil, map[int]string{20: c2, 30: c3, 31: c3}},
		// The review's case: a child of c2 naming c3 would have put c3 in
		// charge of it (and evicted c3 for it). It descends from c2's
		// launch: c2's, and so is everything below it.
		{"a child naming another container goes with the container it descends from", []Proc{nm, {Pid: 20, PPid: 10, EnvID: c2, UID: alice}, {Pid: 21, PPid: 20, EnvID: c3, UID: alice}, {Pid: 22, PPid: 21, UID: alice}},
			nil, map[int]string{20: c2, 21: c2, 22: c2}},
		{"a child of a process already in c2's cgroup naming c3 is c2's", []Proc{{Pid: 21, PPid: 20, EnvID: c3, UID: alice, ParentIn: c2}},
			nil, map[int]string{21: c2}},
		{"below a parent in the cgroup of a finished container: none", []Proc{{Pid: 21, PPid: 20, EnvID: c3, UID: bob, ParentIn: gone}},
			nil, map[int]string{}},
		{"an orphan of alice's naming bob's container stays (LCE, secure)", []Proc{nm, {Pid: 40, PPid: 10, EnvID: c3, UID: alice}, {Pid: 41, PPid: 40, UID: alice}},
			nil, map[int]string{}},
		{"an orphan of alice's naming her other container is taken (one user: nothing tells them apart)", []Proc{nm, {Pid: 40, PPid: 10, EnvID: c4, UID: alice}},
			nil, map[int]string{40: c4}},
		{"an orphan outside the pod's tree naming bob's container stays", []Proc{{Pid: 40, PPid: 7, EnvID: c3, UID: alice}},
			nil, map[int]string{}},
		{"the DefaultContainerExecutor: everything runs as the NM's user", []Proc{nm, {Pid: 20, PPid: 10, EnvID: c2, UID: yarnUID}, {Pid: 30, PPid: 10, EnvID: c3, UID: yarnUID}},
			nil, map[int]string{20: c2, 30: c3}},
		{"a non-secure LCE: everything runs as nobody", []Proc{nm, {Pid: 20, PPid: 10, EnvID: c2, UID: nobody}, {Pid: 30, PPid: 10, EnvID: c3, UID: nobody}},
			nil, map[int]string{20: c2, 30: c3}},
		{"a user the NM pod cannot resolve is not checked", []Proc{nm, {Pid: 30, PPid: 10, EnvID: c3, UID: 4242}},
			&Claims{Listed: listed, UIDs: map[string]int{"alice": alice}}, map[int]string{30: c3}},
		{"below a process whose environment is not known yet: not decided", []Proc{nm, {Pid: 20, PPid: 10, Unread: true, UID: alice}, {Pid: 21, PPid: 20, EnvID: c2, UID: alice}},
			nil, map[int]string{}},
		{"a container the NM does not list, and its children: none", []Proc{{Pid: 20, PPid: 10, EnvID: gone, UID: -1}, {Pid: 21, PPid: 20, UID: -1}}, nil, map[int]string{}},
		{"below a claim that does not hold, a listed claim does not hold either", []Proc{nm, {Pid: 20, PPid: 10, EnvID: gone, UID: alice}, {Pid: 21, PPid: 20, EnvID: c2, UID: alice}}, nil, map[int]string{}},
		{"an orphan reparented outside the pod: only its own environment", []Proc{{Pid: 22, PPid: 1, UID: -1}}, nil, map[int]string{}},
		{"a cycle ends", []Proc{{Pid: 5, PPid: 6, UID: -1}, {Pid: 6, PPid: 5, UID: -1}}, nil, map[int]string{}},
		{"a process that is its own parent", []Proc{{Pid: 5, PPid: 5, UID: -1}}, nil, map[int]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			procs := map[int]Proc{}
			for _, p := range tc.procs {
				procs[p.Pid] = p
			}
			c := claims
			if tc.claims != nil {
				c = *tc.claims
			}
			assert.Equal(t, tc.want, Assign(procs, c))
		})
	}
}

func TestParsePasswd(t *testing.T) {
	got := parsePasswd(bufio.NewReader(strings.NewReader("root:x:0:0::/root:/bin/sh\n# c\nalice:x:1001:1001::/h:/bin/sh\n+ldap::::\nbad:x:no:\nalice:x:7:7::/:/\n")))
	assert.Equal(t, map[string]int{"root": 0, "alice": 1001}, got)
}
