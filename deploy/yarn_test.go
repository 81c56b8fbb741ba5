package deploy

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/koordinator-sh/koordinator/apis/configuration"
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/yarnusage"
	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/config"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarninformer"
)

// yarnSite is a Hadoop configuration file.
type yarnSite struct {
	Properties []struct {
		Name        string `xml:"name"`
		Value       string `xml:"value"`
		Description string `xml:"description"`
	} `xml:"property"`
}

func readYARNSite(t *testing.T, name string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("yarn", name))
	require.NoError(t, err)
	var site yarnSite
	require.NoError(t, xml.Unmarshal(b, &site))
	props := map[string]string{}
	for _, p := range site.Properties {
		_, dup := props[p.Name]
		require.False(t, dup, "%s sets %s twice", name, p.Name)
		assert.NotEmpty(t, p.Description, "%s: %s says why", name, p.Name)
		props[p.Name] = p.Value
	}
	return props
}

// Property names the tests below check more than once.
const (
	siteExecutorClass = "yarn.nodemanager.container-executor.class"
	siteExecutorGroup = "yarn.nodemanager.linux-container-executor.group"
	siteHierarchy     = "yarn.nodemanager.linux-container-executor.cgroups.hierarchy"
	siteMount         = "yarn.nodemanager.linux-container-executor.cgroups.mount"
	siteMountPath     = "yarn.nodemanager.linux-container-executor.cgroups.mount-path"
	siteV2Enabled     = "yarn.nodemanager.linux-container-executor.cgroups.v2.enabled"
	siteV2MountPath   = "yarn.nodemanager.linux-container-executor.cgroups.v2.mount-path"
	siteVmemCheck     = "yarn.nodemanager.vmem-check-enabled"
	lceClass          = "org.apache.hadoop.yarn.server.nodemanager.LinuxContainerExecutor"
	dceClass          = "org.apache.hadoop.yarn.server.nodemanager.DefaultContainerExecutor"
)

// lceFragments are the yarn-site fragments with the LinuxContainerExecutor:
// each needs the executor's group, container-executor.cfg and the setuid
// binary.
var lceFragments = []string{"yarn-site.cgroupfs.xml", "yarn-site.systemd.xml", "yarn-site.cpu-only.xml", "yarn-site.v2.xml"}

// withDriver sets koordlet's cgroup path formatter to driver for the test,
// as koordlet does at start-up from the node's cgroup names.
func withDriver(t *testing.T, driver system.CgroupDriverType) {
	t.Helper()
	prev := system.CgroupPathFormatter
	system.SetupCgroupPathFormatter(driver)
	t.Cleanup(func() { system.CgroupPathFormatter = prev })
}

