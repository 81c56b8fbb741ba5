// Command demo brings the node in a box up (a real kube-apiserver and etcd,
// a kubelet stub, a YARN NodeManager emulator launching real processes in
// real cgroups, and bin/koordlet from this repository), runs a short
// narrated scenario and tears everything down. It needs root and cgroup v1.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/koordinator-sh/koordinator/apis/configuration"
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"

	koordletyarn "github.com/koordlet-yarn/koordlet-yarn"
	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

func main() {
	kerneltest.RunHelperIfRequested() // container workloads re-exec this binary
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	step("building bin/koordlet and the cached kube-apiserver and etcd")
	top, err := nodebox.Prepare(os.Stderr)
	if err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	step("starting the node in a box: etcd, kube-apiserver, CRDs, node, NodeSLO, kubelet stub, NodeManager emulator, koordlet")
	start := time.Now()
	box, err := nodebox.Start(ctx, nodebox.Options{Top: top,
		KoordletArgs: []string{"--feature-gates=BEMemoryEvict=true,YARNBEMemoryEvict=true,YARNNodeManagerGuard=true,YARNCPUQoS=true",
			"--yarn-qos-reconcile-interval=2s"}})
	if err != nil {
		return err
	}
	defer func() {
		step("tearing down")
		box.Stop()
		fmt.Println("  every process, cgroup and file of the box is gone")
	}()
	fmt.Printf("  up in %.1fs; koordlet log: %s\n", time.Since(start).Seconds(), box.KoordletLog())

	apps, err := recommendedHostApps(top)
	if err != nil {
		return err
	}
	step("NodeSLO as docs/metrics.md recommends: the YARN hierarchy a BE host application (" + hostAppsFile +
		", which koord-manager copies into every NodeSLO); the BE class asks for sched-idle (cpuPolicy coreSched, beClass.cpuQOS.schedIdle=1)")
	if err := box.UpdateNodeSLO(ctx, func(s *slov1alpha1.NodeSLOSpec) { demoNodeSLO(s, apps) }); err != nil {
		return err
	}

	step("a Spark job: the ApplicationMaster (it forks a child), an executor burning a CPU, an executor holding 256 MiB; a second job is still localizing")
	launch := func(s nmemu.Spec) string {
		id, err := box.NM.Launch(s)
		if err != nil {
			fmt.Println("  launch failed:", err)
		}
		return id
	}
	launch(nmemu.Spec{AppID: 42, Attempt: 1, Sequence: 1, User: "spark", MemoryMB: 1024, VCores: 1, Script: "sleep 3600 & exec sleep 3600"})
	ex1 := launch(nmemu.Spec{AppID: 42, Attempt: 1, Sequence: 2, User: "spark", MemoryMB: 4096, VCores: 2, Script: kerneltest.HelperScript("burn")})
	launch(nmemu.Spec{AppID: 42, Attempt: 1, Sequence: 3, User: "spark", MemoryMB: 4096, VCores: 2, Opportunistic: true, Script: kerneltest.HelperScript("alloc=256")})
	go launch(nmemu.Spec{AppID: 43, Attempt: 1, Sequence: 1, User: "hive", MemoryMB: 2048, VCores: 1, Localize: 6 * time.Second, Script: "exec sleep 3600"})
	if err := wait(ctx, 4*time.Second); err != nil {
		return err
	}
	if err := show(box); err != nil {
		return err
	}

	step("executor " + ex1 + " finishes; the localizing job starts")
	box.NM.Exit(ex1)
	<-box.NM.Exited(ex1)
	if err := wait(ctx, 5*time.Second); err != nil {
		return err
	}
	if err := show(box); err != nil {
		return err
	}
	return pressure(ctx, box)
}

// pressure sets the BE memory evict threshold just above today's usage and
// starts an executor that fills 1 GiB: koordlet evicts by its ranking
// (OPPORTUNISTIC before GUARANTEED, newest first, AMs last) until the need
// is covered.
func pressure(ctx context.Context, box *nodebox.Box) error {
	total, used, err := nodebox.MemInfo()
	if err != nil {
		return err
	}
	lower := used*100/total + 1
	threshold := lower + 1
	step(fmt.Sprintf("NodeSLO: BE memory evict above %d%% of node memory (now %d%%), release down to %d%%; a new executor fills a 1 GiB heap",
		threshold, used*100/total, lower))
	if err := box.UpdateNodeSLO(ctx, func(s *slov1alpha1.NodeSLOSpec) {
		s.ResourceUsedThresholdWithBE = &slov1alpha1.ResourceThresholdStrategy{Enable: ptr.To(true),
			MemoryEvictThresholdPercent: ptr.To(threshold), MemoryEvictLowerPercent: ptr.To(lower)}
	}); err != nil {
		return err
	}
	if err := wait(ctx, 2*time.Second); err != nil {
		return err
	}
	start := time.Now()
	hog, err := box.NM.Launch(nmemu.Spec{AppID: 42, Attempt: 1, Sequence: 4, User: "spark", MemoryMB: 4096, VCores: 2,
		Script: kerneltest.HelperScript("grow=1024@256")})
	if err != nil {
		return err
	}
	select {
	case <-box.NM.Exited(hog):
	case <-time.After(60 * time.Second):
		fmt.Println("  koordlet did not evict within 60 s")
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	c, _ := box.NM.Get(hog)
	fmt.Printf("  %s ended %.1fs after it started: NM state %s, exit code %d (the NM reports it failed; its AM would ask for a replacement)\n",
		hog, time.Since(start).Seconds(), c.State, c.ExitCode)
	ns, name := box.NMPod()
	if err := wait(ctx, 2*time.Second); err != nil {
		return err
	}
	evs, err := box.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == name && strings.HasPrefix(e.Reason, "YARNContainer") {
				fmt.Printf("  Event on pod %s/%s: %s %s: %s\n", ns, name, e.Type, e.Reason, e.Message)
			}
		}
	}
	fmt.Println("  ranking: lower priority first (OPPORTUNISTIC below GUARANTEED), then newest, then larger usage; ApplicationMasters last")
	pod, err := box.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		fmt.Printf("  the NodeManager pod is still there (deletion requested: %v); the AM and the other executors run on:\n", pod.DeletionTimestamp != nil)
	}
	return show(box)
}

