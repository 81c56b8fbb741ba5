package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/cgroupwatch"
	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/hooks/yarnadopt"
	"github.com/koordlet-yarn/koordlet-yarn/hooks/yarnqos"
	"github.com/koordlet-yarn/koordlet-yarn/test/cgtree"
)

// noYARNCgroups measures (3): YARN that makes no container cgroups (the
// DefaultContainerExecutor's way): the hogs run in the NodeManager pod's
// cgroup beside the LS stand-in; LS throughput with the hogs there (gate
// YARNContainerCgroups off: nothing koordlet can isolate), then with the
// gate on (each hog moved into its own cgroup below the YARN hierarchy, the
// CPU QoS applier making it SCHED_IDLE and the YARN root idle).
func noYARNCgroups(top string, mine *cgtree.Tracker, hogs int, window time.Duration, alone uint64, informer func() statesinformer.StatesInformer) error {
	ctrls := []string{""}
	if !rootV2 {
		ctrls = []string{"cpu", "cpuacct", "memory"}
	}
	base := filepath.Dir(root) // the cgroup mount root
	if rootV2 {
		base = root
	}
	pod := top + "/pod-nm"
	for _, c := range ctrls {
		if c != "cpu" && !rootV2 {
			if err := mine.Mkdir(filepath.Join(base, c, top)); err != nil {
				return err
			}
		}
		if err := mine.MkdirAll(filepath.Join(base, c, pod, "nm")); err != nil {
			return err
		}
	}
	if rootV2 {
		for _, d := range []string{top, pod} {
			for _, ctl := range []string{"cpu", "memory", "pids", "io", "cpuset"} {
				_ = os.WriteFile(filepath.Join(base, d, "cgroup.subtree_control"), []byte("+"+ctl), 0)
			}
		}
	}
	var ids []string
	var pids []int
	defer func() {
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}()
	for i := 0; i < hogs; i++ {
		id := yarn.ContainerID{Epoch: 17, ClusterTimestamp: 1700000000000, AppID: 3, AttemptID: 1, Sequence: int64(2 + i)}.String()
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "KOORDLET_YARN_TEST_HELPER=burn", "CONTAINER_ID="+id)
		if err := cmd.Start(); err != nil {
			return err
		}
		pids = append(pids, cmd.Process.Pid)
		ids = append(ids, id)
		for _, c := range ctrls {
			if err := os.WriteFile(filepath.Join(base, c, pod, "nm", "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
				return err
			}
		}
	}
	time.Sleep(500 * time.Millisecond)
	without, err := spin(top, window)
	if err != nil {
		return err
	}
	h := cgroups.Hierarchy{CgroupRoot: base, ProcRoot: "/proc", Dir: top + "/yarn-none", V2: rootV2}
	hier := func() (cgroups.Hierarchy, bool) { return h, true }
	st := store.New()
	stop := make(chan struct{})
	defer close(stop)
	// As the informer does when the watch finds the YARN root (made here by
	// the adopter): one scan of the hierarchy into the store.
	resync := func() {
		if res, err := cgroups.NewScanner(h).Scan(); err == nil {
			st.Resync(store.Observation{Scan: res.Containers, ScanOK: true}, time.Now())
		}
	}
	w := cgroupwatch.New(cgroupwatch.Options{Store: st, ResyncInterval: time.Hour, Hierarchy: hier, Resync: resync})
	w.Run(stop)
	q := yarnqos.New(yarnqos.Options{Store: st, Interval: time.Hour, Hierarchy: func() string { return h.Dir }, StatesInformer: informer})
	q.Run(stop)
	list := func(context.Context) ([]yarn.NMContainer, error) {
		var out []yarn.NMContainer
		for _, id := range ids {
			cid, _ := yarn.ParseContainerID(id)
			out = append(out, yarn.NMContainer{ID: cid, State: yarn.StateRunning})
		}
		return out, nil
	}
	a := yarnadopt.New(yarnadopt.Options{Store: st, Hierarchy: hier, ListNM: list, ScanInterval: 200 * time.Millisecond,
		NMPodCgroup: func() (string, string, bool) { return pod, "measure/nodemanager", true }})
	a.Run(stop)
	defer func() { _ = cgtree.Remove(h.RootDir(cgroups.CPU)) }()
	for _, c := range ctrls[1:] {
		defer func() { _ = cgtree.Remove(filepath.Join(base, c, h.Dir)) }()
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, pid := range pids {
		for {
			attr, err := unix.SchedGetAttr(pid, 0)
			if err == nil && attr.Policy == unix.SCHED_IDLE {
				break
			}
			if time.Now().After(deadline) {
				attr, _ := unix.SchedGetAttr(pid, 0)
				c, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
				return fmt.Errorf("hog %d not in its own cgroup and SCHED_IDLE within 20s (%s; policy %v; store %d containers; cgroup %s)", pid, a, attr, st.Len(), c)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	with, err := spin(top, window)
	if err != nil {
		return err
	}
	idle, _ := os.ReadFile(filepath.Join(h.RootDir(cgroups.CPU), "cpu.idle"))
	fmt.Printf("no YARN cgroups (DefaultContainerExecutor layout): LS throughput alone %d; with %d YARN hogs in the NodeManager pod's cgroup, YARNContainerCgroups off %d (%.0f%%); on (own cgroups, YARN root cpu.idle=%s, tasks SCHED_IDLE) %d (%.0f%%)\n",
		alone, hogs, without, 100*float64(without)/float64(alone), strings.TrimSpace(string(idle)), with, 100*float64(with)/float64(alone))
	return nil
}