// TestYARNSite checks each fragment against koordlet-yarn's code: the
// hierarchy it names is the one koordlet resolves by default for that
// driver (framework/cgroups.ResolveHierarchy, no --yarn-cgroup-hierarchy),
// the NodeManager's web port is the informer's default, YARN's SIGKILL delay
// is the evict grace period, and the executor and cgroups settings are the
// ones the plugin set needs; the LinuxContainerExecutor's group is
// container-executor.cfg's, and the NodeManager's virtual memory check is
// off.
func TestYARNSite(t *testing.T) {
	// The kubelet's cgroup driver each fragment is written for.
	drivers := map[string]system.CgroupDriverType{
		"yarn-site.cgroupfs.xml": system.Cgroupfs,
		"yarn-site.systemd.xml":  system.Systemd,
		"yarn-site.cpu-only.xml": system.Systemd,
		"yarn-site.v2.xml":       system.Systemd,
	}
	for _, file := range lceFragments {
		driver, ok := drivers[file]
		require.True(t, ok, "%s: its driver", file)
		t.Run(file, func(t *testing.T) {
			props := readYARNSite(t, file)
			withDriver(t, driver)
			h, err := cgroups.ResolveHierarchy("")
			require.NoError(t, err)
			configured, err := cgroups.CleanHierarchyDir(props[siteHierarchy])
			require.NoError(t, err)
			assert.Equal(t, h.Dir, configured, "the hierarchy is koordlet's default for the %s driver", driver)
			assert.False(t, cgroups.OutsideBestEffort(configured), "below the besteffort QoS cgroup")

			assert.Equal(t, lceClass, props[siteExecutorClass])
			assert.Equal(t, readExecutorCfg(t)[""][siteExecutorGroup], props[siteExecutorGroup], "the executor's group is container-executor.cfg's")
			assert.Equal(t, "false", props[siteVmemCheck], "no virtual memory check")
			assert.Contains(t, props["yarn.nodemanager.linux-container-executor.resources-handler.class"], "Cgroups")
			assert.Equal(t, "false", props[siteMount])
			assert.Contains(t, []string{"true", "false"}, props["yarn.nodemanager.resource.memory.enabled"])

			_, port, err := net.SplitHostPort(props["yarn.nodemanager.webapp.address"])
			require.NoError(t, err)
			assert.Equal(t, strconv.Itoa(config.DefaultNMPort), port, "koordlet asks the NodeManager pod on --yarn-nm-port's default")

			assert.Equal(t, strconv.FormatInt(config.DefaultEvictGracePeriod.Milliseconds(), 10), props["yarn.nodemanager.sleep-delay-before-sigkill.ms"])
		})
	}
}

// TestYARNSiteFragmentsDifferOnlyInHierarchy keeps the fragments in step:
// the two drivers' differ only in the hierarchy, the CPU-only one from the
// systemd one only in the memory cgroups.
func TestYARNSiteFragmentsDifferOnlyInHierarchy(t *testing.T) {
	a, b := readYARNSite(t, "yarn-site.cgroupfs.xml"), readYARNSite(t, "yarn-site.systemd.xml")
	assert.NotEqual(t, a[siteHierarchy], b[siteHierarchy])
	delete(a, siteHierarchy)
	delete(b, siteHierarchy)
	assert.Equal(t, a, b)

	sys, cpu := readYARNSite(t, "yarn-site.systemd.xml"), readYARNSite(t, "yarn-site.cpu-only.xml")
	for _, k := range []string{"yarn.nodemanager.resource.memory.enabled", "yarn.nodemanager.resource.memory.enforced"} {
		delete(sys, k)
		delete(cpu, k)
	}
	assert.Equal(t, sys, cpu)
}

// TestNodeManagerPodLabels checks the NodeManager pod snippet is selected by
// koordlet's default --yarn-nm-pod-selector.
func TestNodeManagerPodLabels(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("yarn", "nodemanager-pod.yaml"))
	require.NoError(t, err)
	var pod corev1.Pod
	require.NoError(t, yaml.UnmarshalStrict(b, &pod))
	sel, err := labels.Parse(config.DefaultNMPodSelector)
	require.NoError(t, err)
	assert.True(t, sel.Matches(labels.Set(pod.Labels)), "labels %v must match %q", pod.Labels, config.DefaultNMPodSelector)
	assert.Equal(t, "BE", pod.Labels["koordinator.sh/qosClass"])
}

// TestSLOControllerConfigHostApplication checks that, with the
// slo-controller-config snippet in the NodeSLO, koordlet-yarn's accounting
// (the collector's own check) sees the default YARN hierarchy of each driver
// covered and counted as BE.
func TestSLOControllerConfigHostApplication(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("yarn", "slo-controller-config.patch.yaml"))
	require.NoError(t, err)
	var cm corev1.ConfigMap
	require.NoError(t, yaml.UnmarshalStrict(b, &cm))
	raw, ok := cm.Data[configuration.HostApplicationConfigKey]
	require.True(t, ok, "data.%s", configuration.HostApplicationConfigKey)
	var cfg configuration.HostApplicationCfg
	require.NoError(t, json.Unmarshal([]byte(raw), &cfg))
	require.NotEmpty(t, cfg.Applications)

	for _, driver := range []system.CgroupDriverType{system.Cgroupfs, system.Systemd} {
		t.Run(string(driver), func(t *testing.T) {
			withDriver(t, driver)
			h, err := cgroups.ResolveHierarchy("")
			require.NoError(t, err)
			slo := &slov1alpha1.NodeSLO{Spec: slov1alpha1.NodeSLOSpec{HostApplications: cfg.Applications}}
			acc := yarnusage.CheckAccounting(slo, h.Dir)
			assert.True(t, acc.Covered, "%+v", acc)
			assert.True(t, acc.AsBE, "%+v", acc)
		})
	}
}

