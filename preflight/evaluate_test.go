package preflight

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
)

// goodNode is a cgroup v1 cgroupfs node where YARN manages cpu, cpuacct
// (co-mounted) and memory, with a reachable NodeManager and the default
// gates.
func goodNode() Facts {
	ctrl := func(name string, root bool, co ...string) ControllerFacts {
		return ControllerFacts{Name: name, Mounted: true, MountDir: "/sys/fs/cgroup/" + name, CoMounted: co,
			RootDir: "/sys/fs/cgroup/" + name + "/kubepods/besteffort/hadoop-yarn", RootExists: root}
	}
	return Facts{
		CgroupRoot: "/host-cgroup/", ProcRoot: "/proc/", Driver: "cgroupfs",
		Hierarchy: "kubepods/besteffort/hadoop-yarn",
		Controllers: []ControllerFacts{ctrl("cpu", true, "cpuacct"), ctrl("cpuacct", true, "cpu"), ctrl("cpuset", false),
			ctrl("memory", true), ctrl("blkio", false)},
		Containers: 3, Managed: []string{"cpu", "cpuacct", "memory"}, ManagedFromContainers: true,
		BTF: true, EBPFTried: true, Freezer: true, PSI: true, SchedIdle: true,
		NM:    NMFacts{Endpoint: "http://10.0.0.1:8042", Source: "pod yarn/nm-0", Checked: true, Version: "3.3.6", NodeID: "n1:8041"},
		Gates: map[string]bool{"YARNContainerInformer": true, "YARNMetricsCollector": true, "YARNEBPFDiscovery": true},
	}
}

// finding returns the first finding of check with severity at least min.
func finding(r Report, check string, min Severity) (Finding, bool) {
	for _, f := range r.Findings {
		if f.Check == check && f.Severity >= min {
			return f, true
		}
	}
	return Finding{}, false
}

