package koordletyarn

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/resourceexecutor"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/lswait"
	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/config"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features/featurestest"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarninterference"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnsuppress"
)

// TestQuotaSuppressOffInterferenceOnSameRestart: a v2 node, the YARN root
// outside besteffort, capped at its last share of the BE budget by a
// koordlet that divided it (the record of YARN's own quota, 3 CPUs, on the
// root). koordlet restarts with YARNBECPUSuppress off and
// YARNInterferenceControl on, and in the worst order: the controller's
// first step before the suppress restorer. The controller never takes the
// stale cap for YARN's own quota (neither as its ceiling nor as what goes
// back), and YARN has its own quota back when the controller stops. The
// code before recorded the cap (1.2 CPUs) in a record of its own and put it
// back on stop.
func TestQuotaSuppressOffInterferenceOnSameRestart(t *testing.T) {
	require.NoError(t, features.Register())
	helper := system.NewFileTestUtil(t)
	t.Cleanup(helper.Cleanup)
	helper.SetCgroupsV2(true)
	const h = "hadoop-yarn" // outside besteffort
	// kernel keeps cpu.max "quota period"; the fake file holds what was written.
	cpuMax := func() string {
		v := strings.TrimSpace(helper.ReadCgroupFileContents(h, system.CPUCFSQuotaV2))
		if !strings.Contains(v, " ") {
			v += " 100000"
			helper.WriteCgroupFileContents(h, system.CPUCFSQuotaV2, v)
		}
		return v
	}
	helper.WriteCgroupFileContents(h, system.CPUCFSQuotaV2, "120000 100000")
	dir := filepath.Dir(system.GetCgroupFilePath(h, system.CPUCFSQuotaV2))
	require.NoError(t, unix.Setxattr(dir, "trusted.koordlet-yarn.prior-cfs-quota", []byte("300000"), 0))
	require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{
		string(features.YARNBECPUSuppress): false, string(features.YARNInterferenceControl): true}))
	t.Cleanup(func() {
		_ = koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{string(features.YARNInterferenceControl): false})
	})

	node := &corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}
	quiet := lswait.Signal{At: time.Now(), Source: lswait.SourceEBPF, InterferenceMean: 100 * time.Microsecond}
	ctl, err := yarninterference.New(yarninterference.Options{Hierarchy: func() string { return h },
		Signal: func() (lswait.Signal, bool) { return quiet, true },
		Node:   func() *corev1.Node { return node },
		Config: &config.Interference{Interval: time.Second, Target: time.Millisecond, MinPercent: 10, StepPercent: 5},
		Reader: resourceexecutor.NewCgroupReader()})
	require.NoError(t, err)
	restorer, err := yarnsuppress.NewRestorer(func() string { return h }, cgroups.NewRootQuota())
	require.NoError(t, err)

	records := func() map[string]string {
		out := map[string]string{}
		buf := make([]byte, 4096)
		n, err := unix.Listxattr(dir, buf)
		require.NoError(t, err)
		for _, name := range strings.Split(string(buf[:n]), "\x00") {
			if strings.HasPrefix(name, "trusted.koordlet-yarn.") {
				v := make([]byte, 64)
				m, err := unix.Getxattr(dir, name, v)
				require.NoError(t, err)
				out[name] = string(v[:m])
			}
		}
		return out
	}
	noStaleRecord := func(when string) {
		for name, v := range records() {
			assert.NotEqual(t, "120000", v, "%s: %s records koordlet's own cap as YARN's quota", when, name)
		}
	}

	ctl.Step() // the worst order: before the restorer
	cpuMax()
	noStaleRecord("after the first step")
	restorer.RestoreDisabled()
	cpuMax()
	for i := 0; i < 3; i++ {
		ctl.Step()
		cpuMax()
		noStaleRecord("after a step")
	}
	ctl.Stop()
	assert.Equal(t, "300000 100000", cpuMax(), "YARN's own quota back")
	assert.Empty(t, records(), "no record left")
}

// orderLoop is a loop that notes, when it starts, whether the restorer ran.
type orderLoop struct {
	restored *bool
	startedAfterRestore,
	started bool
}

func (l *orderLoop) Name() string               { return "order" }
func (l *orderLoop) Enabled() bool              { return true }
func (l *orderLoop) Run(stopCh <-chan struct{}) { l.started, l.startedAfterRestore = true, *l.restored }

