package deploy

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
)

// TestYARNSiteV2DiffersOnlyInTheV2Handler: the cgroup v2 fragment is the
// systemd one with Hadoop 3.5's v2 handler turned on.
func TestYARNSiteV2DiffersOnlyInTheV2Handler(t *testing.T) {
	v2, sys := readYARNSite(t, "yarn-site.v2.xml"), readYARNSite(t, "yarn-site.systemd.xml")
	const key = "yarn.nodemanager.linux-container-executor.cgroups.v2.enabled"
	assert.Equal(t, "true", v2[key])
	delete(v2, key)
	assert.Equal(t, sys, v2)
}

// TestYARNSiteDiscoveryV2 lays a cgroup v2 node out as Hadoop 3.5's v2
// handler does with the v2 fragment — the container's unified cgroup below
// the hierarchy, the controllers it enables in the hierarchy's
// cgroup.subtree_control — and checks what koordlet's discovery resolves:
// the container in koordlet's default hierarchy, its cpu cgroup its own, its
// memory by its own cgroup; with Hadoop's CPU-only default (memory not
// enabled for the containers) its memory charged to the YARN root and
// measured from its processes.
func TestYARNSiteDiscoveryV2(t *testing.T) {
	site := readYARNSite(t, "yarn-site.v2.xml")
	cpuOnly := map[string]string{}
	for k, v := range site {
		cpuOnly[k] = v
	}
	cpuOnly["yarn.nodemanager.resource.memory.enabled"] = "false"
	for _, tc := range []struct {
		name   string
		props  map[string]string
		memory cgroups.MemoryAccounting
	}{
		{"yarn-site.v2.xml", site, cgroups.MemoryByCgroup},
		{"yarn-site.v2.xml, CPU-only (Hadoop's default)", cpuOnly, cgroups.MemoryByProcesses},
	} {
		t.Run(tc.name, func(t *testing.T) {
			helper := system.NewFileTestUtil(t)
			t.Cleanup(helper.Cleanup)
			helper.SetCgroupsV2(true)
			withDriver(t, system.Systemd)
			h, err := cgroups.ResolveHierarchy("")
			require.NoError(t, err)
			configured, err := cgroups.CleanHierarchyDir(tc.props["yarn.nodemanager.linux-container-executor.cgroups.hierarchy"])
			require.NoError(t, err)
			require.Equal(t, h.Dir, configured, "koordlet's default hierarchy")

			// The v2 handler's controllers for the containers.
			var enabled []string
			for _, c := range siteControllers(tc.props) {
				switch c {
				case cgroups.CPU:
					enabled = append(enabled, "cpu")
				case cgroups.Memory:
					enabled = append(enabled, "memory")
				}
			}
			require.Contains(t, enabled, "cpu")
			root := filepath.Join(helper.TempDir, h.Dir)
			require.NoError(t, os.MkdirAll(root, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(root, "cgroup.subtree_control"), []byte(strings.Join(enabled, " ")+"\n"), 0o644))
			const name, pid = "container_1700000000000_0001_01_000002", 4242
			dir := filepath.Join(root, name)
			require.NoError(t, os.MkdirAll(dir, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)+"\n"), 0o644))
			helper.WriteProcSubFileContents(filepath.Join(strconv.Itoa(pid), "cgroup"), "0::/"+h.Dir+"/"+name+"\n")

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

// TestYARNSiteNoCgroups: the fragment for YARN without container cgroups
// (Hadoop before 3.5 on cgroup v2, or the DefaultContainerExecutor) sets
// no cgroups of YARN's, shares every other property with the cgroup
// fragments, and names the gate koordlet needs there.
func TestYARNSiteNoCgroups(t *testing.T) {
	props := readYARNSite(t, "yarn-site.no-cgroups.xml")
	assert.Equal(t, "org.apache.hadoop.yarn.server.nodemanager.DefaultContainerExecutor", props["yarn.nodemanager.container-executor.class"])
	assert.Empty(t, siteControllers(props), "YARN makes no container cgroups")
	sys := readYARNSite(t, "yarn-site.systemd.xml")
	delete(props, "yarn.nodemanager.container-executor.class")
	for k, v := range props {
		if strings.Contains(k, "cgroups") || strings.Contains(k, "resources-handler") {
			t.Errorf("%s: a cgroups setting in the no-cgroups fragment", k)
			continue
		}
		assert.Equal(t, sys[k], v, "%s as in the cgroup fragments", k)
	}
	for _, k := range []string{"yarn.nodemanager.address", "yarn.nodemanager.webapp.address", "yarn.nodemanager.sleep-delay-before-sigkill.ms", "yarn.nodemanager.pmem-check-enabled"} {
		assert.Contains(t, props, k)
	}
	b, err := os.ReadFile(filepath.Join("yarn", "yarn-site.no-cgroups.xml"))
	require.NoError(t, err)
	assert.Contains(t, string(b), string(features.YARNContainerCgroups), "the fragment names the gate these nodes need")
}