func TestEvaluate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Facts)
		check  string   // the finding that matters ("" only counts)
		want   Severity // its severity
		detail string   // in its detail
		fix    string   // in its fix
		blocks int
	}{
		{name: "good node", mutate: func(*Facts) {}, check: "YARN hierarchy", want: OK, detail: "3 container cgroup(s)"},
		{name: "no cpu controller", mutate: func(f *Facts) {
			for i := range f.Controllers {
				f.Controllers[i].Mounted = false
			}
		}, check: "cgroup", want: Block, fix: "--cgroup-root-dir", blocks: 1},
		{name: "driver unknown", mutate: func(f *Facts) { f.Driver = "" }, check: "cgroup", want: Warn, detail: "driver is unknown"},
		{name: "bad hierarchy flag", mutate: func(f *Facts) { f.HierarchyErr = "invalid YARN cgroup hierarchy \"..\"" },
			check: "YARN hierarchy", want: Block, fix: "--yarn-cgroup-hierarchy", blocks: 1},
		{name: "hierarchy missing, NM not running yet", mutate: func(f *Facts) {
			noRoot(f)
			f.NM = NMFacts{FindErr: "no pod on this node matches"}
		}, check: "YARN hierarchy", want: Warn, detail: "makes it when it starts"},
		{name: "hierarchy missing while the NM runs", mutate: noRoot,
			check: "YARN hierarchy", want: Block, detail: "containers are elsewhere", fix: "--yarn-cgroup-hierarchy", blocks: 1},
		{name: "scan fails", mutate: func(f *Facts) { f.ScanErr = "permission denied" }, check: "YARN hierarchy", want: Block, blocks: 1},
		{name: "outside besteffort", mutate: func(f *Facts) { f.OutsideBestEffort = true }, check: "YARN hierarchy", want: Warn, fix: "YARNBECPUSuppress"},
		{name: "outside besteffort with the YARN suppress", mutate: func(f *Facts) {
			f.OutsideBestEffort = true
			f.Gates["YARNBECPUSuppress"], f.Gates["BECPUSuppress"] = true, true
		}, check: "YARN hierarchy", want: Info, detail: "binds the YARN root"},
		{name: "CPU-only YARN", mutate: func(f *Facts) { f.Managed = []string{"cpu", "cpuacct"} }, check: "YARN controllers", want: Info, detail: "CPU-only"},
		{name: "no cpu cgroups", mutate: func(f *Facts) { f.Managed = []string{"memory"} }, check: "YARN controllers", want: Warn, fix: "resources-handler"},
		{name: "cpuacct apart and unmanaged", mutate: func(f *Facts) {
			f.Managed = []string{"cpu", "memory"}
			f.Controllers[0].CoMounted, f.Controllers[1].CoMounted = nil, nil
		}, check: "per-container CPU", want: Info, detail: "processes' CPU time"},
		{name: "co-mounted listed once", mutate: func(*Facts) {}, check: "co-mounted controllers", want: OK, detail: "cpu,cpuacct"},
		{name: "namespace unplaceable, no evict gate", mutate: func(f *Facts) { f.NamespaceErr = "not found" }, check: "cgroup namespace", want: Warn},
		{name: "namespace unplaceable with memory evict", mutate: func(f *Facts) {
			f.NamespaceErr = "not found"
			f.Gates["YARNBEMemoryEvict"], f.Gates["BEMemoryEvict"] = true, true
		}, check: "cgroup namespace", want: Block, detail: "evictions fail", blocks: 1},
		{name: "eBPF fails", mutate: func(f *Facts) { f.EBPFErr = "operation not permitted"; f.BTF = false }, check: "BPF/BTF", want: Warn, detail: "no BTF", fix: "CAP_BPF"},
		{name: "NM not found", mutate: func(f *Facts) { f.NM = NMFacts{FindErr: "no pod on this node matches"} }, check: "NodeManager", want: Warn, fix: "app.kubernetes.io/component=node-manager"},
		{name: "NM does not answer", mutate: func(f *Facts) { f.NM.Err = "connection refused" }, check: "NodeManager", want: Warn, detail: "connection refused", fix: "--yarn-nm-port"},
		{name: "NM answers", mutate: func(*Facts) {}, check: "NodeManager", want: OK, detail: "3.3.6"},
		{name: "YARN memory evict without BEMemoryEvict", mutate: func(f *Facts) { f.Gates["YARNBEMemoryEvict"] = true },
			check: "feature gates", want: Block, fix: "BEMemoryEvict=true", blocks: 1},
		{name: "YARN CPU evict and suppress without upstream", mutate: func(f *Facts) {
			f.Gates["YARNBECPUEvict"], f.Gates["YARNBECPUSuppress"] = true, true
		}, check: "feature gates", want: Block, blocks: 2},
		{name: "informer off, others on", mutate: func(f *Facts) { f.Gates["YARNContainerInformer"] = false },
			check: "feature gates", want: Block, detail: "YARNMetricsCollector", blocks: 1},
		{name: "allocatable evict without upstream's allocatable triggers", mutate: func(f *Facts) { f.Gates["YARNAllocatableEvict"] = true },
			check: "feature gates", want: Block, fix: "MemoryAllocatableEvict=true", blocks: 1},
		{name: "allocatable evict beside upstream's BE trigger", mutate: func(f *Facts) {
			f.Gates["YARNAllocatableEvict"], f.Gates["MemoryAllocatableEvict"], f.Gates["BEMemoryEvict"] = true, true, true
		}, check: "feature gates", want: Warn, fix: "YARNBEMemoryEvict=true"},
		{name: "memory evict trigger without the YARN memory evict", mutate: func(f *Facts) { f.Gates["YARNMemoryEvictTrigger"] = true },
			check: "feature gates", want: Block, fix: "YARNBEMemoryEvict=true", blocks: 1},
		{name: "RM sync without an RM", mutate: func(f *Facts) { f.Gates["YARNRMNodeResourceSync"] = true },
			check: "feature gates", want: Block, fix: "--yarn-rm-endpoints", blocks: 1},
		{name: "RM sync with an RM", mutate: func(f *Facts) {
			f.Gates["YARNRMNodeResourceSync"] = true
			f.RMEndpoints = []string{"http://rm1:8088"}
		}, check: "NodeManager", want: OK},
		{name: "memory cgroup gate on v2", mutate: func(f *Facts) { f.CgroupV2 = true; f.Gates["YARNMemoryCgroup"] = true }, check: "feature gates", want: Warn},
		{name: "resctrl gate, no BE group", mutate: func(f *Facts) {
			f.Gates["YARNResctrlQoS"] = true
			f.ResctrlCPU, f.ResctrlMounted = true, true
		}, check: "resctrl", want: Warn, fix: "RdtResctrl"},
		{name: "resctrl gate, not mounted", mutate: func(f *Facts) { f.Gates["YARNResctrlQoS"] = true; f.ResctrlCPU = true }, check: "resctrl", want: Warn, fix: "mount -t resctrl"},
		{name: "CPU QoS gate, no kernel support", mutate: func(f *Facts) { f.Gates["YARNCPUQoS"] = true; f.SchedIdle = false }, check: "Group Identity", want: Warn},
		{name: "Memory QoS gate, no files", mutate: func(f *Facts) { f.Gates["YARNMemoryQoS"] = true }, check: "Memory QoS", want: Warn, detail: "nothing to write"},
		{name: "Memory QoS gate, CPU-only YARN", mutate: func(f *Facts) {
			f.Gates["YARNMemoryQoS"] = true
			f.MemoryQoSFiles = []string{"memory.min"}
			f.Managed = []string{"cpu", "cpuacct"}
		}, check: "Memory QoS", want: Warn, fix: "YARNMemoryCgroup"},
		{name: "Memory QoS gate, CPU-only YARN with YARNMemoryCgroup", mutate: func(f *Facts) {
			f.Gates["YARNMemoryQoS"], f.Gates["YARNMemoryCgroup"] = true, true
			f.MemoryQoSFiles = []string{"memory.min"}
			f.Managed = []string{"cpu", "cpuacct"}
		}, check: "Memory QoS", want: OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := goodNode()
			tc.mutate(&f)
			r := Evaluate(f)
			got, ok := finding(r, tc.check, tc.want)
			require.True(t, ok, "no %q finding of at least %v in %+v", tc.check, tc.want, r.Findings)
			assert.Equal(t, tc.want, got.Severity, "%+v", got)
			assert.Contains(t, got.Detail, tc.detail)
			assert.Contains(t, got.Fix, tc.fix)
			assert.Len(t, r.Blocking(), tc.blocks, "%+v", r.Blocking())
			assert.Equal(t, map[bool]int{true: 1, false: 0}[tc.blocks > 0], r.ExitCode())
			for _, f := range r.Findings {
				if f.Severity >= Warn {
					assert.NotEmpty(t, f.Fix, "%s %s says how to fix it", f.Severity, f.Check)
				}
			}
		})
	}
}