type orderRestorer struct{ restored *bool }

func (r *orderRestorer) Name() string               { return "restorer" }
func (r *orderRestorer) Enabled() bool              { return false }
func (r *orderRestorer) Run(stopCh <-chan struct{}) {}
func (r *orderRestorer) RestoreDisabled() int       { *r.restored = true; return 1 }

// TestLoopRunnerRestoresBeforeStarting: the disabled loops restore what
// they wrote before any enabled loop starts, whatever the order of the
// loops (the interference controller is installed before the suppress
// restorer: its first step ran before the restore).
func TestLoopRunnerRestoresBeforeStarting(t *testing.T) {
	restored := false
	l := &orderLoop{restored: &restored}
	r := &loopRunner{fw: &Framework{loops: []Loop{l, &orderRestorer{restored: &restored}}}}
	r.Run(make(chan struct{}))
	require.True(t, l.started)
	assert.True(t, l.startedAfterRestore, "the restorer ran before the loop started")
}

// TestQuotaRestoredWhenKoordletsSuppressIsOff (issue 55, item 4): the YARN
// root outside besteffort, capped at its last share of the BE budget, with
// the record of its own quota; koordlet restarts with YARNBECPUSuppress on
// but koordlet's own BECPUSuppress off. Upstream then never runs the
// cpuSuppress slot, so nothing divides the budget: the quota is YARN's to
// have back at the start, and /yarn/restore counts it pending before. The
// code before restored only with YARNBECPUSuppress off (and the
// interference controller only with it off), and counted nothing while a
// YARN gate was on: the root stayed capped indefinitely.
func TestQuotaRestoredWhenKoordletsSuppressIsOff(t *testing.T) {
	for _, tc := range []struct {
		name  string
		gates map[string]bool
	}{
		{"YARNBECPUSuppress on", map[string]bool{string(features.YARNBECPUSuppress): true}},
		{"and YARNInterferenceControl on", map[string]bool{string(features.YARNBECPUSuppress): true, string(features.YARNInterferenceControl): true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("NODE_NAME", "")
			helper := system.NewFileTestUtil(t)
			t.Cleanup(helper.Cleanup)
			helper.SetCgroupsV2(false)
			fw, err := install(flag.NewFlagSet("koordlet", flag.ContinueOnError), prometheus.NewRegistry())
			require.NoError(t, err)
			const h = "hadoop-yarn" // outside besteffort
			fw.Config.CgroupHierarchy = h
			helper.WriteCgroupFileContents(h, system.CPUCFSQuota, "120000") // the last share of the BE budget
			root := filepath.Dir(system.GetCgroupFilePath(h, system.CPUCFSQuota))
			require.NoError(t, unix.Setxattr(root, cgroups.PriorQuotaXattr, []byte("300000"), 0))
			fw.Informer.Setup(nil, nil)
			require.Equal(t, h, fw.Informer.HierarchyDir())

			gates := map[string]bool{string(koordfeatures.BECPUSuppress): false}
			for g, on := range tc.gates {
				gates[g] = on
			}
			featurestest.Set(t, gates)

			quotaKind := func() RestoreKind {
				for _, k := range fw.restoreStatus().Kinds {
					if k.Kind == "cpu-quota" {
						return k
					}
				}
				t.Fatal("no cpu-quota kind")
				return RestoreKind{}
			}
			before := quotaKind()
			assert.True(t, before.Off, "nothing divides the BE budget: the quota is to be restored")
			assert.Equal(t, 1, before.Pending, "and counted before the start")

			// The start: the framework's loops that write the root's quota.
			var loops []Loop
			for _, l := range fw.loops {
				if n := l.Name(); n == "YARN BE CPU suppress restore" || n == "YARN interference control" {
					loops = append(loops, l)
				}
			}
			require.Len(t, loops, 2)
			stop := make(chan struct{})
			t.Cleanup(func() { close(stop) })
			(&loopRunner{fw: &Framework{loops: loops}}).Run(stop)
			assert.Equal(t, "300000", strings.TrimSpace(helper.ReadCgroupFileContents(h, system.CPUCFSQuota)), "YARN's own quota back")
			_, err = unix.Getxattr(root, cgroups.PriorQuotaXattr, make([]byte, 32))
			assert.ErrorIs(t, err, unix.ENODATA, "the record is gone")
			assert.Equal(t, 0, quotaKind().Pending)
		})
	}
}
