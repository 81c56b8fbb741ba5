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
// systemd one with Hadoop 3.5's v2 handler turned on and its unified
// hierarchy named (TestYARNSiteDiscoveryV2 checks where it leads).
func TestYARNSiteV2DiffersOnlyInTheV2Handler(t *testing.T) {
	v2, sys := readYARNSite(t, "yarn-site.v2.xml"), readYARNSite(t, "yarn-site.systemd.xml")
	assert.Equal(t, "true", v2[siteV2Enabled])
	assert.NotEmpty(t, v2[siteV2MountPath])
	delete(v2, siteV2Enabled)
	delete(v2, siteV2MountPath)
	assert.Equal(t, sys, v2)
}

// v2MountPath is where Hadoop 3.5's v2 handler looks for the unified
// hierarchy with these yarn-site settings: cgroups.v2.mount-path, else
// cgroups.mount-path (Hadoop's CGroupsMountConfig).
func v2MountPath(props map[string]string) string {
	if p := props[siteV2MountPath]; p != "" {
		return p
	}
	return props[siteMountPath]
}

// TestYARNSiteDiscoveryV2 lays a cgroup v2 node out as Hadoop 3.5's v2
// handler does with the v2 fragment — the container's unified cgroup at
// <v2 mount path>/<hierarchy>/<container> as the NodeManager sees it, which
// nodemanager-pod.yaml's mount puts on the host; the controllers it enables
// in the hierarchy's cgroup.subtree_control — and checks what koordlet's
// discovery resolves: the container in koordlet's default hierarchy, its
// cpu cgroup its own, its memory by its own cgroup; with Hadoop's CPU-only
// default (memory not enabled for the containers) its memory charged to the
// YARN root and measured from its processes.
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
			configured, err := cgroups.CleanHierarchyDir(tc.props[siteHierarchy])
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
			const name, pid = "container_1700000000000_0001_01_000002", 4242
			// The container's cgroup on the host, relative to the host's
			// cgroup root (koordlet's --cgroup-root-dir, helper.TempDir
			// here).
			host := nmHostPath(t, filepath.Join(v2MountPath(tc.props), tc.props[siteHierarchy], name))
			rel, err := filepath.Rel(hostCgroupRoot, host)
			require.NoError(t, err)
			require.False(t, rel == ".." || strings.HasPrefix(rel, "../"), "%s is below the host's cgroup root %s", host, hostCgroupRoot)
			dir := filepath.Join(helper.TempDir, rel)
			root := filepath.Dir(dir)
			require.NoError(t, os.MkdirAll(dir, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(root, "cgroup.subtree_control"), []byte(strings.Join(enabled, " ")+"\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)+"\n"), 0o644))
			helper.WriteProcSubFileContents(filepath.Join(strconv.Itoa(pid), "cgroup"), "0::/"+rel+"\n")

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
	assert.Equal(t, dceClass, props[siteExecutorClass])
	assert.Empty(t, siteControllers(props), "YARN makes no container cgroups")
	sys := readYARNSite(t, "yarn-site.systemd.xml")
	delete(props, siteExecutorClass)
	for k, v := range props {
		if strings.Contains(k, "cgroups") || strings.Contains(k, "resources-handler") {
			t.Errorf("%s: a cgroups setting in the no-cgroups fragment", k)
			continue
		}
		assert.Equal(t, sys[k], v, "%s as in the cgroup fragments", k)
	}
	for _, k := range []string{"yarn.nodemanager.address", "yarn.nodemanager.webapp.address", "yarn.nodemanager.sleep-delay-before-sigkill.ms", "yarn.nodemanager.pmem-check-enabled", siteVmemCheck} {
		assert.Contains(t, props, k)
	}
	b, err := os.ReadFile(filepath.Join("yarn", "yarn-site.no-cgroups.xml"))
	require.NoError(t, err)
	assert.Contains(t, string(b), string(features.YARNContainerCgroups), "the fragment names the gate these nodes need")
}
