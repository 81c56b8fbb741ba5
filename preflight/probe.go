package preflight

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-base/featuregate"

	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/cgroupwatch"
	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/config"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/hooks/yarnqos"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarninformer"
)

// Options configure Probe.
type Options struct {
	// Config is the plugin set's parsed flags.
	Config *config.Config
	// Pods lists the node's pods, to find the NodeManager pod when
	// --yarn-nm-endpoint is empty (nil: the NodeManager is not looked up).
	Pods func(ctx context.Context) ([]*corev1.Pod, error)
	// OpenEBPF tries to load and attach the discovery's eBPF programs and
	// closes them (nil: the real ones, cgroupwatch.OpenEBPF).
	OpenEBPF func() error
	// BTFPath is the kernel's BTF (default /sys/kernel/btf/vmlinux: what the
	// eBPF loader reads, in koordlet's own mount namespace).
	BTFPath string
	// Cluster reaches the API server for the NodeSLO and the permissions.
	Cluster ClusterOptions
	// JSON prints the report as JSON (Run).
	JSON bool
}

// upstreamGates are koordlet's own gates the YARN gates depend on.
var upstreamGates = []featuregate.Feature{koordfeatures.BEMemoryEvict, koordfeatures.BECPUEvict, koordfeatures.BECPUSuppress,
	koordfeatures.MemoryAllocatableEvict, koordfeatures.CPUAllocatableEvict, koordfeatures.RdtResctrl}

// memoryQoSFiles are the files the Memory QoS applier writes (hooks/yarnqos).
var memoryQoSFiles = []system.ResourceType{
	system.MemoryMinName, system.MemoryLowName, system.MemoryHighName,
	system.MemoryWmarkRatioName, system.MemoryWmarkScaleFactorName, system.MemoryWmarkMinAdjName,
	system.MemoryPriorityName, system.MemoryUsePriorityOomName, system.MemoryOomGroupName,
}

// Probe inspects the node under koordlet's roots (system.Conf) with the
// code the plugins use. Like koordlet's start-up, it sets koordlet's cgroup
// path formatter to the driver the kubepods cgroup's name tells.
func Probe(ctx context.Context, opts Options) Facts {
	cfg := opts.Config
	if cfg == nil {
		cfg = config.NewDefault()
	}
	f := Facts{
		CgroupRoot:  system.Conf.CgroupRootDir,
		ProcRoot:    system.Conf.ProcRootDir,
		SysFSRoot:   system.Conf.SysFSRootDir,
		CgroupV2:    system.GetCurrentCgroupVersion() == system.CgroupVersionV2,
		Gates:       map[string]bool{},
		RMEndpoints: cfg.RM.Endpoints,
	}
	for g := range features.Specs {
		f.Gates[string(g)] = features.Enabled(g)
	}
	for _, g := range upstreamGates {
		f.Gates[string(g)] = koordfeatures.DefaultKoordletFeatureGate.Enabled(g)
	}

	if d := system.GetCgroupDriverFromCgroupName(); d.Validate() {
		f.Driver = string(d)
		system.SetupCgroupPathFormatter(d)
	}
	h, err := cgroups.ResolveHierarchy(cfg.CgroupHierarchy)
	if err != nil {
		f.HierarchyErr = err.Error()
		return probeNM(ctx, opts, cfg, f)
	}
	f.Hierarchy, f.HierarchyFlag = h.Dir, cfg.CgroupHierarchy != ""
	f.OutsideBestEffort = cgroups.OutsideBestEffort(h.Dir)
	f.Controllers = probeControllers(h)
	probeScan(h, &f)
	if _, err := h.NS.Root(cgroups.CPU); err != nil {
		f.NamespaceErr = err.Error()
	} else {
		f.NamespaceRoot, _ = h.NS.Root(cgroups.CPU)
	}

	btf := opts.BTFPath
	if btf == "" {
		btf = "/sys/kernel/btf/vmlinux"
	}
	f.BTF = exists(btf)
	if f.Gates[string(features.YARNEBPFDiscovery)] {
		open := opts.OpenEBPF
		if open == nil {
			open = openEBPF
		}
		f.EBPFTried = true
		if err := open(); err != nil {
			f.EBPFErr = err.Error()
		}
	}
	if f.CgroupV2 {
		f.CgroupKill = exists(filepath.Join(h.RootDir(cgroups.CPU), "cgroup.kill")) || exists(filepath.Join(h.CgroupRoot, "cgroup.kill"))
	} else {
		f.Freezer = exists(filepath.Join(h.CgroupRoot, "freezer", "cgroup.procs"))
	}

	f.ResctrlCPU, _ = system.IsSupportResctrl()
	f.ResctrlMounted = exists(filepath.Join(system.GetResctrlSubsystemDirPath(), system.ResctrlSchemataName))
	f.ResctrlBEGroup = exists(system.GetResctrlGroupRootDirPath(yarnqos.BEResctrlGroup))

	f.GroupIdentity = supported(system.CPUBVTWarpNsName, h.Dir)
	f.SchedIdle = supported(system.CPUIdleName, h.Dir)
	for _, t := range memoryQoSFiles {
		if supported(t, h.Dir) {
			f.MemoryQoSFiles = append(f.MemoryQoSFiles, string(t))
		}
	}
	for _, r := range []string{"cpu", "memory", "io"} {
		if _, err := os.ReadFile(filepath.Join(f.ProcRoot, "pressure", r)); err == nil {
			f.PSI = true
		} else {
			f.PSI = false
			break
		}
	}
	return probeNM(ctx, opts, cfg, f)
}