func step(s string) { fmt.Printf("\n== %s\n", s) }

func wait(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// show prints what koordlet's /yarn/containers serves.
func show(box *nodebox.Box) error {
	resp, err := box.Containers()
	if err != nil {
		return err
	}
	fmt.Printf("  koordlet GET %s: %d containers; NM %s (pod %s)\n", koordletyarn.ContainersPath, len(resp.Containers), resp.Informer.NMEndpoint, resp.Informer.NMPod)
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	usage := scrapeUsage(box)
	fmt.Fprintln(tw, "  CONTAINER\tAM\tUSER\tSTATE\tEXEC\tSEEN IN\tREQ CPU\tREQ MEM\tUSED CPU\tUSED MEM\tPIDS\tOWN CGROUPS\tSCHED")
	for _, c := range resp.Containers {
		var owned []string
		for i, r := range c.Cgroups {
			if r.Owned {
				owned = append(owned, cgroups.Controller(i).String())
			}
		}
		u := usage[c.Name]
		// The scheduling policy of the container's first task: YARN CPU
		// QoS makes YARN tasks SCHED_IDLE.
		idle := "-"
		if len(c.Pids) > 0 {
			if attr, err := unix.SchedGetAttr(c.Pids[0], 0); err == nil {
				idle = "other"
				if attr.Policy == unix.SCHED_IDLE {
					idle = "idle"
				}
			}
		}
		fmt.Fprintf(tw, "  %s\t%v\t%s\t%s\t%s\t%s\t%dm\t%dMi\t%s\t%s\t%v\t%s\t%s\n", c.Name, c.IsAM, c.User, c.State, c.ExecutionType,
			c.Source, c.RequestMilliCPU, c.RequestMemoryBytes>>20, u.cpu, u.mem, c.Pids, strings.Join(owned, ","), idle)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	switch acc := resp.Accounting; {
	case acc == nil:
	case acc.AsBE:
		fmt.Printf("  accounting: YARN usage counted as BE (host application %s covers the YARN hierarchy)\n", acc.HostApplication)
	default:
		fmt.Printf("  accounting: %s\n", acc.Reason)
	}
	return nil
}

// hostAppsFile is the slo-controller-config fragment the docs tell
// operators to apply: the YARN hierarchy as a BE host application.
const hostAppsFile = "deploy/yarn/slo-controller-config.patch.yaml"

// recommendedHostApps reads the host applications of hostAppsFile in the
// repository at top, so that the demo runs what the docs recommend.
func recommendedHostApps(top string) ([]slov1alpha1.HostApplicationSpec, error) {
	b, err := os.ReadFile(filepath.Join(top, hostAppsFile))
	if err != nil {
		return nil, fmt.Errorf("read the recommended host applications: %w", err)
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(b, &cm); err != nil {
		return nil, fmt.Errorf("parse %s: %w", hostAppsFile, err)
	}
	raw, ok := cm.Data[configuration.HostApplicationConfigKey]
	if !ok {
		return nil, fmt.Errorf("%s has no data.%s", hostAppsFile, configuration.HostApplicationConfigKey)
	}
	var cfg configuration.HostApplicationCfg
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return nil, fmt.Errorf("parse %s data.%s: %w", hostAppsFile, configuration.HostApplicationConfigKey, err)
	}
	if len(cfg.Applications) == 0 {
		return nil, fmt.Errorf("%s declares no host application", hostAppsFile)
	}
	return cfg.Applications, nil
}

// demoNodeSLO sets the demo's NodeSLO: apps as the host applications and
// the BE class's CPU QoS sched-idle.
func demoNodeSLO(s *slov1alpha1.NodeSLOSpec, apps []slov1alpha1.HostApplicationSpec) {
	s.HostApplications = apps
	policy := slov1alpha1.CPUQOSPolicyCoreSched
	s.ResourceQOSStrategy = &slov1alpha1.ResourceQOSStrategy{Policies: &slov1alpha1.ResourceQOSPolicies{CPUPolicy: &policy},
		BEClass: &slov1alpha1.ResourceQOS{CPUQOS: &slov1alpha1.CPUQOSCfg{Enable: ptr.To(true), CPUQOS: slov1alpha1.CPUQOS{SchedIdle: ptr.To[int64](1)}}}}
}

type used struct{ cpu, mem string }

// scrapeUsage reads the per-container usage koordlet exports on /metrics.
func scrapeUsage(box *nodebox.Box) map[string]used {
	out := map[string]used{}
	fams, err := box.MetricFamilies()
	if err != nil {
		return out
	}
	for _, f := range []string{"koordlet_yarn_container_cpu_usage_cores", "koordlet_yarn_container_memory_usage_bytes"} {
		fam, ok := fams[f]
		if !ok {
			continue
		}
		for _, m := range fam.Metric {
			var id string
			for _, l := range m.Label {
				if l.GetName() == "container_id" {
					id = l.GetValue()
				}
			}
			u := out[id]
			if strings.Contains(f, "cpu") {
				u.cpu = fmt.Sprintf("%.2f", m.GetGauge().GetValue())
			} else {
				u.mem = fmt.Sprintf("%.0fMi", m.GetGauge().GetValue()/(1<<20))
			}
			out[id] = u
		}
	}
	return out
}