func noRoot(f *Facts) {
	for i := range f.Controllers {
		f.Controllers[i].RootExists = false
	}
	f.Containers, f.Managed, f.ManagedFromContainers = 0, nil, false
}

func TestGateEffects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Facts)
		gate   string
		want   string
	}{
		{"informer with NM", func(*Facts) {}, "YARNContainerInformer", "with user, state and requests from http://10.0.0.1:8042"},
		{"informer without NM", func(f *Facts) { f.NM.Err = "refused" }, "YARNContainerInformer", "not reachable"},
		{"collector on CPU-only", func(f *Facts) { f.Managed = []string{"cpu", "cpuacct"} }, "YARNMetricsCollector", "CPU and throttling; memory summed over each container's processes"},
		{"collector without cpuacct", func(f *Facts) {
			f.Managed = []string{"cpu"}
			f.Controllers[0].CoMounted = nil
		}, "YARNMetricsCollector", "its processes' CPU time"},
		{"eBPF falls back", func(f *Facts) { f.EBPFErr = "no BTF" }, "YARNEBPFDiscovery", "inotify"},
		{"memory evict without upstream", func(f *Facts) { f.Gates["YARNBEMemoryEvict"] = true }, "YARNBEMemoryEvict", "nothing: BEMemoryEvict is off"},
		{"memory evict", func(f *Facts) { f.Gates["YARNBEMemoryEvict"], f.Gates["BEMemoryEvict"] = true, true }, "YARNBEMemoryEvict", "memory from their cgroups"},
		{"CPU QoS with sched-idle", func(f *Facts) { f.Gates["YARNCPUQoS"] = true }, "YARNCPUQoS", "cpu.idle"},
		{"CPU QoS with Group Identity", func(f *Facts) { f.Gates["YARNCPUQoS"] = true; f.GroupIdentity = true }, "YARNCPUQoS", "cpu.bvt_warp_ns"},
		{"memory cgroup where YARN makes them", func(f *Facts) { f.Gates["YARNMemoryCgroup"] = true }, "YARNMemoryCgroup", "YARN makes memory cgroups itself"},
		{"memory cgroup on CPU-only", func(f *Facts) { f.Gates["YARNMemoryCgroup"] = true; f.Managed = []string{"cpu"} }, "YARNMemoryCgroup", "moves its processes"},
		{"resctrl without BE group", func(f *Facts) { f.Gates["YARNResctrlQoS"] = true }, "YARNResctrlQoS", "nothing until"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := goodNode()
			tc.mutate(&f)
			var effect string
			for _, g := range Evaluate(f).Gates {
				if g.Gate == tc.gate {
					effect = g.Effect
				}
			}
			assert.Contains(t, effect, tc.want)
		})
	}
	// Only enabled gates are listed, the informer first.
	gates := Evaluate(goodNode()).Gates
	require.Len(t, gates, 3)
	assert.Equal(t, "YARNContainerInformer", gates[0].Gate)
}

