package cgroups

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCgroupFileHas(t *testing.T) {
	v1 := "12:pids:/kubepods/besteffort/nm\n4:cpu,cpuacct:/kubepods/besteffort/hadoop-yarn/container_x\n3:memory:/kubepods/besteffort/nm\n0::/\n"
	v2 := "0::/kubepods.slice/hadoop-yarn/container_x\n"
	for _, tc := range []struct {
		name    string
		content string
		ctrl    Controller
		dir     string
		v2      bool
		want    bool
	}{
		{"co-mounted cpu", v1, CPU, "kubepods/besteffort/hadoop-yarn/container_x", false, true},
		{"co-mounted cpuacct", v1, CPUAcct, "kubepods/besteffort/hadoop-yarn/container_x", false, true},
		{"memory elsewhere", v1, Memory, "kubepods/besteffort/hadoop-yarn/container_x", false, false},
		{"v1 file read as v2", v1, CPU, "kubepods/besteffort/hadoop-yarn/container_x", true, false},
		{"v2", v2, CPU, "kubepods.slice/hadoop-yarn/container_x", true, true},
		{"v2 other", v2, CPU, "kubepods.slice/hadoop-yarn/container_y", true, false},
		{"garbage", "nonsense\n::\n", CPU, "x", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, cgroupFileHas(tc.content, tc.ctrl, tc.dir, tc.v2, nil))
		})
	}
}
