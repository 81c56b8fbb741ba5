package preflight_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/config"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features/featurestest"
	"github.com/koordlet-yarn/koordlet-yarn/preflight"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

// useFakeNode points koordlet's system configuration at a fake node (its
// cgroup and sysfs roots, its cgroup version) and restores it afterwards.
func useFakeNode(t *testing.T, n nodebox.FakeNode) {
	t.Helper()
	conf, v2, formatter := *system.Conf, system.UseCgroupsV2.Load(), system.CgroupPathFormatter
	t.Cleanup(func() {
		*system.Conf = conf
		system.UseCgroupsV2.Store(v2)
		system.CgroupPathFormatter = formatter
	})
	system.Conf.CgroupRootDir = n.CgroupRoot + "/"
	system.Conf.SysFSRootDir = n.SysFSRoot + "/"
	system.Conf.ProcRootDir = "/proc/"
	system.UseCgroupsV2.Store(n.Layout.Unified)
}

// nmServer serves a NodeManager's /ws/v1/node/info.
func nmServer(t *testing.T, version string) (host string, port int) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ws/v1/node/info" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, `{"nodeInfo":{"id":"node-1:8041","nodeHostName":"node-1","nodeManagerVersion":%q}}`, version)
	}))
	t.Cleanup(srv.Close)
	h, p, err := net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)
	port, err = strconv.Atoi(p)
	require.NoError(t, err)
	return h, port
}

// nmPods returns the node's pods: the NodeManager (host network) and another.
func nmPods(host string) func(context.Context) ([]*corev1.Pod, error) {
	return func(context.Context) ([]*corev1.Pod, error) {
		return []*corev1.Pod{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "yarn", Name: "nm-0", Labels: map[string]string{"app.kubernetes.io/component": "node-manager"}},
				Spec:   corev1.PodSpec{HostNetwork: true},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, HostIP: host, PodIP: host}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.9"}},
		}, nil
	}
}

const (
	c1 = "container_e17_1700000000000_0042_01_000001"
	c2 = "container_e17_1700000000000_0042_01_000002"
)

// TestProbeLayouts probes fake nodes laid out as real nodes are (the node
// in a box's layouts) and checks what the probe sees: the driver, the
// hierarchy, where it exists, the controllers YARN manages, the co-mounted
// ones and the containers.
func TestProbeLayouts(t *testing.T) {
	for _, tc := range []struct {
		layout    nodebox.Layout
		driver    string
		hierarchy string
		managed   []string
		comounted []string // of cpu
		ctrls     int
	}{
		{nodebox.LayoutCgroupfs, "cgroupfs", "kubepods/besteffort/hadoop-yarn", []string{"cpu", "cpuacct", "memory"}, nil, 5},
		{nodebox.LayoutCPUOnly, "cgroupfs", "kubepods/besteffort/hadoop-yarn", []string{"cpu"}, nil, 5},
		{nodebox.LayoutSystemd, "systemd", "kubepods.slice/kubepods-besteffort.slice/hadoop-yarn", []string{"cpu"}, nil, 5},
		{nodebox.LayoutUnified, "cgroupfs", "kubepods/besteffort/hadoop-yarn", []string{"cpu", "cpuacct", "memory", "blkio"}, nil, 1},
		{nodebox.LayoutCoMounted, "cgroupfs", "kubepods/besteffort/hadoop-yarn", []string{"cpu", "cpuacct", "memory"}, []string{"cpuacct"}, 5},
		{nodebox.LayoutCoMountedCPUOnly, "cgroupfs", "kubepods/besteffort/hadoop-yarn", []string{"cpu", "cpuacct"}, []string{"cpuacct"}, 5},
	} {
		t.Run(tc.layout.Name, func(t *testing.T) {
			n, err := nodebox.LayOutFakeNode(t.TempDir(), tc.layout, nodebox.FakeNodeOptions{Containers: []string{c1, c2}})
			require.NoError(t, err)
			useFakeNode(t, n)
			f := preflight.Probe(context.Background(), preflight.Options{Config: config.NewDefault(), OpenEBPF: func() error { return nil }})

			assert.Equal(t, tc.layout.Unified, f.CgroupV2)
			assert.Equal(t, tc.driver, f.Driver)
			assert.Equal(t, tc.hierarchy, f.Hierarchy)
			assert.Empty(t, f.HierarchyErr)
			assert.Equal(t, 2, f.Containers)
			assert.True(t, f.ManagedFromContainers)
			assert.Equal(t, tc.managed, f.Managed)
			require.Len(t, f.Controllers, tc.ctrls)
			assert.Equal(t, tc.comounted, f.Controllers[0].CoMounted)
			assert.True(t, f.Controllers[0].Mounted)
			assert.True(t, f.Controllers[0].RootExists)
			assert.Empty(t, f.ScanErr)

			r := preflight.Evaluate(f)
			hier, ok := finding(r, "YARN hierarchy", preflight.OK)
			require.True(t, ok)
			assert.Equal(t, preflight.OK, hier.Severity, "%+v", hier)
			if len(tc.managed) == 1 || !slices.Contains(tc.managed, "memory") {
				ctrl, _ := finding(r, "YARN controllers", preflight.OK)
				assert.Contains(t, ctrl.Detail, "CPU-only YARN")
			}
		})
	}
}

