package yarninterference

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/resourceexecutor"
	koordletutil "github.com/koordinator-sh/koordinator/pkg/koordlet/util"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/lsslo"
	"github.com/koordlet-yarn/koordlet-yarn/collectors/lswait"
	"github.com/koordlet-yarn/koordlet-yarn/framework/config"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features/featurestest"
)

func TestMain(m *testing.M) {
	if err := features.Register(); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// The besteffort cgroup of koordlet's cgroup driver and the YARN root below it.
var (
	beDir    = koordletutil.GetPodQoSRelativePath(corev1.PodQOSBestEffort)
	kubeDir  = koordletutil.GetPodQoSRelativePath(corev1.PodQOSGuaranteed)
	yarnRoot = beDir + "/hadoop-yarn"
)

type fakeNode struct {
	helper *system.FileTestUtil
	c      *Controller
	sig    lswait.Signal
	ok     bool
	slo    *slov1alpha1.NodeSLO
	stop   chan struct{}
	clock  time.Time
	usage  int64 // besteffort cpuacct.usage, ns
	// ls is LS's usage in percent of the node: upstream's formula
	// (emulated by suppress) takes it off capacity × threshold.
	ls int64
	// idle: batch uses nothing (else its whole budget).
	idle bool
	// decl and declOK are the declared SLOs' signal (YARNLSSLOControl).
	decl   lsslo.Signal
	declOK bool
	// kube is the kubepods cgroup's cpuacct.usage (ns): LS and batch.
	kube int64
}

// newFakeNode: a 4-CPU node on a fake cgroup root, YARNBECPUSuppress on,
// the NodeSLO's cpuSuppressThresholdPercent 80, LS using 50% of the node;
// the YARN root below besteffort has quota yarnQuota.
func newFakeNode(t *testing.T, yarnQuota string) *fakeNode {
	helper := system.NewFileTestUtil(t)
	t.Cleanup(helper.Cleanup)
	helper.SetResourcesSupported(true, system.CPUCFSQuota, system.CPUCFSPeriod, system.CPUAcctUsage)
	for dir, q := range map[string]string{yarnRoot: yarnQuota, beDir: "-1"} {
		helper.WriteCgroupFileContents(dir, system.CPUCFSQuota, q)
		helper.WriteCgroupFileContents(dir, system.CPUCFSPeriod, "100000")
		helper.WriteCgroupFileContents(dir, system.CPUAcctUsage, "0")
	}
	helper.WriteCgroupFileContents(kubeDir, system.CPUAcctUsage, "0")
	featurestest.Set(t, map[string]bool{string(features.YARNBECPUSuppress): true, string(features.YARNInterferenceControl): true})
	n := &fakeNode{helper: helper, ok: true, stop: make(chan struct{}), ls: 50,
		slo: &slov1alpha1.NodeSLO{Spec: slov1alpha1.NodeSLOSpec{ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{
			Enable: ptr.To(true), CPUSuppressThresholdPercent: ptr.To[int64](80)}}}}
	t.Cleanup(func() { close(n.stop) })
	node := &corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}
	c, err := New(Options{Hierarchy: func() string { return yarnRoot },
		Signal:  func() (lswait.Signal, bool) { return n.sig, n.ok },
		SLO:     func() (lsslo.Signal, bool) { return n.decl, n.declOK },
		Node:    func() *corev1.Node { return node },
		NodeSLO: func() *slov1alpha1.NodeSLO { return n.slo },
		Config:  &config.Interference{Interval: time.Second, Target: time.Millisecond, MinPercent: 5, StepPercent: 2},
		Reader:  resourceexecutor.NewCgroupReader()})
	require.NoError(t, err)
	c.now = func() time.Time { return n.clock }
	n.clock = time.Unix(1e9, 0)
	n.c = c
	n.suppress()
	return n
}

// threshold is the threshold upstream's formula computes with now.
func (n *fakeNode) threshold() int64 {
	th, _ := n.thresholds()
	return th
}

// thresholds are the threshold and the minimum (percent of the node, 1
// for none) upstream's formula computes with now.
func (n *fakeNode) thresholds() (int64, int64) {
	r := n.slo.Spec.ResourceUsedThresholdWithBE
	th, lo := n.c.Threshold(*r.CPUSuppressThresholdPercent, r.CPUSuppressMinPercent)
	if lo == nil {
		return th, 1
	}
	return th, *lo
}

