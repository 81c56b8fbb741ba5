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
	"golang.org/x/sys/unix"
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

// TestRealKernelSchedIdle: on this kernel (cgroup v1, cpu.idle since 5.15)
// with a sched-idle BE class, a real YARN container's tasks (and a child
// forked later) run SCHED_IDLE while the YARN root is cpu.idle=1, and the
// cgroups whose cpu.shares another owner writes keep taking those writes:
// the besteffort QoS cgroup (the kubelet) and the container's own cgroup
// (the LinuxContainerExecutor). Old code made both idle and the kernel
// refused the writes with EINVAL. Turning CPU QoS off in the NodeSLO gives
// the tasks SCHED_OTHER back; so does a koordlet started with YARNCPUQoS
// off (RestoreDisabled). An ApplicationMaster's tasks are never idle.
func TestRealKernelSchedIdle(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "cpu")
	gates(t, string(features.YARNCPUQoS))
	oldConf, oldFmt := *system.Conf, system.CgroupPathFormatter
	t.Cleanup(func() { *system.Conf, system.CgroupPathFormatter = oldConf, oldFmt })
	system.Conf.CgroupRootDir = kerneltest.CgroupRoot + "/"
	system.Conf.ProcRootDir = "/proc/"

	// The test's top cgroup stands for kubepods (the host's is never
	// touched): besteffort below it, the YARN root below that.
	top := kerneltest.UniqueRoot(t)
	fmtCopy := system.CgroupPathFormatter
	fmtCopy.ParentDir = top
	system.CgroupPathFormatter = fmtCopy
	be := top + "/besteffort"
	yarnRoot := be + "/hadoop-yarn"
	name := "container_e17_1700000000000_0042_01_000002"
	rel := yarnRoot + "/" + name
	dir := kerneltest.MakeCgroup(t, "cpu", rel)
	if _, err := os.Stat(filepath.Join(dir, "cpu.idle")); err != nil {
		kerneltest.Skip(t, "real-kernel test: this kernel has no cpu.idle (needs Linux ≥ 5.15)")
	}
	beDir := filepath.Dir(filepath.Dir(dir))
	p := kerneltest.Start(t, "sleep 3600 & exec sleep 3600", dir)
	require.NoError(t, p.Release())
	require.Eventually(t, func() bool { return len(kerneltest.Pids(dir)) == 2 }, 5*time.Second, 20*time.Millisecond)

	id, _ := yarn.ParseContainerID(name)
	own := cgroups.Ref{Dir: rel, Owned: true}
	st := store.New()
	st.Resync(store.Observation{ScanOK: true, Scan: []cgroups.Container{{Name: name, ID: id, Pids: kerneltest.Pids(dir), Cgroups: cgroups.Cgroups{cgroups.CPU: own}}}}, time.Now())
	c, _ := st.Get(name)

	spec := beSpec(slov1alpha1.CPUQOSPolicyCoreSched)
	ctrl := gomock.NewController(t)
	si := mockstatesinformer.NewMockStatesInformer(ctrl)
	si.EXPECT().GetNodeSLO().DoAndReturn(func() *slov1alpha1.NodeSLO { return &slov1alpha1.NodeSLO{Spec: *spec} }).AnyTimes()
	si.EXPECT().GetNode().Return(&corev1.Node{}).AnyTimes()
	a := New(Options{Store: st, StatesInformer: func() statesinformer.StatesInformer { return si },
		Hierarchy: func() string { return yarnRoot }, Interval: time.Hour})
	stop := make(chan struct{})
	defer close(stop)
	a.executor.Run(stop)

	read := func(d, f string) string {
		b, err := os.ReadFile(filepath.Join(d, f))
		require.NoError(t, err)
		return strings.TrimSpace(string(b))
	}
	policies := func() []uint32 {
		var out []uint32
		for _, pid := range kerneltest.Pids(dir) {
			attr, err := unix.SchedGetAttr(pid, 0)
			require.NoError(t, err)
			out = append(out, attr.Policy)
		}
		return out
	}
	assert.Greater(t, a.ReconcileAll(), 0)
	assert.Equal(t, "1", read(filepath.Dir(dir), "cpu.idle"), "the YARN root runs sched-idle")
	assert.Equal(t, "0", read(dir, "cpu.idle"), "the container's cgroup is not made idle")
	assert.Equal(t, "0", read(beDir, "cpu.idle"), "the besteffort QoS cgroup is not made idle")
	assert.Equal(t, []uint32{unix.SCHED_IDLE, unix.SCHED_IDLE}, policies(), "the container's tasks run SCHED_IDLE")
	// What the kubelet and the LCE write keeps working.
	require.NoError(t, os.WriteFile(filepath.Join(beDir, "cpu.shares"), []byte("2"), 0), "the kubelet's besteffort cpu.shares")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cpu.shares"), []byte("1024"), 0), "the LCE's container cpu.shares")
	assert.Equal(t, 0, a.ReconcileAll(), "an unchanged reconcile writes nothing")

	// A child forked later inherits the policy.
	child := kerneltest.Start(t, "exec sleep 3600", dir)
	require.NoError(t, child.Release())
	attr, err := unix.SchedGetAttr(child.Pid(), 0)
	require.NoError(t, err)
	assert.Equal(t, uint32(unix.SCHED_NORMAL), attr.Policy, "a process the LCE starts anew is normal until the next apply")
	assert.Equal(t, 1, a.Apply(c))
	assert.Equal(t, []uint32{unix.SCHED_IDLE, unix.SCHED_IDLE, unix.SCHED_IDLE}, policies())

	// The same container known as an ApplicationMaster (the NM's word or
	// its environment, after it was made idle): its tasks get SCHED_OTHER
	// back and stay so; known as an executor again, idle again.
	am := *c
	am.IsAM, am.AMSource = true, store.AMFromEnvironment
	assert.Equal(t, 3, a.Apply(&am), "an AM's tasks are given SCHED_OTHER back")
	assert.Equal(t, []uint32{unix.SCHED_NORMAL, unix.SCHED_NORMAL, unix.SCHED_NORMAL}, policies(), "an ApplicationMaster never runs SCHED_IDLE")
	assert.False(t, marked(dir))
	assert.Equal(t, 0, a.Apply(&am), "and stays so")
	assert.Equal(t, 3, a.Apply(c))
	assert.Equal(t, []uint32{unix.SCHED_IDLE, unix.SCHED_IDLE, unix.SCHED_IDLE}, policies())

	spec.ResourceQOSStrategy.BEClass.CPUQOS.Enable = ptr.To(false)
	assert.Greater(t, a.ReconcileAll(), 0)
	assert.Equal(t, []uint32{unix.SCHED_NORMAL, unix.SCHED_NORMAL, unix.SCHED_NORMAL}, policies(), "given back when the BE class turns CPU QoS off")
	assert.Equal(t, "0", read(filepath.Dir(dir), "cpu.idle"))
	assert.False(t, marked(dir), "the marker goes with the last idle task")

	// On again, then a koordlet started with the gate off gives them back.
	spec.ResourceQOSStrategy.BEClass.CPUQOS.Enable = ptr.To(true)
	assert.Greater(t, a.ReconcileAll(), 0)
	assert.Equal(t, []uint32{unix.SCHED_IDLE, unix.SCHED_IDLE, unix.SCHED_IDLE}, policies())
	gates(t) // YARNCPUQoS off
	off := New(Options{Store: store.New(), StatesInformer: func() statesinformer.StatesInformer { return si },
		Hierarchy: func() string { return yarnRoot }, Interval: time.Hour})
	assert.Equal(t, 4, off.RestoreDisabled(), "three tasks and the root's cpu.idle")
	assert.Equal(t, []uint32{unix.SCHED_NORMAL, unix.SCHED_NORMAL, unix.SCHED_NORMAL}, policies())
	assert.Equal(t, "0", read(filepath.Dir(dir), "cpu.idle"))
	assert.Equal(t, 0, off.RestoreDisabled(), "once")
}
