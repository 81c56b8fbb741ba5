package yarnadopt

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAssign(t *testing.T) {
	const (
		c2   = "container_1700000000000_0001_01_000002"
		c3   = "container_1700000000000_0001_01_000003"
		gone = "container_1700000000000_0001_01_000009"
	)
	listed := func(id string) bool { return id == c2 || id == c3 }
	for _, tc := range []struct {
		name  string
		procs []Proc
		want  map[int]string
	}{
		{"the NodeManager and its helpers stay", []Proc{{Pid: 10, PPid: 1}, {Pid: 11, PPid: 10}}, map[int]string{}},
		{"a launch script and its children", []Proc{{Pid: 10, PPid: 1}, {Pid: 20, PPid: 10, EnvID: c2}, {Pid: 21, PPid: 20, EnvID: c2}, {Pid: 22, PPid: 21}},
			map[int]string{20: c2, 21: c2, 22: c2}},
		{"two containers side by side", []Proc{{Pid: 10, PPid: 1}, {Pid: 20, PPid: 10, EnvID: c2}, {Pid: 30, PPid: 10, EnvID: c3}, {Pid: 31, PPid: 30}},
			map[int]string{20: c2, 30: c3, 31: c3}},
		{"a child naming another container keeps its own", []Proc{{Pid: 20, PPid: 10, EnvID: c2}, {Pid: 21, PPid: 20, EnvID: c3}},
			map[int]string{20: c2, 21: c3}},
		{"a container the NM does not list, and its children: none", []Proc{{Pid: 20, PPid: 10, EnvID: gone}, {Pid: 21, PPid: 20}}, map[int]string{}},
		{"an orphan reparented outside the pod: only its own environment", []Proc{{Pid: 22, PPid: 1}}, map[int]string{}},
		{"a cycle ends", []Proc{{Pid: 5, PPid: 6}, {Pid: 6, PPid: 5}}, map[int]string{}},
		{"a process that is its own parent", []Proc{{Pid: 5, PPid: 5}}, map[int]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			procs := map[int]Proc{}
			for _, p := range tc.procs {
				procs[p.Pid] = p
			}
			assert.Equal(t, tc.want, Assign(procs, listed))
		})
	}
}