// hadoopYARNChartSite is what Koordinator's hadoop-yarn chart v3.3.3 sets in
// its yarn-site.xml (templates/hadoop-configmap.yaml; its bootstrap.sh
// writes container-executor.cfg with the same group), besides the
// hierarchy its values give.
var hadoopYARNChartSite = map[string]string{
	siteExecutorClass: lceClass,
	"yarn.nodemanager.linux-container-executor.resources-handler.class": "org.apache.hadoop.yarn.server.nodemanager.util.CgroupsLCEResourcesHandler",
	siteMount:     "false",
	siteMountPath: "/host-cgroup/",
	"yarn.nodemanager.resource.memory.enabled": "true",
	siteExecutorGroup:                          "hadoop",
	siteVmemCheck:                              "false",
}

// TestHadoopYARNChartValues: the values for Koordinator's hadoop-yarn chart
// name koordlet's default hierarchy for the systemd driver and make the
// NodeManager pod BE; the chart's own settings agree with our fragments'
// (mount path, handler, memory cgroups).
func TestHadoopYARNChartValues(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("yarn", "hadoop-yarn-chart.values.yaml"))
	require.NoError(t, err)
	var v struct {
		YARN struct {
			NodeManager struct {
				UseBatchResource bool `json:"useBatchResource"`
			} `json:"nodeManager"`
			Config struct {
				YARNSite struct {
					CgroupsHierarchy string `json:"cgroupsHierarchy"`
				} `json:"yarnSite"`
			} `json:"config"`
		} `json:"yarn"`
	}
	require.NoError(t, yaml.UnmarshalStrict(b, &v))
	assert.True(t, v.YARN.NodeManager.UseBatchResource)
	withDriver(t, system.Systemd)
	h, err := cgroups.ResolveHierarchy("")
	require.NoError(t, err)
	dir, err := cgroups.CleanHierarchyDir(v.YARN.Config.YARNSite.CgroupsHierarchy)
	require.NoError(t, err)
	assert.Equal(t, h.Dir, dir)

	ours := readYARNSite(t, "yarn-site.systemd.xml")
	for k, want := range hadoopYARNChartSite {
		assert.Equal(t, want, ours[k], "our fragment and the chart agree on %s", k)
	}

	// The chart's Hadoop 3.3.3 has no cgroup v2 handler: its values say
	// what such a node needs instead.
	assert.Contains(t, string(b), "yarn-site.no-cgroups.xml")
	assert.Contains(t, string(b), string(features.YARNContainerCgroups))
}

// siteControllers is what the LinuxContainerExecutor makes a cgroup of per
// container with these yarn-site settings (Hadoop's ResourceHandlerModule:
// cpu with CgroupsLCEResourcesHandler or yarn.nodemanager.resource.cpu.enabled,
// memory with yarn.nodemanager.resource.memory.enabled), on cgroup v1.
func siteControllers(props map[string]string) []cgroups.Controller {
	var out []cgroups.Controller
	if strings.HasSuffix(props["yarn.nodemanager.linux-container-executor.resources-handler.class"], ".CgroupsLCEResourcesHandler") ||
		props["yarn.nodemanager.resource.cpu.enabled"] == "true" {
		out = append(out, cgroups.CPU, cgroups.CPUAcct)
	}
	if props["yarn.nodemanager.resource.memory.enabled"] == "true" {
		out = append(out, cgroups.Memory)
	}
	return out
}