// TestEveryGateDescribed keeps the preflight in step with the gates: every
// gate of the plugin set has its own effect (add it to gates.go).
func TestEveryGateDescribed(t *testing.T) {
	f := goodNode()
	for g := range features.Specs {
		assert.NotEqual(t, unknownEffect, gateEffect(string(g), f), "preflight/gates.go does not describe %s", g)
		assert.Contains(t, gateOrder, string(g))
	}
}

func TestReportWrite(t *testing.T) {
	f := goodNode()
	f.Gates["YARNBEMemoryEvict"] = true
	f.NM.Err = "connection refused"
	r := Evaluate(f)
	var b bytes.Buffer
	require.NoError(t, r.Write(&b))
	out := b.String()
	assert.Contains(t, out, "BLOCK  feature gates")
	assert.Contains(t, out, "fix: --feature-gates=...,BEMemoryEvict=true")
	assert.Contains(t, out, "WARN   NodeManager")
	assert.Contains(t, out, "1 blocking problem(s), 1 warning(s).")
	assert.Contains(t, out, "YARNBEMemoryEvict")
	// Fixes are printed only for problems.
	assert.Equal(t, strings.Count(out, "fix: "), 2, out)
}

func TestCheckRoots(t *testing.T) {
	dir := t.TempDir()
	assert.Empty(t, checkRoots(dir, dir).Findings)
	r := checkRoots(dir+"/missing-cgroup", dir+"/missing-proc")
	require.Len(t, r.Blocking(), 2)
	assert.Contains(t, r.Findings[0].Detail, "--cgroup-root-dir")
	assert.Contains(t, r.Findings[1].Detail, "--proc-root-dir")
}