// suppress is upstream's suppress: besteffort's quota = capacity ×
// threshold − LS, at least cpuSuppressMinPercent of the node (1% without:
// about upstream's 2000 µs minimum on 4 CPUs).
func (n *fakeNode) suppress() {
	th, lo := n.thresholds()
	pct := max(th-n.ls, lo)
	n.helper.WriteCgroupFileContents(beDir, system.CPUCFSQuota, strconv.FormatInt(pct*4*100000/100, 10))
}

func (n *fakeNode) beQuota(t *testing.T) int64 {
	v, err := strconv.ParseInt(n.helper.ReadCgroupFileContents(beDir, system.CPUCFSQuota), 10, 64)
	require.NoError(t, err)
	return v
}

func (n *fakeNode) rootQuota(t *testing.T) string {
	return n.helper.ReadCgroupFileContents(yarnRoot, system.CPUCFSQuota)
}

// step runs one interval in which batch used its whole budget (or none),
// then upstream's suppress round.
func (n *fakeNode) step(t *testing.T) {
	n.clock = n.clock.Add(time.Second)
	if q := n.beQuota(t); q > 0 && !n.idle {
		n.usage += q * 10000 // µs per 100 ms period → ns per second
		n.kube += q * 10000
	}
	n.kube += n.ls * 4 * 1e9 / 100 // LS's share of 4 CPUs for a second
	n.helper.WriteCgroupFileContents(beDir, system.CPUAcctUsage, strconv.FormatInt(n.usage, 10))
	n.helper.WriteCgroupFileContents(kubeDir, system.CPUAcctUsage, strconv.FormatInt(n.kube, 10))
	n.c.Step()
	n.suppress()
}

func (n *fakeNode) wait(d time.Duration) {
	n.sig = lswait.Signal{At: time.Now(), Source: lswait.SourceEBPF, InterferenceMean: d}
}

// TestControllerMovesTheThreshold: BE suppress's threshold starts at the
// NodeSLO's, grows a step per quiet interval up to 100%, a violation halves
// the budget (in threshold points), a cut never leaves less than the floor,
// and the signal's loss gives the NodeSLO's threshold back until the signal
// returns, when the threshold resumes where it was.
func TestControllerMovesTheThreshold(t *testing.T) {
	n := newFakeNode(t, "-1")
	assert.Equal(t, int64(80), n.threshold(), "the NodeSLO's before any step")
	n.wait(100 * time.Microsecond)
	n.step(t) // the first step has no usage yet: it grows
	assert.Equal(t, int64(82), n.threshold(), "a step: 2 points")
	for i := 0; i < 20; i++ {
		n.step(t)
	}
	assert.Equal(t, int64(100), n.threshold(), "up to 100%, not beyond")
	assert.Equal(t, int64(200000), n.beQuota(t), "upstream's budget: 100% − LS's 50% of 4 CPUs")

	n.wait(5 * time.Millisecond)
	n.step(t)
	assert.Equal(t, int64(75), n.threshold(), "the budget (50%) halved: 25 points")
	n.step(t)
	assert.Equal(t, int64(62), n.threshold(), "halved again: the budget 25% → 12.5%")
	n.step(t)
	n.step(t)
	n.step(t)
	assert.Equal(t, int64(55), n.threshold(), "not below the floor: 5% of the node above LS's 50%")
	n.wait(800 * time.Microsecond)
	n.step(t)
	assert.Equal(t, int64(55), n.threshold(), "held in the band")
	n.wait(100 * time.Microsecond)
	n.step(t)
	assert.Equal(t, int64(57), n.threshold(), "a step up")

	// No signal: the NodeSLO's threshold; back, it resumes at 57.
	n.ok = false
	n.step(t)
	assert.Equal(t, int64(80), n.threshold())
	assert.Zero(t, n.c.Offset())
	n.ok = true
	n.wait(800 * time.Microsecond)
	n.step(t)
	assert.Equal(t, int64(57), n.threshold(), "resumed where it was")

	// The operator moves the NodeSLO's threshold: the offset follows it.
	n.slo.Spec.ResourceUsedThresholdWithBE.CPUSuppressThresholdPercent = ptr.To[int64](70)
	assert.Equal(t, int64(47), n.threshold())
	assert.Equal(t, "-1", n.rootQuota(t), "no quota on the YARN root: the budget is BE suppress's")
}

// TestControllerStop: after Stop (koordlet exiting) the threshold is the
// NodeSLO's and no step moves it again.
func TestControllerStop(t *testing.T) {
	n := newFakeNode(t, "-1")
	n.wait(5 * time.Millisecond)
	n.step(t)
	require.Equal(t, int64(65), n.threshold())
	n.c.Stop()
	assert.Equal(t, int64(80), n.threshold())
	n.step(t)
	assert.Equal(t, int64(80), n.threshold(), "no step after Stop")
}

