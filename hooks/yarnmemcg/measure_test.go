package yarnmemcg

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/cgroupwatch"
	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// measureEnv asks for TestMeasureCreateToMoved: the number of containers
// (make measure-memcg sets it).
const measureEnv = "KOORDLET_YARN_MEASURE_MEMCG"

// TestMeasureCreateToMoved measures, on the real kernel, the figure of
// YARNMemoryCgroup: a container's cpu cgroup created (as YARN's
// container-executor does: mkdir, then its first process written into it)
// → every process of the container in its memory cgroup, through the real
// discovery (cgroupwatch: eBPF, else inotify), the store's events and the
// running applier. It prints p50/p99/max of create → moved and of the
// first process's attach → moved. Run with make measure-memcg.
func TestMeasureCreateToMoved(t *testing.T) {
	// Without the variable a short run checks that the path works (every
	// container's processes moved); the figures come from make
	// measure-memcg, never from this short run.
	count, _ := strconv.Atoi(os.Getenv(measureEnv))
	if count <= 0 {
		count = 10
	}
	n := newNode(t)
	var mu sync.Mutex
	moved := map[string]time.Time{}
	a := n.applier(Options{Interval: 10 * time.Second, OnMoved: func(c *store.Container, at time.Time) {
		mu.Lock()
		if _, ok := moved[c.Name]; !ok {
			moved[c.Name] = at
		}
		mu.Unlock()
	}})
	stop := make(chan struct{})
	defer close(stop)
	w := cgroupwatch.New(cgroupwatch.Options{Store: n.st, ResyncInterval: time.Hour, Hierarchy: a.opts.Hierarchy})
	w.Run(stop)
	for w.Active() == "" {
		time.Sleep(5 * time.Millisecond)
	}
	a.Run(stop)

	created := map[string]time.Time{}
	attached := map[string]time.Time{}
	for i := 0; i < count; i++ {
		id := yarn.ContainerID{Epoch: 17, ClusterTimestamp: 1700000000000, AppID: 7, AttemptID: 1, Sequence: int64(2 + i)}
		name := id.String()
		t0 := time.Now()
		cpu := kerneltest.MakeCgroup(t, "cpu", n.h.ContainerRelDir(name))
		p := kerneltest.Start(t, "sleep 3600 & exec sleep 3600", n.nmMem, cpu) // memory first: YARN writes only the cpu cgroup
		attached[name] = time.Now()
		created[name] = t0
		require.NoError(t, p.Release())
		time.Sleep(5 * time.Millisecond)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		done := len(moved) >= count
		mu.Unlock()
		if done || time.Now().After(deadline) {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var fromCreate, fromAttach, workload []time.Duration
	for name, t0 := range created {
		if at, ok := moved[name]; ok {
			fromCreate = append(fromCreate, at.Sub(t0))
			fromAttach = append(fromAttach, at.Sub(attached[name]))
			workload = append(workload, attached[name].Sub(t0))
		}
	}
	require.Len(t, fromCreate, count, "every container's processes moved within 30 s")
	// Every process, the forked ones too, ends in the container's memory
	// cgroup.
	for name := range created {
		rel := n.h.ContainerRelDir(name)
		for _, pid := range kerneltest.Pids(filepath.Join(kerneltest.CgroupRoot, "cpu", rel)) {
			require.True(t, n.h.Contains(pid, cgroups.Memory, rel), "pid %d of %s in its memory cgroup", pid, name)
		}
	}
	fmt.Printf("YARNMemoryCgroup, discovery %s, %d containers: cpu cgroup created → all processes in its memory cgroup %s; first process attached → moved %s (the test's own mkdir + process start + attach: %s)\n",
		w.Active(), count, quantiles(fromCreate), quantiles(fromAttach), quantiles(workload))
}

func quantiles(d []time.Duration) string {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	r := func(x time.Duration) time.Duration { return x.Round(time.Microsecond) }
	return fmt.Sprintf("p50 %v, p99 %v, max %v", r(d[len(d)/2]), r(d[len(d)*99/100]), r(d[len(d)-1]))
}