// TestYARNSiteDiscovery lays a node out as the NodeManager would with each
// configuration (our fragments as they are, the same with Hadoop's CPU-only
// default, and Koordinator's hadoop-yarn chart) and checks what koordlet's
// discovery resolves there: the container found in the hierarchy koordlet
// takes by default, its cpu cgroup its own, its memory measured by its
// memory cgroup or, CPU-only, by its processes.
func TestYARNSiteDiscovery(t *testing.T) {
	cpuOnly := readYARNSite(t, "yarn-site.cpu-only.xml")
	require.Equal(t, "false", cpuOnly["yarn.nodemanager.resource.memory.enabled"])
	chart := map[string]string{siteHierarchy: "/kubepods.slice/kubepods-besteffort.slice/hadoop-yarn"}
	for k, v := range hadoopYARNChartSite {
		chart[k] = v
	}
	for _, tc := range []struct {
		name   string
		driver system.CgroupDriverType
		props  map[string]string
		memory cgroups.MemoryAccounting
	}{
		{"yarn-site.cgroupfs.xml", system.Cgroupfs, readYARNSite(t, "yarn-site.cgroupfs.xml"), cgroups.MemoryByCgroup},
		{"yarn-site.systemd.xml", system.Systemd, readYARNSite(t, "yarn-site.systemd.xml"), cgroups.MemoryByCgroup},
		{"yarn-site.cpu-only.xml (Hadoop's default)", system.Systemd, cpuOnly, cgroups.MemoryByProcesses},
		{"hadoop-yarn chart", system.Systemd, chart, cgroups.MemoryByCgroup},
	} {
		t.Run(tc.name, func(t *testing.T) {
			helper := system.NewFileTestUtil(t)
			t.Cleanup(helper.Cleanup)
			helper.SetCgroupsV2(false)
			withDriver(t, tc.driver)
			h, err := cgroups.ResolveHierarchy("")
			require.NoError(t, err)
			configured, err := cgroups.CleanHierarchyDir(tc.props[siteHierarchy])
			require.NoError(t, err)
			require.Equal(t, h.Dir, configured, "koordlet's default hierarchy")

			const name, pid = "container_1700000000000_0001_01_000002", 4242
			ctrls := siteControllers(tc.props)
			require.NotEmpty(t, ctrls)
			for _, c := range ctrls {
				dir := filepath.Join(h.RootDir(c), name)
				require.NoError(t, os.MkdirAll(dir, 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte("4242\n"), 0o644))
			}
			// The process's own view: the NodeManager pod's memory cgroup
			// where YARN made none.
			memory := "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podnm.slice/cri-containerd-nm.scope"
			if tc.memory == cgroups.MemoryByCgroup {
				memory = "/" + h.Dir + "/" + name
			}
			helper.WriteProcSubFileContents(filepath.Join(strconv.Itoa(pid), "cgroup"),
				"5:memory:"+memory+"\n4:cpu,cpuacct:/"+h.Dir+"/"+name+"\n")
			res, err := cgroups.NewScanner(h).Scan()
			require.NoError(t, err)
			require.True(t, res.RootFound)
			require.Len(t, res.Containers, 1)
			c := res.Containers[0]
			assert.Equal(t, name, c.Name)
			assert.True(t, c.Cgroups[cgroups.CPU].Owned, "its own cpu cgroup")
			assert.Equal(t, tc.memory, c.Cgroups.MemoryAccounting())
		})
	}
}

// TestNodeManagerPodMountsTheFragmentsMountPath: the NodeManager pod snippet
// mounts the host's cgroups where the fragments (and Koordinator's
// hadoop-yarn chart) tell the NodeManager to find them, and the annotation
// it names is the one koordlet reads.
func TestNodeManagerPodMountsTheFragmentsMountPath(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("yarn", "nodemanager-pod.yaml"))
	require.NoError(t, err)
	var pod corev1.Pod
	require.NoError(t, yaml.UnmarshalStrict(b, &pod))
	mountPath := readYARNSite(t, "yarn-site.systemd.xml")[siteMountPath]
	require.Len(t, pod.Spec.Containers, 1)
	var volume string
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		if m.MountPath == mountPath {
			volume = m.Name
		}
	}
	require.NotEmpty(t, volume, "a mount at %s", mountPath)
	var host string
	for _, v := range pod.Spec.Volumes {
		if v.Name == volume && v.HostPath != nil {
			host = v.HostPath.Path
		}
	}
	assert.Equal(t, "/sys/fs/cgroup/", host)
	assert.Contains(t, string(b), yarninformer.NodeIDAnnotation+":", "the node id annotation koordlet reads")
}

