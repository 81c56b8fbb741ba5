package yarnqos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	mockstatesinformer "github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer/mockstatesinformer"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

func TestMain(m *testing.M) {
	kerneltest.RunHelperIfRequested()
	if err := features.Register(); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

func gates(t *testing.T, on ...string) {
	m := map[string]bool{string(features.YARNCPUQoS): false, string(features.YARNMemoryQoS): false, string(features.YARNResctrlQoS): false}
	for _, g := range on {
		m[g] = true
	}
	require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(m))
	t.Cleanup(func() {
		_ = koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{
			string(features.YARNCPUQoS): false, string(features.YARNMemoryQoS): false, string(features.YARNResctrlQoS): false})
	})
}

// beSpec is a NodeSLO spec whose BE class turns CPU, memory and resctrl QoS on.
func beSpec(policy slov1alpha1.CPUQOSPolicy) *slov1alpha1.NodeSLOSpec {
	return &slov1alpha1.NodeSLOSpec{ResourceQOSStrategy: &slov1alpha1.ResourceQOSStrategy{
		Policies: &slov1alpha1.ResourceQOSPolicies{CPUPolicy: &policy},
		BEClass: &slov1alpha1.ResourceQOS{
			CPUQOS: &slov1alpha1.CPUQOSCfg{Enable: ptr.To(true), CPUQOS: slov1alpha1.CPUQOS{GroupIdentity: ptr.To[int64](-1), SchedIdle: ptr.To[int64](1)}},
			MemoryQOS: &slov1alpha1.MemoryQOSCfg{Enable: ptr.To(true), MemoryQOS: slov1alpha1.MemoryQOS{
				MinLimitPercent: ptr.To[int64](0), LowLimitPercent: ptr.To[int64](0), ThrottlingPercent: ptr.To[int64](80),
				WmarkRatio: ptr.To[int64](95), WmarkScalePermill: ptr.To[int64](20), WmarkMinAdj: ptr.To[int64](50),
				PriorityEnable: ptr.To[int64](0), Priority: ptr.To[int64](0), OomKillGroup: ptr.To[int64](0)}},
			ResctrlQOS: &slov1alpha1.ResctrlQOSCfg{Enable: ptr.To(true)},
		}}}
}

func TestCPURuleOf(t *testing.T) {
	assert.Equal(t, CPURule{BVT: -1}, CPURuleOf(beSpec(slov1alpha1.CPUQOSPolicyGroupIdentity)))
	assert.Equal(t, CPURule{Idle: 1}, CPURuleOf(beSpec(slov1alpha1.CPUQOSPolicyCoreSched)))
	off := beSpec(slov1alpha1.CPUQOSPolicyCoreSched)
	off.ResourceQOSStrategy.BEClass.CPUQOS.Enable = ptr.To(false)
	assert.Equal(t, CPURule{}, CPURuleOf(off), "disabled: reset to none")
	assert.Equal(t, CPURule{}, CPURuleOf(nil))
}

func TestMemoryValuesOf(t *testing.T) {
	spec := beSpec(slov1alpha1.CPUQOSPolicyGroupIdentity)
	mq := &spec.ResourceQOSStrategy.BEClass.MemoryQOS.MemoryQOS
	mq.MinLimitPercent, mq.LowLimitPercent = ptr.To[int64](10), ptr.To[int64](20)
	const gi = int64(1) << 30
	v, ok := MemoryValuesOf(spec, 2*gi, 4*gi, 16*gi)
	require.True(t, ok)
	assert.Equal(t, 2*gi/10, *v.Min)
	assert.Equal(t, 2*gi/5, *v.Low)
	assert.Equal(t, (2*gi+2*gi*80/100)/system.PageSize*system.PageSize, *v.High, "request + (limit − request) × 80%")
	assert.Equal(t, int64(95), *v.WmarkRatio)

	v, _ = MemoryValuesOf(spec, 2*gi, -1, 16*gi)
	assert.Equal(t, (2*gi+14*gi*80/100)/system.PageSize*system.PageSize, *v.High, "no limit: node allocatable")
	mq.ThrottlingPercent = ptr.To[int64](0)
	v, _ = MemoryValuesOf(spec, 2*gi, 4*gi, 16*gi)
	assert.Equal(t, int64(1<<63-1), *v.High, "0: max")

	spec.ResourceQOSStrategy.BEClass.MemoryQOS.Enable = ptr.To(false)
	_, ok = MemoryValuesOf(spec, 2*gi, 4*gi, 16*gi)
	assert.False(t, ok)
}