// finding returns the first finding of check with severity at least min.
func finding(r preflight.Report, check string, min preflight.Severity) (preflight.Finding, bool) {
	for _, f := range r.Findings {
		if f.Check == check && f.Severity >= min {
			return f, true
		}
	}
	return preflight.Finding{}, false
}

// TestProbeNodeFeatures probes the kernel-feature files and the
// NodeManager on a fake cgroupfs node: without them, and with Group
// Identity, Anolis Memory QoS, a resctrl BE group and a NodeManager pod
// answering.
func TestProbeNodeFeatures(t *testing.T) {
	t.Run("bare", func(t *testing.T) {
		n, err := nodebox.LayOutFakeNode(t.TempDir(), nodebox.LayoutCgroupfs, nodebox.FakeNodeOptions{NoYARNRoot: true})
		require.NoError(t, err)
		useFakeNode(t, n)
		featurestest.Set(t, map[string]bool{"YARNEBPFDiscovery": true, "YARNResctrlQoS": true, "YARNMemoryQoS": true})
		f := preflight.Probe(context.Background(), preflight.Options{Config: config.NewDefault(), OpenEBPF: func() error { return errors.New("no BTF") }})
		assert.False(t, f.GroupIdentity)
		assert.False(t, f.SchedIdle)
		assert.Empty(t, f.MemoryQoSFiles)
		assert.False(t, f.ResctrlMounted)
		assert.False(t, f.ResctrlBEGroup)
		assert.True(t, f.EBPFTried)
		assert.Equal(t, "no BTF", f.EBPFErr)
		assert.Zero(t, f.Containers)
		assert.Empty(t, f.Managed)
		for _, c := range f.Controllers {
			assert.False(t, c.RootExists, c.Name)
		}
		assert.False(t, f.NM.Checked)
		assert.Contains(t, f.NM.FindErr, "no pod list")

		r := preflight.Evaluate(f)
		for check, want := range map[string]preflight.Severity{"YARN hierarchy": preflight.Warn, "BPF/BTF": preflight.Warn, "resctrl": preflight.Info, "Memory QoS": preflight.Warn, "NodeManager": preflight.Warn} {
			got, ok := finding(r, check, preflight.OK)
			require.True(t, ok, check)
			if check == "resctrl" && !f.ResctrlCPU {
				want = preflight.Warn // the CPU of this host lacks RDT: YARNResctrlQoS does nothing
			}
			assert.GreaterOrEqual(t, got.Severity, want, "%s: %+v", check, got)
		}
	})
	t.Run("equipped", func(t *testing.T) {
		n, err := nodebox.LayOutFakeNode(t.TempDir(), nodebox.LayoutCgroupfs, nodebox.FakeNodeOptions{Containers: []string{c1}, KernelFiles: true, ResctrlBE: true})
		require.NoError(t, err)
		useFakeNode(t, n)
		host, port := nmServer(t, "3.3.6")
		cfg := config.NewDefault()
		cfg.NMPort = port
		f := preflight.Probe(context.Background(), preflight.Options{Config: cfg, Pods: nmPods(host), OpenEBPF: func() error { return nil }})
		assert.True(t, f.GroupIdentity)
		assert.True(t, f.SchedIdle)
		assert.Contains(t, f.MemoryQoSFiles, "memory.min")
		assert.Contains(t, f.MemoryQoSFiles, "memory.wmark_ratio")
		assert.True(t, f.ResctrlMounted)
		assert.True(t, f.ResctrlBEGroup)
		assert.True(t, f.NM.Checked)
		assert.Empty(t, f.NM.Err)
		assert.Equal(t, "3.3.6", f.NM.Version)
		assert.Equal(t, "node-1:8041", f.NM.NodeID)
		assert.Equal(t, "pod yarn/nm-0", f.NM.Source)
		assert.Equal(t, "http://"+net.JoinHostPort(host, strconv.Itoa(port)), f.NM.Endpoint)
	})
	t.Run("NodeManager elsewhere", func(t *testing.T) {
		n, err := nodebox.LayOutFakeNode(t.TempDir(), nodebox.LayoutCgroupfs, nodebox.FakeNodeOptions{})
		require.NoError(t, err)
		useFakeNode(t, n)
		host, port := nmServer(t, "3.4.1")
		cfg := config.NewDefault()
		cfg.NMPort = port
		cfg.CgroupHierarchy = "/yarn-elsewhere"
		f := preflight.Probe(context.Background(), preflight.Options{Config: cfg, Pods: nmPods(host), OpenEBPF: func() error { return nil }})
		assert.True(t, f.HierarchyFlag)
		assert.True(t, f.OutsideBestEffort)
		r := preflight.Evaluate(f)
		got, ok := finding(r, "YARN hierarchy", preflight.Block)
		require.True(t, ok, "%+v", r.Findings)
		assert.Contains(t, got.Detail, "/yarn-elsewhere")
		assert.Equal(t, 1, r.ExitCode())
	})
}

func TestMain(m *testing.M) {
	// The plugin set's gates live in koordlet's gate, as Install puts them.
	if err := features.Register(); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}
