package deploy

import (
	"encoding/json"
	"encoding/xml"
	"net"
	"os"
	"path/filepath"
	"strconv"
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
// ones the plugin set needs.
func TestYARNSite(t *testing.T) {
	for _, tc := range []struct {
		file   string
		driver system.CgroupDriverType
	}{
		{"yarn-site.cgroupfs.xml", system.Cgroupfs},
		{"yarn-site.systemd.xml", system.Systemd},
	} {
		t.Run(string(tc.driver), func(t *testing.T) {
			props := readYARNSite(t, tc.file)
			withDriver(t, tc.driver)
			h, err := cgroups.ResolveHierarchy("")
			require.NoError(t, err)
			configured, err := cgroups.CleanHierarchyDir(props["yarn.nodemanager.linux-container-executor.cgroups.hierarchy"])
			require.NoError(t, err)
			assert.Equal(t, h.Dir, configured, "the hierarchy is koordlet's default for the %s driver", tc.driver)
			assert.False(t, cgroups.OutsideBestEffort(configured), "below the besteffort QoS cgroup")

			assert.Equal(t, "org.apache.hadoop.yarn.server.nodemanager.LinuxContainerExecutor", props["yarn.nodemanager.container-executor.class"])
			assert.Contains(t, props["yarn.nodemanager.linux-container-executor.resources-handler.class"], "Cgroups")
			assert.Equal(t, "false", props["yarn.nodemanager.linux-container-executor.cgroups.mount"])
			assert.Contains(t, []string{"true", "false"}, props["yarn.nodemanager.resource.memory.enabled"])

			_, port, err := net.SplitHostPort(props["yarn.nodemanager.webapp.address"])
			require.NoError(t, err)
			assert.Equal(t, strconv.Itoa(config.DefaultNMPort), port, "koordlet asks the NodeManager pod on --yarn-nm-port's default")

			assert.Equal(t, strconv.FormatInt(config.DefaultEvictGracePeriod.Milliseconds(), 10), props["yarn.nodemanager.sleep-delay-before-sigkill.ms"])
		})
	}
}

// TestYARNSiteFragmentsDifferOnlyInHierarchy keeps the two fragments in
// step.
func TestYARNSiteFragmentsDifferOnlyInHierarchy(t *testing.T) {
	a, b := readYARNSite(t, "yarn-site.cgroupfs.xml"), readYARNSite(t, "yarn-site.systemd.xml")
	const hierarchy = "yarn.nodemanager.linux-container-executor.cgroups.hierarchy"
	assert.NotEqual(t, a[hierarchy], b[hierarchy])
	delete(a, hierarchy)
	delete(b, hierarchy)
	assert.Equal(t, a, b)
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