// fakeNode sets up a fake root with one YARN container and a mock states
// informer returning spec.
func fakeNode(t *testing.T, v2 bool, spec *slov1alpha1.NodeSLOSpec) (*system.FileTestUtil, *store.Store, *Applier, *store.Container) {
	helper := system.NewFileTestUtil(t)
	t.Cleanup(helper.Cleanup)
	helper.SetCgroupsV2(v2)
	old := system.CgroupPathFormatter
	system.SetupCgroupPathFormatter(system.Cgroupfs)
	t.Cleanup(func() { system.CgroupPathFormatter = old })
	name := "container_e17_1700000000000_0042_01_000002"
	dir := "kubepods/besteffort/hadoop-yarn/" + name
	id, _ := yarn.ParseContainerID(name)
	own := cgroups.Ref{Dir: dir, Owned: true}
	st := store.New()
	st.Resync(store.Observation{ScanOK: true, Scan: []cgroups.Container{{Name: name, ID: id, Pids: []int{11, 12},
		Cgroups: cgroups.Cgroups{own, own, {Dir: "kubepods/besteffort/podnm/nm"}, own, {Dir: "kubepods/besteffort/podnm/nm"}}}},
		NMOK: true, NM: []yarn.NMContainer{{ID: id, State: "RUNNING", TotalMemoryNeededMB: 2048, TotalVCoresNeeded: 1}}}, time.Now())
	c, _ := st.Get(name)

	ctrl := gomock.NewController(t)
	si := mockstatesinformer.NewMockStatesInformer(ctrl)
	si.EXPECT().GetNodeSLO().Return(&slov1alpha1.NodeSLO{Spec: *spec}).AnyTimes()
	si.EXPECT().GetNode().Return(&corev1.Node{Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Gi")}}}).AnyTimes()
	a := New(Options{Store: st, StatesInformer: func() statesinformer.StatesInformer { return si }, Interval: time.Hour})
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	a.executor.Run(stop)
	return helper, st, a, c
}

func TestApplyBVTOnFakeRoot(t *testing.T) {
	gates(t, string(features.YARNCPUQoS))
	helper, _, a, c := fakeNode(t, false, beSpec(slov1alpha1.CPUQOSPolicyGroupIdentity))
	helper.WriteCgroupFileContents(c.Cgroups[cgroups.CPU].Dir, system.CPUBVTWarpNs, "0")
	helper.WriteCgroupFileContents("kubepods", system.CPUIdle, "0")
	helper.WriteCgroupFileContents(c.Cgroups[cgroups.CPU].Dir, system.CPUIdle, "0")
	helper.SetResourcesSupported(true, system.CPUBVTWarpNs, system.CPUIdle)
	assert.Equal(t, 1, a.Apply(c), "the first apply writes bvt; cpu.idle is never written to a container's cgroup (the LCE writes its cpu.shares)")
	assert.Equal(t, "-1", helper.ReadCgroupFileContents(c.Cgroups[cgroups.CPU].Dir, system.CPUBVTWarpNs))
	assert.Equal(t, "0", helper.ReadCgroupFileContents(c.Cgroups[cgroups.CPU].Dir, system.CPUIdle), "groupIdentity policy: no sched-idle")
	assert.Equal(t, 0, a.ReconcileAll(), "nothing changed: nothing written")
	// koordlet_yarn_qos_writes_total counts what changed, once.
	assert.Equal(t, float64(1), testutil.ToFloat64(a.writes.WithLabelValues(string(system.CPUBVTWarpNsName))))
	assert.Equal(t, float64(0), testutil.ToFloat64(a.writes.WithLabelValues(string(system.CPUIdleName))))
}

func TestApplyMemoryQoSOnFakeRoots(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("v2=%v", v2), func(t *testing.T) {
			gates(t, string(features.YARNMemoryQoS))
			helper, _, a, c := fakeNode(t, v2, beSpec(slov1alpha1.CPUQOSPolicyGroupIdentity))
			dir := c.Cgroups[cgroups.Memory].Dir
			files := []system.Resource{system.MemoryMin, system.MemoryLow, system.MemoryHigh}
			if v2 {
				files = []system.Resource{system.MemoryMinV2, system.MemoryLowV2, system.MemoryHighV2}
				helper.WriteCgroupFileContents(dir, system.MemoryLimitV2, "max")
			} else {
				// Anolis cgroup v1 files, present in kubepods and the container.
				files = append(files, system.MemoryWmarkRatio, system.MemoryWmarkScaleFactor, system.MemoryWmarkMinAdj,
					system.MemoryPriority, system.MemoryUsePriorityOom, system.MemoryOomGroup)
				helper.WriteCgroupFileContents(dir, system.MemoryLimit, "4294967296")
			}
			helper.SetResourcesSupported(true, files...) // before writing: an earlier test (or -count) may have marked them unsupported
			for _, f := range files {
				initial := "0"
				if f == system.MemoryWmarkScaleFactor {
					initial = "50" // valid range [1, 1000]
				}
				helper.WriteCgroupFileContents("kubepods", f, initial)
				helper.WriteCgroupFileContents(dir, f, initial)
			}
			written := a.Apply(c)
			assert.Greater(t, written, 0)
			high := helper.ReadCgroupFileContents(dir, files[2])
			if v2 {
				// No limit on v2 here: request + (allocatable − request) × 80%.
				assert.Equal(t, fmt.Sprint((int64(2<<30)+(int64(16<<30)-int64(2<<30))*80/100)/system.PageSize*system.PageSize), high)
			} else {
				assert.Equal(t, fmt.Sprint((int64(2<<30)+int64(2<<30)*80/100)/system.PageSize*system.PageSize), high)
				assert.Equal(t, "95", helper.ReadCgroupFileContents(dir, system.MemoryWmarkRatio))
				assert.Equal(t, "50", helper.ReadCgroupFileContents(dir, system.MemoryWmarkMinAdj))
			}
			assert.Equal(t, 0, a.ReconcileAll(), "nothing changed: nothing written")
		})
	}
}

