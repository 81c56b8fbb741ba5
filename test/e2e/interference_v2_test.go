package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

// v2Interference: on a real cgroup v2 kernel, koordlet measures the CPU
// waits of an LS pod's tasks (eBPF where the kernel has BTF, the unified
// hierarchy's cgroup ids) and its PSI cpu.pressure, and the interference
// controller puts a budget on the YARN root (cpu.max) while a YARN hog
// shares the LS task's CPU; koordlet stopped, the root is unlimited again.
func v2Interference(t *testing.T, l nodebox.Layout, ebpf bool) {
	b := startBox(t, nodebox.Options{Layout: l,
		Pods:         []nodebox.PodSpec{{Namespace: "default", Name: "ls", Labels: map[string]string{"koordinator.sh/qosClass": "LS"}, CPU: "1", Memory: "256Mi"}},
		KoordletArgs: []string{"--feature-gates=YARNInterferenceControl=true", "--yarn-interference-interval=500ms", "--yarn-interference-target=50us"}})
	ls := filepath.Join(b.CgroupRoot(), b.PodCgroup("ls"))
	waker := kerneltest.Start(t, "exec taskset -c 0 sh -c 'while :; do sleep 0.005; done'", ls)
	require.NoError(t, waker.Release())
	_, err := b.NM.Launch(nmemu.Spec{AppID: 7, Attempt: 1, Sequence: 2, User: "spark", MemoryMB: 512, VCores: 1,
		Script: "exec taskset -c 0 sh -c 'while :; do :; done'"})
	require.NoError(t, err)
	root := filepath.Join(b.CgroupRoot(), b.Hierarchy())

	gauge := func(fams map[string]*dto.MetricFamily, name, label, value string) (float64, bool) {
		f, ok := fams[name]
		if !ok {
			return 0, false
		}
		for _, m := range f.Metric {
			if label == "" {
				return m.GetGauge().GetValue(), true
			}
			for _, lp := range m.Label {
				if lp.GetName() == label && lp.GetValue() == value {
					return m.GetGauge().GetValue(), true
				}
			}
		}
		return 0, false
	}
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
		on, _ := gauge(fams, "koordlet_yarn_ls_cpu_wait_source", "source", source)
		waits := nodebox.CounterSum(fams, "koordlet_yarn_ls_cpu_waits_total", "pod", "ls")
		_, psi := gauge(fams, "koordlet_yarn_ls_cpu_pressure_some_ratio", "pod", "ls")
		budget, _ := gauge(fams, "koordlet_yarn_interference_budget_cores", "", "")
		max := readFile(filepath.Join(root, "cpu.max"))
		last = strings.Join([]string{"source " + source, "waits", ftoa(waits), "psi", btoa(psi), "budget", ftoa(budget), "cpu.max", max}, " ")
		return on == 1 && waits > 0 && psi && budget > 0 && !strings.HasPrefix(max, "max")
	}
	deadline := time.Now().Add(60 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("the LS waits measured and YARN's budget set, within 60 s: %s", last)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("LS CPU wait on v2: %s", last)

	b.StopKoordlet()
	assert.True(t, strings.HasPrefix(readFile(filepath.Join(root, "cpu.max")), "max"), "the YARN root unlimited again when koordlet stops: %s", readFile(filepath.Join(root, "cpu.max")))
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