// hostCgroupRoot is where the host mounts its cgroups: the NodeManager pod
// mounts it (nodemanager-pod.yaml) and so does koordlet (its
// --cgroup-root-dir, which the tests' koordlet FileTestUtil stands in for).
const hostCgroupRoot = "/sys/fs/cgroup"

func readNodeManagerPod(t *testing.T) corev1.Pod {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("yarn", "nodemanager-pod.yaml"))
	require.NoError(t, err)
	var pod corev1.Pod
	require.NoError(t, yaml.UnmarshalStrict(b, &pod))
	require.Len(t, pod.Spec.Containers, 1)
	return pod
}

// nmHostPath maps a path as the NodeManager sees it in its pod to the
// host's, through the hostPath volumes nodemanager-pod.yaml mounts.
func nmHostPath(t *testing.T, nmPath string) string {
	t.Helper()
	pod := readNodeManagerPod(t)
	hostPaths := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	nmPath = filepath.Clean(nmPath)
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		rel, err := filepath.Rel(filepath.Clean(m.MountPath), nmPath)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		host, ok := hostPaths[m.Name]
		require.True(t, ok, "the NodeManager pod's mount %s is a hostPath volume", m.MountPath)
		return filepath.Join(host, rel)
	}
	require.Failf(t, "not on the host", "%s is on none of the NodeManager pod's mounts", nmPath)
	return ""
}

// executorCfg is a container-executor.cfg: each section's keys and values,
// "" the section of the lines before the first [name].
type executorCfg map[string]map[string]string

// parseExecutorCfg reads a container-executor.cfg by the rules of Hadoop's
// container-executor (configuration.c): a line that begins with '#' is a
// comment and a '#' later in a line ends it; "[name]" opens a section; any
// other non-empty line is key=value (both trimmed; the value ends at the
// next '='), a key with no value is skipped, and a line without '=' (blanks
// alone included) stops the executor. A key set twice in a section is an
// error here (Hadoop would take the first).
func parseExecutorCfg(text string) (executorCfg, error) {
	cfg := executorCfg{"": {}}
	section := ""
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line, _, _ = strings.Cut(line, "#")
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = line[1 : len(line)-1]
			if section == "" {
				return nil, fmt.Errorf("line %d: empty section name", i+1)
			}
			if cfg[section] == nil {
				cfg[section] = map[string]string{}
			}
			continue
		}
		if !strings.Contains(line, "=") {
			return nil, fmt.Errorf("line %d %q: no '=' (container-executor exits on it)", i+1, line)
		}
		fields := strings.FieldsFunc(line, func(r rune) bool { return r == '=' })
		if len(fields) < 2 {
			continue
		}
		key, value := strings.TrimSpace(fields[0]), strings.TrimSpace(fields[1])
		if _, dup := cfg[section][key]; dup {
			return nil, fmt.Errorf("line %d: %s set twice in section %q", i+1, key, section)
		}
		cfg[section][key] = value
	}
	return cfg, nil
}

func readExecutorCfg(t *testing.T) executorCfg {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("yarn", "container-executor.cfg"))
	require.NoError(t, err)
	cfg, err := parseExecutorCfg(string(b))
	require.NoError(t, err)
	return cfg
}