func TestMemoryQoSUnsupportedSkipped(t *testing.T) {
	gates(t, string(features.YARNMemoryQoS))
	helper, _, a, c := fakeNode(t, false, beSpec(slov1alpha1.CPUQOSPolicyGroupIdentity))
	// A kernel without the memory QoS files (this one): nothing written, no
	// error, remembered (the container's memory cgroup exists: the check
	// was on a real directory).
	helper.WriteCgroupFileContents(c.Cgroups[cgroups.Memory].Dir, system.MemoryLimit, "4294967296")
	helper.SetResourcesSupported(false, system.MemoryMin, system.MemoryLow, system.MemoryHigh, system.MemoryWmarkRatio,
		system.MemoryWmarkScaleFactor, system.MemoryWmarkMinAdj, system.MemoryPriority, system.MemoryUsePriorityOom, system.MemoryOomGroup)
	assert.Equal(t, 0, a.Apply(c))
	assert.True(t, a.unsupported[string(system.MemoryMin.ResourceType())])
}

// TestSupportCheckOnAVanishedContainerIsNotRemembered: a container that
// exits as its QoS is applied must not turn a feature off for every other
// container: a check on a directory that is gone decides nothing.
func TestSupportCheckOnAVanishedContainerIsNotRemembered(t *testing.T) {
	gates(t, string(features.YARNCPUQoS))
	helper, _, a, _ := fakeNode(t, false, beSpec(slov1alpha1.CPUQOSPolicyGroupIdentity))
	helper.SetResourcesSupported(false, system.CPUBVTWarpNs) // as the kernel reports a missing file
	t.Cleanup(func() {
		if r, ok := system.CPUBVTWarpNs.(*system.CgroupResource); ok {
			r.Supported, r.SupportMsg = nil, "" // checked again by the next test
		}
	})
	assert.False(t, a.supported(system.CPUBVTWarpNs, "kubepods/besteffort/hadoop-yarn/container_gone", "Group Identity"))
	_, remembered := a.unsupported[string(system.CPUBVTWarpNs.ResourceType())]
	assert.False(t, remembered)
}

