package yarnusage

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/mock/gomock"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/metriccache"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/metricsadvisor/collectors/podresource"
	mafw "github.com/koordinator-sh/koordinator/pkg/koordlet/metricsadvisor/framework"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/resourceexecutor"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	mockstatesinformer "github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer/mockstatesinformer"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// cost measures process CPU time and allocations around fn, which runs n
// cycles, and reports them per cycle.
func cost(b *testing.B, n int, fn func()) {
	var ms0, ms1 runtime.MemStats
	var ru0, ru1 syscall.Rusage
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ResetTimer()
	fn()
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	runtime.ReadMemStats(&ms1)
	cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) / time.Duration(n)
	b.ReportMetric(float64(cpu.Nanoseconds()), "cpu-ns/cycle")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(n), "B/cycle")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(n), "allocs/cycle")
}

// BenchmarkCollect measures one YARN collection cycle (cpuacct, memory.stat
// and cpu.stat of every container, metric cache append, Prometheus) on a
// fake root. Target at 1,000 containers: < 20 ms of CPU per cycle.
//
// Each case runs on a fake root on disk (ext4 here) and on tmpfs, which is
// closer to the in-memory cgroupfs of a real node; koordlet's own pod
// collector runs on the same roots in the same run for comparison.
func BenchmarkCollect(b *testing.B) {
	for _, fsys := range []string{"tmpfs", "disk"} {
		for _, n := range []int{100, 1000} {
			b.Run(fmt.Sprintf("fs=%s/yarn/containers=%d", fsys, n), func(b *testing.B) { benchYARNCollector(b, fsys, n) })
			b.Run(fmt.Sprintf("fs=%s/upstream-pods/containers=%d", fsys, n), func(b *testing.B) { benchUpstreamPodCollector(b, fsys, n) })
		}
	}
}

// fakeRoot points koordlet's cgroup root at a fresh directory on fsys
// ("tmpfs": /dev/shm; "disk": the test temp dir) until cleanup.
func fakeRoot(b *testing.B, fsys string) func() {
	if fsys != "tmpfs" {
		return func() {}
	}
	dir, err := os.MkdirTemp("/dev/shm", "yarnusage-bench-")
	if err != nil {
		kerneltest.Skipf(b, "no tmpfs at /dev/shm: %v", err)
	}
	old := system.Conf.CgroupRootDir
	system.Conf.CgroupRootDir = dir
	return func() {
		system.Conf.CgroupRootDir = old
		_ = os.RemoveAll(dir)
	}
}

func benchYARNCollector(b *testing.B, fsys string, n int) {
	t := &testing.T{}
	nd := newNode(t, false)
	defer nd.helper.Cleanup()
	defer fakeRoot(b, fsys)()
	names := make([]string, n)
	for i := range names {
		names[i] = yarn.ContainerID{Epoch: 17, ClusterTimestamp: 1700000000000, AppID: int64(1 + i/50), AttemptID: 1, Sequence: int64(1 + i%50)}.String()
		nd.set(names[i], int64(i)*1e6, 100<<20, 10<<20, 10, 1)
	}
	nd.resync(names...)
	mc := newMetricCache(b)
	m, _ := NewMetrics(prometheus.NewRegistry())
	c := New(Options{Store: nd.st, Metrics: m, NodeName: "n1",
		MetricCache: func() metriccache.MetricCache { return mc }, Interval: func() time.Duration { return time.Second }})
	defer c.Close()
	now := time.Now()
	c.Collect(now) // prime
	cost(b, b.N, func() {
		for i := 0; i < b.N; i++ {
			now = now.Add(time.Second)
			c.Collect(now)
		}
	})
}

// countingCache counts collection cycles (one Appender per cycle).
type countingCache struct {
	metriccache.MetricCache
	cycles atomic.Int64
}

func (c *countingCache) Appender() metriccache.Appender {
	c.cycles.Add(1)
	return c.MetricCache.Appender()
}

// benchUpstreamPodCollector runs koordlet's own pod resource collector over
// n single-container BE pods on the same kind of fake root and measures it
// per cycle the same way.
func benchUpstreamPodCollector(b *testing.B, fsys string, n int) {
	t := &testing.T{}
	helper := system.NewFileTestUtil(t)
	defer helper.Cleanup()
	defer fakeRoot(b, fsys)()
	old := system.CgroupPathFormatter
	system.SetupCgroupPathFormatter(system.Cgroupfs)
	defer func() { system.CgroupPathFormatter = old }()

	pods := make([]*statesinformer.PodMeta, n)
	for i := range pods {
		uid := fmt.Sprintf("uid-%06d", i)
		cid := fmt.Sprintf("%064x", i)
		podDir := "kubepods/besteffort/pod" + uid
		for _, d := range []string{podDir, podDir + "/" + cid} {
			helper.WriteCgroupFileContents(d, system.CPUAcctUsage, fmt.Sprint(i*1000000))
			helper.WriteCgroupFileContents(d, system.MemoryStat, "total_cache 10485760\ntotal_rss 104857600\ntotal_active_anon 104857600\ntotal_inactive_anon 0\ntotal_active_file 10485760\ntotal_inactive_file 0\ntotal_unevictable 0\n")
		}
		pods[i] = &statesinformer.PodMeta{CgroupDir: podDir, Pod: &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("p%d", i), UID: types.UID(uid)},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBestEffort, ContainerStatuses: []corev1.ContainerStatus{{
				Name: "main", ContainerID: "containerd://" + cid, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
		}}
	}
	ctrl := gomock.NewController(b)
	si := mockstatesinformer.NewMockStatesInformer(ctrl)
	si.EXPECT().GetAllPods().Return(pods).AnyTimes()
	si.EXPECT().HasSynced().Return(true).AnyTimes()
	mc := &countingCache{MetricCache: newMetricCache(b)}
	cfg := mafw.NewDefaultConfig()
	cfg.CollectResUsedInterval = time.Microsecond
	col := podresource.New(&mafw.Options{Config: cfg, StatesInformer: si, MetricCache: mc, CgroupReader: resourceexecutor.NewCgroupReader()})
	col.Setup(&mafw.Context{State: mafw.NewSharedState()})
	stop := make(chan struct{})
	defer close(stop)
	col.Run(stop)
	for mc.cycles.Load() < 2 { // primed
		time.Sleep(time.Millisecond)
	}
	cost(b, b.N, func() {
		start := mc.cycles.Load()
		for mc.cycles.Load()-start < int64(b.N) {
			time.Sleep(100 * time.Microsecond)
		}
	})
}
