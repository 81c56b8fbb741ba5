package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"

	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

// v2Interference: on a real cgroup v2 kernel, koordlet measures the CPU
// waits of an LS pod's tasks (eBPF where the kernel has BTF, the unified
// hierarchy's cgroup ids) and its PSI cpu.pressure, and while a YARN hog
// shares the LS task's CPU the interference controller moves BE suppress's
// threshold off the NodeSLO's 80% (down when the LS task waits above the
// target, up when below: which, depends on the guest's timing; the rule is
// unit-tested) and upstream's suppress puts its budget on the besteffort
// cgroup (cpu.max); the YARN root's own cpu.max is never written, and stays
// unlimited when koordlet stops.
func v2Interference(t *testing.T, l nodebox.Layout, ebpf bool) {
	b := startBox(t, nodebox.Options{Layout: l,
		Pods: []nodebox.PodSpec{{Namespace: "default", Name: "ls", Labels: map[string]string{"koordinator.sh/qosClass": "LS"}, CPU: "1", Memory: "256Mi"}},
		NodeSLO: slov1alpha1.NodeSLOSpec{ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{Enable: ptr.To(true),
			CPUSuppressThresholdPercent: ptr.To[int64](80), CPUSuppressPolicy: slov1alpha1.CPUCfsQuotaPolicy}},
		KoordletArgs: []string{"--feature-gates=BECPUSuppress=true,YARNBECPUSuppress=true,YARNInterferenceControl=true",
			"--yarn-interference-interval=500ms", "--yarn-interference-target=50us"}})
	ls := filepath.Join(b.CgroupRoot(), b.PodCgroup("ls"))
	waker := kerneltest.Start(t, "exec taskset -c 0 sh -c 'while :; do sleep 0.005; done'", ls)
	require.NoError(t, waker.Release())
	_, err := b.NM.Launch(nmemu.Spec{AppID: 7, Attempt: 1, Sequence: 2, User: "spark", MemoryMB: 512, VCores: 1,
		Script: "exec taskset -c 0 sh -c 'while :; do :; done'"})
	require.NoError(t, err)
	root := filepath.Join(b.CgroupRoot(), b.Hierarchy())
	be := filepath.Dir(root) // the YARN root is below besteffort in this layout

	var last string
	ok := func() bool {
		fams, err := b.MetricFamilies()
		if err != nil {
			last = err.Error()
			return false
		}
		source := "schedstat"
		if ebpf {
			source = "ebpf"
		}
		on, _ := gaugeOf(fams, "koordlet_yarn_ls_cpu_wait_source", "source", source)
		waits := nodebox.CounterSum(fams, "koordlet_yarn_ls_cpu_waits_total", "pod", "ls")
		_, psi := gaugeOf(fams, "koordlet_yarn_ls_cpu_pressure_some_ratio", "pod", "ls")
		threshold, _ := gaugeOf(fams, "koordlet_yarn_interference_threshold_percent", "", "")
		cuts := nodebox.CounterSum(fams, "koordlet_yarn_interference_actions_total", "action", "cut")
		beMax := readFile(filepath.Join(be, "cpu.max"))
		rootMax := readFile(filepath.Join(root, "cpu.max"))
		last = strings.Join([]string{"source " + source, "waits", ftoa(waits), "psi", btoa(psi), "threshold", ftoa(threshold), "cuts", ftoa(cuts),
			"besteffort cpu.max", beMax, "YARN root cpu.max", rootMax}, " ")
		require.True(t, strings.HasPrefix(rootMax, "max"), "the YARN root's cpu.max is never written: %s", last)
		return on == 1 && waits > 0 && psi && threshold > 0 && threshold != 80 && !strings.HasPrefix(beMax, "max")
	}
	deadline := time.Now().Add(60 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("the LS waits measured, BE suppress's threshold moved and its budget on besteffort, within 60 s: %s", last)
		}
		time.Sleep(500 * time.Millisecond)
	}
	say(t, "LS CPU wait and interference control on v2: %s", last)

	b.StopKoordlet()
	assert.True(t, strings.HasPrefix(readFile(filepath.Join(root, "cpu.max")), "max"), "the YARN root unlimited when koordlet stops: %s", readFile(filepath.Join(root, "cpu.max")))
	_, err = os.Stat(root)
	require.NoError(t, err)
}

func ftoa(v float64) string { return strings.TrimRight(strings.TrimRight(strconvF(v), "0"), ".") }

func btoa(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

func strconvF(v float64) string { return strconv.FormatFloat(v, 'f', 6, 64) }