// livePid starts a process that lives until the test ends.
func livePid(t *testing.T) int {
	cmd := exec.Command("sleep", "3600")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

// fakeTask writes procRoot/<id>/stat and cgroup for a task in dir (cpu).
func fakeTask(t *testing.T, id int, startTicks int64, dir string) {
	p := filepath.Join(system.Conf.ProcRootDir, strconv.Itoa(id))
	require.NoError(t, os.MkdirAll(p, 0o755))
	stat := kerneltest.ProcStat(id, "java", 1, startTicks)
	require.NoError(t, os.WriteFile(filepath.Join(p, "stat"), []byte(stat), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(p, "cgroup"), []byte("4:cpu:/"+dir+"\n3:memory:/"+dir+"\n"), 0o644))
}

// TestMisplacedAfterReuse: a number whose task changed (another start time)
// between the check and the write, now outside the container, is reported
// for moving back; the same task, or one gone, is not.
func TestMisplacedAfterReuse(t *testing.T) {
	helper := system.NewFileTestUtil(t)
	t.Cleanup(helper.Cleanup)
	dir := "kubepods/besteffort/hadoop-yarn/container_e17_1700000000000_0042_01_000002"
	same, reused, gone := livePid(t), livePid(t), livePid(t)
	for _, id := range []int{same, reused, gone} {
		fakeTask(t, id, 500, dir)
	}
	h := cgroups.Hierarchy{ProcRoot: system.Conf.ProcRootDir}
	t.Cleanup(cgroups.SetPidfdOpen(nil))
	pinned := pinTasks(h, []int32{int32(same), int32(reused), int32(gone)}, cgroups.CPU, dir)
	require.Len(t, pinned, 3)
	// reused's task exits and its number is taken by a task elsewhere;
	// gone's task exits; same's task lives on. (Pinned by start time, as
	// on a kernel without pidfd_open, so that the fake /proc tells.)
	fakeTask(t, reused, 900, "kubepods/pod-ls/c1")
	require.NoError(t, os.RemoveAll(filepath.Join(system.Conf.ProcRootDir, strconv.Itoa(gone))))
	assert.Equal(t, []int32{int32(reused)}, misplaced(h, pinned, cgroups.CPU, dir))
}

func TestApplyResctrlOnFakeRoot(t *testing.T) {
	gates(t, string(features.YARNResctrlQoS))
	helper, _, a, c := fakeNode(t, false, beSpec(slov1alpha1.CPUQOSPolicyGroupIdentity))
	// No BE group yet: skipped with one log line.
	assert.Equal(t, 0, a.Apply(c))
	// Real live tasks (the pidfd pins them) whose fake /proc says: a and b
	// are the container's; the number of r, listed a moment ago, now names
	// a task of another cgroup (reused): never moved.
	a1, b1, r := livePid(t), livePid(t), livePid(t)
	for id, dir := range map[int]string{a1: c.Cgroups[cgroups.CPU].Dir, b1: c.Cgroups[cgroups.CPU].Dir, r: "kubepods/pod-ls/c1"} {
		fakeTask(t, id, 1000+int64(id), dir)
	}
	fk := newFakeResctrl(t, helper, map[string][]int32{"": {1, int32(a1), int32(b1), int32(r)}, BEResctrlGroup: {11}})
	a.resctrlWrite = fk.write
	delete(a.unsupported, "resctrl")
	helper.WriteCgroupFileContents(c.Cgroups[cgroups.CPU].Dir, system.CPUTasks, fmt.Sprintf("11\n%d\n%d\n%d\n", a1, b1, r))
	assert.Equal(t, 2, a.Apply(c), "the tasks not yet in the BE group join it")
	assert.Equal(t, []int32{11, int32(a1), int32(b1)}, fk.sorted(BEResctrlGroup))
	assert.NotContains(t, fk.written, int32(r), "a number that names another cgroup's task is never written")
	assert.Equal(t, 0, a.Apply(c), "tasks already in the group are not written again")
}

// TestMemoryQoSWaitsForRequest: a container reaches the store from the cgroup
// scan before the NM reports its request. Memory QoS must not write
// memory.min/low/high from a zero request; the NM update that brings the
// request (same processes) applies them, and a changed request re-applies.
func TestMemoryQoSWaitsForRequest(t *testing.T) {
	gates(t, string(features.YARNMemoryQoS))
	helper := system.NewFileTestUtil(t)
	t.Cleanup(helper.Cleanup)
	old := system.CgroupPathFormatter
	system.SetupCgroupPathFormatter(system.Cgroupfs)
	t.Cleanup(func() { system.CgroupPathFormatter = old })

	name := "container_e17_1700000000000_0042_01_000002"
	dir := "kubepods/besteffort/hadoop-yarn/" + name
	id, _ := yarn.ParseContainerID(name)
	const gi = int64(1) << 30
	helper.WriteCgroupFileContents(dir, system.MemoryLimit, fmt.Sprint(4*gi))
	files := []system.Resource{system.MemoryMin, system.MemoryLow, system.MemoryHigh, system.MemoryWmarkRatio}
	helper.SetResourcesSupported(true, files...) // before writing: an earlier test may have marked them unsupported
	for _, f := range files {
		helper.WriteCgroupFileContents("kubepods", f, "0")
		helper.WriteCgroupFileContents(dir, f, "0")
	}
	spec := beSpec(slov1alpha1.CPUQOSPolicyGroupIdentity)
	mq := &spec.ResourceQOSStrategy.BEClass.MemoryQOS.MemoryQOS
	mq.MinLimitPercent, mq.LowLimitPercent = ptr.To[int64](10), ptr.To[int64](20)

	ctrl := gomock.NewController(t)
	si := mockstatesinformer.NewMockStatesInformer(ctrl)
	si.EXPECT().GetNodeSLO().Return(&slov1alpha1.NodeSLO{Spec: *spec}).AnyTimes()
	si.EXPECT().GetNode().Return(&corev1.Node{Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Gi")}}}).AnyTimes()
	si.EXPECT().RegisterCallbacks(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes()
	st := store.New()
	applied := make(chan struct{}, 8)
	a := New(Options{Store: st, StatesInformer: func() statesinformer.StatesInformer { return si }, Interval: time.Hour,
		OnApplied: func(*store.Container, time.Time) { applied <- struct{}{} }})
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	a.Run(stop)
	// waitApplied waits for the apply that the latest store change caused
	// to finish (OnApplied runs after its last write).
	waitApplied := func(what string) {
		t.Helper()
		select {
		case <-applied:
		case <-time.After(5 * time.Second):
			require.FailNow(t, "not applied: "+what)
		}
	}

	own := cgroups.Ref{Dir: dir, Owned: true}
	scan := []cgroups.Container{{Name: name, ID: id, Pids: []int{11, 12}, Cgroups: cgroups.Cgroups{own, own, own, own, own}}}
	read := func(f system.Resource) string { return helper.ReadCgroupFileContents(dir, f) }
	high := func(request int64) string {
		return fmt.Sprint((request + (4*gi-request)*80/100) / system.PageSize * system.PageSize)
	}

	// Cgroup scan only: the request is not known.
	st.Resync(store.Observation{ScanOK: true, Scan: scan}, time.Now())
	waitApplied("arrival")
	assert.Equal(t, "95", read(system.MemoryWmarkRatio), "the request-independent files are applied on arrival")
	assert.Equal(t, "0", read(system.MemoryHigh), "memory.high is not computed from a zero request")
	assert.Equal(t, "0", read(system.MemoryMin))
	assert.Equal(t, "0", read(system.MemoryLow))

	// The NM reports the request; the processes are the same.
	nm := func(mb int64) []yarn.NMContainer {
		return []yarn.NMContainer{{ID: id, State: "RUNNING", TotalMemoryNeededMB: mb, TotalVCoresNeeded: 1}}
	}
	st.Resync(store.Observation{ScanOK: true, Scan: scan, NMOK: true, NM: nm(2048)}, time.Now())
	waitApplied("the NM update with the request")
	assert.Equal(t, high(2*gi), read(system.MemoryHigh), "from the 2Gi request")
	assert.Equal(t, fmt.Sprint(2*gi*10/100), read(system.MemoryMin))
	assert.Equal(t, fmt.Sprint(2*gi*20/100), read(system.MemoryLow))

	// The request changes (a container resize): re-applied.
	st.Resync(store.Observation{ScanOK: true, Scan: scan, NMOK: true, NM: nm(3072)}, time.Now())
	waitApplied("the NM update with the changed request")
	assert.Equal(t, high(3*gi), read(system.MemoryHigh), "from the 3Gi request")
	assert.Equal(t, fmt.Sprint(3*gi*10/100), read(system.MemoryMin))
}