// TestControllerStandsDown: with YARNBECPUSuppress off (no YARN-aware
// view to carry the threshold), with the NodeSLO's BE suppress off, and
// with the gate off, the threshold is the NodeSLO's.
func TestControllerStandsDown(t *testing.T) {
	n := newFakeNode(t, "-1")
	n.wait(5 * time.Millisecond)
	n.step(t)
	require.Equal(t, int64(65), n.threshold())

	featurestest.Set(t, map[string]bool{string(features.YARNBECPUSuppress): false})
	n.step(t)
	assert.Equal(t, int64(80), n.threshold(), "YARNBECPUSuppress off")
	featurestest.Set(t, map[string]bool{string(features.YARNBECPUSuppress): true})
	n.step(t)
	require.Less(t, n.threshold(), int64(80))

	n.slo.Spec.ResourceUsedThresholdWithBE.Enable = ptr.To(false)
	n.step(t)
	assert.Equal(t, int64(80), n.threshold(), "BE suppress off in the NodeSLO")
	n.slo.Spec.ResourceUsedThresholdWithBE.Enable = ptr.To(true)
	n.step(t)
	require.Less(t, n.threshold(), int64(80))

	featurestest.Set(t, map[string]bool{string(features.YARNInterferenceControl): false})
	assert.Equal(t, int64(80), n.threshold(), "the gate off")
}

// TestControllerStandsWithoutKoordletsSuppress (issue 55, item 4): the
// YARN root outside besteffort, YARNBECPUSuppress on but koordlet's
// BECPUSuppress off: upstream never runs the cpuSuppress slot, so there is
// no formula whose threshold the controller could move (the root's quota
// is given back by yarnsuppress.Restorer).
func TestControllerStandsWithoutKoordletsSuppress(t *testing.T) {
	const outside = "hadoop-yarn"
	n := newFakeNode(t, "-1")
	for file, v := range map[system.Resource]string{system.CPUCFSQuota: "300000", system.CPUCFSPeriod: "100000", system.CPUAcctUsage: "0"} {
		n.helper.WriteCgroupFileContents(outside, file, v)
	}
	featurestest.Set(t, map[string]bool{string(koordfeatures.BECPUSuppress): false})
	c, err := New(Options{Hierarchy: func() string { return outside }, Signal: n.c.opts.Signal, Node: n.c.opts.Node, NodeSLO: n.c.opts.NodeSLO,
		Config: n.c.opts.Config, Reader: resourceexecutor.NewCgroupReader()})
	require.NoError(t, err)
	n.wait(5 * time.Millisecond)
	c.Step()
	assert.Equal(t, "300000", n.helper.ReadCgroupFileContents(outside, system.CPUCFSQuota), "the controller writes no quota")
	th, lo := c.Threshold(80, nil)
	assert.Equal(t, int64(80), th, "no formula to move: the NodeSLO's threshold")
	assert.Nil(t, lo, "nor its minimum")
}

func TestTargetFromNodeSLO(t *testing.T) {
	n := newFakeNode(t, "-1")
	assert.Equal(t, time.Millisecond, n.c.Target(), "the flag")
	n.slo = &slov1alpha1.NodeSLO{Spec: slov1alpha1.NodeSLOSpec{Extensions: &slov1alpha1.ExtensionsMap{Object: map[string]interface{}{
		NodeSLOExtension: map[string]interface{}{"cpuWaitTargetMicroseconds": float64(500)}}}}}
	assert.Equal(t, 500*time.Microsecond, n.c.Target())
	for _, bad := range []any{"x", map[string]any{}, map[string]any{"cpuWaitTargetMicroseconds": "1"}, map[string]any{"cpuWaitTargetMicroseconds": float64(0)}} {
		n.slo.Spec.Extensions.Object[NodeSLOExtension] = bad
		assert.Equal(t, time.Millisecond, n.c.Target(), "%v: the flag", bad)
	}
}

// TestControllerNoWindUp: a batch that uses less than half its budget
// does not grow the threshold.
func TestControllerNoWindUp(t *testing.T) {
	n := newFakeNode(t, "-1")
	n.wait(0)
	n.idle = true
	for i := 0; i < 10; i++ {
		n.step(t)
	}
	assert.LessOrEqual(t, n.threshold(), int64(82), "at most the first step (no usage known yet) while batch is idle")
	n.idle = false
	n.step(t)
	n.step(t)
	assert.Greater(t, n.threshold(), int64(82), "grows once batch uses its budget")
}
