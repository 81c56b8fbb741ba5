package yarnqos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	mockstatesinformer "github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer/mockstatesinformer"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// TestRealKernelCPUIdle: on this kernel (cgroup v1, cpu.idle since 5.15) a
// real YARN container cgroup with a real process gets cpu.idle=1 when the BE
// class asks for sched-idle, nothing is rewritten on an unchanged
// reconcile, and it is reset when the BE class turns CPU QoS off.
func TestRealKernelCPUIdle(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "cpu")
	gates(t, string(features.YARNCPUQoS))
	oldConf, oldFmt := *system.Conf, system.CgroupPathFormatter
	t.Cleanup(func() { *system.Conf, system.CgroupPathFormatter = oldConf, oldFmt })
	system.Conf.CgroupRootDir = kerneltest.CgroupRoot + "/"
	system.Conf.ProcRootDir = "/proc/"

	top := kerneltest.UniqueRoot(t)
	name := "container_e17_1700000000000_0042_01_000002"
	rel := top + "/hadoop-yarn/" + name
	dir := kerneltest.MakeCgroup(t, "cpu", rel)
	if _, err := os.Stat(filepath.Join(dir, "cpu.idle")); err != nil {
		kerneltest.Skip(t, "real-kernel test: this kernel has no cpu.idle (needs Linux ≥ 5.15)")
	}
	p := kerneltest.Start(t, "exec sleep 3600", dir)
	require.NoError(t, p.Release())
	// koordlet checks kernel support in its kubepods cgroup; the test's
	// top cgroup stands for it so the host's kubepods is never touched.
	fmtCopy := system.CgroupPathFormatter
	fmtCopy.ParentDir = top
	system.CgroupPathFormatter = fmtCopy

	id, _ := yarn.ParseContainerID(name)
	own := cgroups.Ref{Dir: rel, Owned: true}
	st := store.New()
	st.Resync(store.Observation{ScanOK: true, Scan: []cgroups.Container{{Name: name, ID: id, Pids: []int{p.Pid()}, Cgroups: cgroups.Cgroups{cgroups.CPU: own}}}}, time.Now())
	c, _ := st.Get(name)

	spec := beSpec(slov1alpha1.CPUQOSPolicyCoreSched)
	ctrl := gomock.NewController(t)
	si := mockstatesinformer.NewMockStatesInformer(ctrl)
	si.EXPECT().GetNodeSLO().DoAndReturn(func() *slov1alpha1.NodeSLO { return &slov1alpha1.NodeSLO{Spec: *spec} }).AnyTimes()
	si.EXPECT().GetNode().Return(&corev1.Node{}).AnyTimes()
	a := New(Options{Store: st, StatesInformer: func() statesinformer.StatesInformer { return si }, Interval: time.Hour})
	stop := make(chan struct{})
	defer close(stop)
	a.executor.Run(stop)

	read := func() string {
		b, err := os.ReadFile(filepath.Join(dir, "cpu.idle"))
		require.NoError(t, err)
		return strings.TrimSpace(string(b))
	}
	assert.Greater(t, a.Apply(c), 0)
	assert.Equal(t, "1", read(), "the YARN container runs sched-idle")
	assert.Equal(t, 0, a.ReconcileAll(), "an unchanged reconcile writes nothing")

	spec.ResourceQOSStrategy.BEClass.CPUQOS.Enable = ptr.To(false)
	assert.Greater(t, a.ReconcileAll(), 0)
	assert.Equal(t, "0", read(), "reset when the BE class turns CPU QoS off")
}
