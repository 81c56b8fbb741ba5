package yarninterference

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"
)

// TestLSLoad: the LS pods' use is kubepods' less besteffort's and less a
// YARN root's outside besteffort but below kubepods, per second, in share
// of capacity × the NodeSLO's threshold; unknown on the first sample, an
// unreadable cgroup, a counter that went back (a pod gone) or no base.
func TestLSLoad(t *testing.T) {
	nm := kubeDir + "/kubepods-burstable.slice/nm-pod"
	for _, tt := range []struct {
		name, dir string
		// per second, in cores: kubepods (all), besteffort, the YARN root
		kube, be, root float64
		base           int64
		want           float64
	}{
		{"the root below besteffort", yarnRoot, 3, 1, 0.5, 80, (3 - 1) / 4.0 / 0.8},
		{"the root below kubepods, outside besteffort", nm, 3, 1, 0.5, 80, (3 - 1 - 0.5) / 4.0 / 0.8},
		{"the root outside kubepods", "hadoop-yarn", 3, 1, 0.5, 80, (3 - 1) / 4.0 / 0.8},
		{"no base", yarnRoot, 3, 1, 0, 0, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := newFakeNode(t, "-1")
			write := func(dir string, ns int64) {
				n.helper.WriteCgroupFileContents(dir, system.CPUAcctUsage, strconv.FormatInt(ns, 10))
			}
			for _, dir := range []string{nm, "hadoop-yarn"} {
				write(dir, 0)
			}
			write(kubeDir, 0)
			write(beDir, 0)
			assert.Equal(t, -1.0, n.c.lsLoad(tt.dir, 4000, tt.base), "the first sample")
			n.clock = n.clock.Add(time.Second)
			write(kubeDir, int64(tt.kube*1e9))
			write(beDir, int64(tt.be*1e9))
			write(tt.dir, int64(tt.root*1e9))
			assert.InDelta(t, tt.want, n.c.lsLoad(tt.dir, 4000, tt.base), 1e-9)
		})
	}
	n := newFakeNode(t, "-1")
	n.helper.WriteCgroupFileContents(kubeDir, system.CPUAcctUsage, "5000000000")
	n.c.lsLoad(yarnRoot, 4000, 80)
	n.clock = n.clock.Add(time.Second)
	n.helper.WriteCgroupFileContents(kubeDir, system.CPUAcctUsage, "1000000000")
	assert.Equal(t, -1.0, n.c.lsLoad(yarnRoot, 4000, 80), "a counter that went back")
	n.clock = n.clock.Add(time.Second)
	n.helper.WriteCgroupFileContents(kubeDir, system.CPUAcctUsage, "2000000000")
	assert.InDelta(t, 1/4.0/0.8, n.c.lsLoad(yarnRoot, 4000, 80), 1e-9, "and known again a step later")
}
