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

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/resourceexecutor"
	koordletutil "github.com/koordinator-sh/koordinator/pkg/koordlet/util"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/lswait"
	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/config"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
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
	usage  int64 // cpuacct.usage, ns
}

// newFakeNode: a 4-CPU node on a fake cgroup root; the YARN root has
// quota yarnQuota (YARN's own, or -1); suppress gives besteffort beQuota.
func newFakeNode(t *testing.T, yarnQuota, beQuota string) *fakeNode {
	helper := system.NewFileTestUtil(t)
	t.Cleanup(helper.Cleanup)
	helper.SetResourcesSupported(true, system.CPUCFSQuota, system.CPUCFSPeriod, system.CPUAcctUsage)
	for dir, q := range map[string]string{yarnRoot: yarnQuota, beDir: beQuota} {
		helper.WriteCgroupFileContents(dir, system.CPUCFSQuota, q)
		helper.WriteCgroupFileContents(dir, system.CPUCFSPeriod, "100000")
	}
	helper.WriteCgroupFileContents(yarnRoot, system.CPUAcctUsage, "0")
	n := &fakeNode{helper: helper, ok: true, stop: make(chan struct{})}
	t.Cleanup(func() { close(n.stop) })
	node := &corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}
	c, err := New(Options{Hierarchy: func() string { return yarnRoot },
		Signal:  func() (lswait.Signal, bool) { return n.sig, n.ok },
		Node:    func() *corev1.Node { return node },
		NodeSLO: func() *slov1alpha1.NodeSLO { return n.slo },
		Config:  &config.Interference{Interval: time.Second, Target: time.Millisecond, MinPercent: 10, StepPercent: 5},
		Reader:  resourceexecutor.NewCgroupReader(), Quota: cgroups.NewRootQuota()})
	require.NoError(t, err)
	c.now = func() time.Time { return n.clock }
	n.clock = time.Unix(1e9, 0)
	n.c = c
	return n
}

func (n *fakeNode) quota(t *testing.T) int64 {
	v, err := strconv.ParseInt(n.helper.ReadCgroupFileContents(yarnRoot, system.CPUCFSQuota), 10, 64)
	require.NoError(t, err)
	return v
}

// step runs one interval in which YARN used its whole quota.
func (n *fakeNode) step(t *testing.T) {
	n.clock = n.clock.Add(time.Second)
	if q := n.quota(t); q > 0 {
		n.usage += q * 10000 // µs per 100 ms period → ns per second
	}
	n.helper.WriteCgroupFileContents(yarnRoot, system.CPUAcctUsage, strconv.FormatInt(n.usage, 10))
	n.c.Step()
}

func (n *fakeNode) wait(d time.Duration) {
	n.sig = lswait.Signal{At: time.Now(), Source: lswait.SourceEBPF, InterferenceMean: d}
}

// TestControllerGrowsCutsAndGivesBack: the budget starts from what YARN
// has (within suppress's budget), halves on a violation, grows a step per
// quiet interval, never passes suppress's budget, and the YARN root's own
// quota comes back when there is no signal, when koordlet stops and when a
// later koordlet has the gate off.
func TestControllerGrowsCutsAndGivesBack(t *testing.T) {
	n := newFakeNode(t, "300000", "250000") // YARN's own 3 CPUs; suppress allows 2.5
	n.wait(100 * time.Microsecond)
	n.step(t)
	assert.Equal(t, int64(250000), n.quota(t), "starts from YARN's 3 CPUs, within suppress's budget")
	n.wait(5 * time.Millisecond)
	n.step(t)
	assert.Equal(t, int64(125000), n.quota(t), "halved")
	n.step(t)
	n.step(t)
	n.step(t)
	assert.Equal(t, int64(40000), n.quota(t), "not below the floor: 10% of 4 CPUs")
	n.wait(100 * time.Microsecond)
	n.step(t)
	assert.Equal(t, int64(60000), n.quota(t), "a step: 5% of 4 CPUs")
	for i := 0; i < 30; i++ {
		n.step(t)
	}
	assert.Equal(t, int64(250000), n.quota(t), "up to suppress's budget, not beyond")
	n.wait(5 * time.Millisecond)
	n.step(t)
	assert.Equal(t, int64(125000), n.quota(t), "halved")
	n.wait(800 * time.Microsecond)
	n.step(t)
	assert.Equal(t, int64(125000), n.quota(t), "held in the band")

	// Suppress lowers the BE budget below ours: the ceiling follows.
	n.helper.WriteCgroupFileContents(beDir, system.CPUCFSQuota, "100000")
	n.step(t)
	assert.Equal(t, int64(100000), n.quota(t))

	// No signal: YARN's own quota back.
	n.ok = false
	n.step(t)
	assert.Equal(t, int64(300000), n.quota(t))
	assert.Zero(t, n.c.Budget())

	// Controlling again, then koordlet stops.
	n.ok = true
	n.wait(0)
	n.step(t)
	assert.Equal(t, int64(100000), n.quota(t), "back where it was")
	n.c.release("test")
	assert.Equal(t, int64(300000), n.quota(t))

	// A koordlet killed while controlling, the next one with the gate off.
	n.step(t)
	require.Equal(t, int64(100000), n.quota(t))
	require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{string(features.YARNInterferenceControl): false}))
	later, err := New(Options{Hierarchy: func() string { return yarnRoot }, Config: n.c.opts.Config, Quota: cgroups.NewRootQuota()})
	require.NoError(t, err)
	assert.Equal(t, 1, later.RestoreDisabled())
	assert.Equal(t, int64(300000), n.quota(t))
	assert.Equal(t, 0, later.RestoreDisabled(), "once")
}