// openEBPF loads and attaches the discovery's programs, then closes them.
func openEBPF() error {
	e, err := cgroupwatch.OpenEBPF(0)
	if err != nil {
		return err
	}
	e.Close()
	return nil
}

// supported checks koordlet's support of resource type t (of this host's
// cgroup version) with the resource's own check, uncached, at the YARN
// hierarchy (or, for files checked in kubepods, there).
func supported(t system.ResourceType, dir string) bool {
	r, err := system.GetCgroupResource(t)
	if err != nil {
		return false
	}
	if cr, ok := r.(*system.CgroupResource); ok && cr.CheckSupported != nil {
		ok, _ := cr.CheckSupported(cr, dir)
		return ok
	}
	ok, _ := r.IsSupported(dir)
	return ok
}

// probeControllers reads each tracked controller's mount and the YARN
// hierarchy in it.
func probeControllers(h cgroups.Hierarchy) []ControllerFacts {
	if h.V2 {
		return []ControllerFacts{{
			Name: "unified", MountDir: h.CgroupRoot,
			Mounted:    exists(filepath.Join(h.CgroupRoot, "cgroup.controllers")),
			RootDir:    h.RootDir(cgroups.CPU),
			RootExists: isDir(h.RootDir(cgroups.CPU)),
		}}
	}
	var out []ControllerFacts
	for c := cgroups.Controller(0); c < cgroups.NumControllers; c++ {
		cf := ControllerFacts{Name: c.String(), RootDir: h.RootDir(c)}
		mount := filepath.Join(h.CgroupRoot, c.String())
		if real, err := filepath.EvalSymlinks(mount); err == nil {
			cf.MountDir = real
			cf.Mounted = isDir(real)
			for _, other := range strings.Split(filepath.Base(real), ",") {
				if other != c.String() {
					cf.CoMounted = append(cf.CoMounted, other)
				}
			}
		}
		cf.RootExists = isDir(cf.RootDir)
		out = append(out, cf)
	}
	return out
}

// probeScan runs the informer's scan once and records the containers and
// the controllers YARN manages.
func probeScan(h cgroups.Hierarchy, f *Facts) {
	res, err := cgroups.NewScanner(h).Scan()
	if err != nil {
		f.ScanErr = err.Error()
	}
	f.Containers = len(res.Containers)
	managed := map[string]bool{}
	for _, c := range res.Containers {
		for ctrl, ref := range c.Cgroups {
			if ref.Owned {
				managed[cgroups.Controller(ctrl).String()] = true
			}
		}
	}
	f.ManagedFromContainers = len(managed) > 0
	if !f.ManagedFromContainers {
		switch {
		case h.V2:
			if v, ok := h.ReadV2Controllers(); ok {
				for c := cgroups.Controller(0); c < cgroups.NumControllers; c++ {
					if v.Enabled(c) {
						managed[c.String()] = true
					}
				}
			}
		default:
			for _, cf := range f.Controllers {
				if cf.RootExists {
					managed[cf.Name] = true
				}
			}
		}
	}
	for name := range managed {
		f.Managed = append(f.Managed, name)
	}
	sort.Slice(f.Managed, func(i, j int) bool {
		a, _ := cgroups.ParseController(f.Managed[i])
		b, _ := cgroups.ParseController(f.Managed[j])
		return a < b
	})
}

// probeNM finds the NodeManager as the informer does and asks its node info.
func probeNM(ctx context.Context, opts Options, cfg *config.Config, f Facts) Facts {
	hierarchy := f.Hierarchy
	if hierarchy == "" {
		if h, err := cgroups.ResolveHierarchy(""); err == nil {
			hierarchy = h.Dir
		}
	}
	f.Cluster = probeCluster(ctx, opts.Cluster, cfg, hierarchy)
	nm := &f.NM
	switch {
	case cfg.NMEndpoint != "":
		nm.Endpoint, nm.Source = cfg.NMEndpoint, "--yarn-nm-endpoint"
	case opts.Pods == nil:
		nm.FindErr = "no pod list (no API server access) and no --yarn-nm-endpoint"
		return f
	default:
		pods, err := opts.Pods(ctx)
		if err != nil {
			nm.FindErr = "list the node's pods: " + err.Error()
			return f
		}
		pod, endpoint, err := yarninformer.LocateNodeManager(pods, cfg.NMPodSelector, cfg.NMPort)
		if err != nil {
			nm.FindErr = err.Error()
			return f
		}
		nm.Endpoint, nm.Source = endpoint, "pod "+pod
	}
	nm.Checked = true
	client, err := yarn.NewNMClient(nm.Endpoint, cfg.NMTimeout, cfg.NMMaxResponseBytes)
	if err != nil {
		nm.Err = err.Error()
		return f
	}
	info, err := client.NodeInfo(ctx)
	if err != nil {
		nm.Err = err.Error()
		return f
	}
	nm.Version, nm.NodeID = info.Version, info.NodeID
	return f
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