// TestParseExecutorCfg: the reader takes what Hadoop's container-executor
// takes and refuses what stops it.
func TestParseExecutorCfg(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       executorCfg
		err        string
	}{
		{
			name: "sections, comments, empty values",
			text: "# c\nyarn.nodemanager.linux-container-executor.group=hadoop\nbanned.users=#none\nmin.user.id = 1000 # trailing\n\n[cgroups]\nroot=/host-cgroup\n",
			want: executorCfg{"": {siteExecutorGroup: "hadoop", "min.user.id": "1000"}, "cgroups": {"root": "/host-cgroup"}},
		},
		{name: "blanks alone", text: "a=b\n  \n", err: "no '='"},
		{name: "an indented comment", text: "  # c\n", err: "no '='"},
		{name: "a section with a trailing blank", text: "[cgroups] \n", err: "no '='"},
		{name: "no value separator", text: "feature.tc.enabled\n", err: "no '='"},
		{name: "set twice", text: "a=b\na=c\n", err: "set twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseExecutorCfg(tc.text)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestLCEFragmentsListed: every fragment with the LinuxContainerExecutor is
// in lceFragments, so that the checks of the executor's prerequisites cover
// it; the others use the DefaultContainerExecutor.
func TestLCEFragmentsListed(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("yarn", "yarn-site.*.xml"))
	require.NoError(t, err)
	var lce []string
	for _, f := range files {
		name := filepath.Base(f)
		switch class := readYARNSite(t, name)[siteExecutorClass]; class {
		case lceClass:
			lce = append(lce, name)
		case dceClass:
		default:
			t.Errorf("%s: executor %q", name, class)
		}
	}
	assert.ElementsMatch(t, lceFragments, lce)
}

// TestContainerExecutorCfg checks the container-executor.cfg example
// against the fragments: the NodeManager's group is theirs (and the
// hadoop-yarn chart's), the user checks Hadoop documents are there, the
// executor mounts no cgroups as the NodeManager mounts none, and its
// [cgroups] root and hierarchy are the fragments' mount path and
// hierarchy (systemd's, koordlet's default for that driver).
func TestContainerExecutorCfg(t *testing.T) {
	cfg := readExecutorCfg(t)
	top := cfg[""]
	group := top[siteExecutorGroup]
	require.NotEmpty(t, group)
	assert.Equal(t, hadoopYARNChartSite[siteExecutorGroup], group, "the hadoop-yarn chart's group")
	assert.Contains(t, top, "banned.users")
	minUID, err := strconv.Atoi(top["min.user.id"])
	require.NoError(t, err, "min.user.id")
	assert.GreaterOrEqual(t, minUID, 1000, "system accounts cannot run containers")
	assert.Equal(t, "0", top["feature.mount-cgroup.enabled"])

	cg := cfg["cgroups"]
	require.NotNil(t, cg, "[cgroups]")
	for _, file := range lceFragments {
		props := readYARNSite(t, file)
		assert.Equal(t, group, props[siteExecutorGroup], "%s: the executor's group", file)
		assert.Equal(t, "false", props[siteMount], "%s: no cgroup mounting", file)
		assert.Equal(t, filepath.Clean(props[siteMountPath]), filepath.Clean(cg["root"]), "%s: [cgroups] root is the mount path", file)
	}
	sys := readYARNSite(t, "yarn-site.systemd.xml")
	want, err := cgroups.CleanHierarchyDir(sys[siteHierarchy])
	require.NoError(t, err)
	got, err := cgroups.CleanHierarchyDir(cg["yarn-hierarchy"])
	require.NoError(t, err)
	assert.Equal(t, want, got, "[cgroups] yarn-hierarchy is the fragments' hierarchy")
	withDriver(t, system.Systemd)
	h, err := cgroups.ResolveHierarchy("")
	require.NoError(t, err)
	assert.Equal(t, h.Dir, got, "koordlet's default hierarchy for the systemd driver")
	assert.Equal(t, filepath.Join(hostCgroupRoot, "devices", h.Dir), nmHostPath(t, filepath.Join(cg["root"], "devices", cg["yarn-hierarchy"])),
		"the executor's cgroup writes land in the host's YARN hierarchy")
}