// TestControllerWithoutOwnQuota: a YARN root without a quota of its own
// (-1) gets -1 back; without a suppress budget the node's CPU is the ceiling.
func TestControllerWithoutOwnQuota(t *testing.T) {
	n := newFakeNode(t, "-1", "-1")
	n.wait(0)
	for i := 0; i < 40; i++ {
		n.step(t)
	}
	assert.Equal(t, int64(400000), n.quota(t), "the node's 4 CPUs")
	n.c.release("test")
	assert.Equal(t, int64(-1), n.quota(t))
}

// TestControllerStop: Stop (koordlet exiting) gives YARN its own quota
// back and no later step writes again.
func TestControllerStop(t *testing.T) {
	n := newFakeNode(t, "300000", "-1")
	n.wait(5 * time.Millisecond)
	n.step(t)
	require.Equal(t, int64(150000), n.quota(t))
	n.c.Stop()
	assert.Equal(t, int64(300000), n.quota(t))
	n.step(t)
	assert.Equal(t, int64(300000), n.quota(t), "no step after Stop")
}

func TestTargetFromNodeSLO(t *testing.T) {
	n := newFakeNode(t, "-1", "-1")
	assert.Equal(t, time.Millisecond, n.c.Target(), "the flag")
	n.slo = &slov1alpha1.NodeSLO{Spec: slov1alpha1.NodeSLOSpec{Extensions: &slov1alpha1.ExtensionsMap{Object: map[string]interface{}{
		NodeSLOExtension: map[string]interface{}{"cpuWaitTargetMicroseconds": float64(500)}}}}}
	assert.Equal(t, 500*time.Microsecond, n.c.Target())
	for _, bad := range []any{"x", map[string]any{}, map[string]any{"cpuWaitTargetMicroseconds": "1"}, map[string]any{"cpuWaitTargetMicroseconds": float64(0)}} {
		n.slo.Spec.Extensions.Object[NodeSLOExtension] = bad
		assert.Equal(t, time.Millisecond, n.c.Target(), "%v: the flag", bad)
	}
}

// TestControllerNoWindUp: an idle batch does not grow the budget beyond
// twice its use plus a step.
func TestControllerNoWindUp(t *testing.T) {
	n := newFakeNode(t, "-1", "-1")
	n.wait(5 * time.Millisecond)
	for i := 0; i < 4; i++ { // cut from the node's 4 CPUs to the floor
		n.step(t)
	}
	require.Equal(t, int64(40000), n.quota(t))
	n.wait(0)
	for i := 0; i < 10; i++ {
		n.clock = n.clock.Add(time.Second) // YARN uses nothing
		n.c.Step()
	}
	assert.Equal(t, int64(40000), n.quota(t), "held at the floor while YARN is idle")
}

// TestControllerRestartKeepsYARNBudget: a koordlet restarted over a YARN
// root with a large quota (a budget the last koordlet left, or YARN's own)
// does not cut YARN to the floor while LS is unharmed. The code before
// started every controller at the floor: each koordlet rollout cut YARN
// from most of the node to 10% for a while.
func TestControllerRestartKeepsYARNBudget(t *testing.T) {
	n := newFakeNode(t, "300000", "-1") // 3 of 4 CPUs on the root
	n.wait(100 * time.Microsecond)      // well below the target
	for i := 0; i < 3; i++ {
		n.step(t)
		assert.GreaterOrEqual(t, n.quota(t), int64(300000), "step %d: not cut below what YARN had", i)
	}
	// LS harmed: the cut is from where YARN was, not a drop to the floor.
	n.wait(5 * time.Millisecond)
	n.step(t)
	assert.Equal(t, int64(150000), n.quota(t), "halved from 3 CPUs")
}

// TestControllerResumesAfterSignalGap: a gap of more than three intervals
// in the signal gives YARN its own quota back; when the signal returns the
// budget resumes where it was, not at the floor.
func TestControllerResumesAfterSignalGap(t *testing.T) {
	n := newFakeNode(t, "300000", "-1")
	n.wait(100 * time.Microsecond)
	for i := 0; i < 5; i++ {
		n.step(t)
	}
	n.wait(5 * time.Millisecond)
	n.step(t)
	before := n.quota(t)
	require.Greater(t, before, int64(40000), "above the floor before the gap")
	require.Less(t, before, int64(300000), "below YARN's own before the gap")
	n.ok = false // the gap
	n.step(t)
	require.Equal(t, int64(300000), n.quota(t), "released to YARN's own")
	n.ok = true
	n.wait(800 * time.Microsecond) // in the hold band
	n.step(t)
	assert.Equal(t, before, n.quota(t), "resumed at the budget before the gap")
}
