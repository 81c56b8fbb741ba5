package jobrun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/koordlet-yarn/koordlet-yarn/test/colocation"
	"github.com/koordlet-yarn/koordlet-yarn/test/jobs"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
	"github.com/koordlet-yarn/koordlet-yarn/test/realyarn"
	"github.com/koordlet-yarn/koordlet-yarn/test/yarnpeer"
)

// colocationConfig is koord-manager's colocation-config: Koordinator's
// CPU reclaim threshold, the memory one at memoryPercent, reports every 2 s
// and updates from a 5 s change on (in the days the batch allocatable
// still moved every 25–30 s: 3–4 phases of a 3-minute day).
func colocationConfig(memoryPercent int64) string {
	return fmt.Sprintf(`{"enable":true,"metricAggregateDurationSeconds":30,"metricReportIntervalSeconds":2,
"cpuReclaimThresholdPercent":65,"memoryReclaimThresholdPercent":%d,"degradeTimeMinutes":15,
"updateTimeThresholdSeconds":5,"resourceDiffThreshold":0.01}`, memoryPercent)
}

// memoryOnly is Hadoop's default resource calculator: the CapacityScheduler
// allocates memory and not vcores. Koordinator's batch CPU is enforced on
// the node (suppress), not by vcores: YARN's vcores from batch-cpu are
// whole cores (milli ÷ 1000), at most one on this 2-core machine, too few
// for an AM and an executor.
const memoryOnly = "yarn.scheduler.capacity.resource-calculator=org.apache.hadoop.yarn.util.resource.DefaultResourceCalculator"

// oneQueue gives the default queue the whole cluster (the peer's has 40%
// beside two others): every job of the stream runs there. Beside it,
// heldQueue has nothing: the jobs are submitted into it before the day (so
// that their spark-submit clients, a gateway's work in production, do not
// run on the node during the day) and each is moved to the default queue
// at its arrival.
var oneQueue = []string{"yarn.scheduler.capacity.root.queues=default," + heldQueue,
	"yarn.scheduler.capacity.root.default.capacity=100",
	"yarn.scheduler.capacity.root." + heldQueue + ".capacity=0",
	"yarn.scheduler.capacity.root." + heldQueue + ".maximum-capacity=0",
	// A queue's application limit is its share of the cluster's (0 here).
	"yarn.scheduler.capacity.root." + heldQueue + ".maximum-applications=1000"}

// heldQueue holds the day's jobs until they arrive.
const heldQueue = "held"

// clusterMax keeps the RM's largest allocation at its configured maximum
// (8192 MB, 4 vcores) as on a cluster of many nodes, whose largest node
// holds that: the RM takes the configured maximum until the scheduling
// wait after its start has passed (ClusterNodeTracker), then the largest
// node's capacity — this node's alone here, which the LS peak takes to 0
// vcores and a few hundred MB, when the RM would refuse every submission.
// The wait is a day; work-preserving recovery, which would hold the
// scheduler for the same wait, is off (the RM is not restarted here).
var clusterMax = []string{"yarn.resourcemanager.work-preserving-recovery.scheduling-wait-ms=86400000",
	"yarn.resourcemanager.work-preserving-recovery.enabled=false"}

// dayNode is a day's node: the box, the real YARN with the NodeManager in
// the NodeManager pod, koordlet, the LS service and koord-manager.
type dayNode struct {
	box  *nodebox.Box
	peer *yarnpeer.Peer
	ls   *colocation.LS
	km   *nodebox.KoordManager
	name string
	r    *Runner
}

// startNode starts a day's node for c (koord-manager last: the batch
// allocatable it computes, and koordlet pushes to the RM, starts from the
// day's memory) and, for a configuration with batch, waits for YARN's
// first capacity. A node returned with an error holds what started: stop
// it.
func (r *Runner) startNode(ctx context.Context, c jobs.Config, name string) (*dayNode, error) {
	began := time.Now()
	opts := colocation.BoxOptions()
	opts.Top, opts.ExternalNM, opts.LockWait = r.Top, true, 30*time.Minute
	opts.ExtraCRDs = nodebox.KoordManagerCRDs
	opts.NodeSLO = c.NodeSLO()
	opts.APIServer = r.APIServer
	box, err := nodebox.Start(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("the node in a box: %w", err)
	}
	n := &dayNode{box: box, name: name, r: r}
	// The NodeManager in a JVM of its own, in the NodeManager pod, as
	// deployed (upstream's eviction of the pod restarts it alone).
	n.peer, err = realyarn.Start(ctx, box, r.Top, yarnpeer.Options{Hadoop: r.Hadoop, Memory: true, SplitNM: true, KeepLogs: true,
		Conf: append(append([]string{memoryOnly}, clusterMax...), oneQueue...), OffNode: true})
	if err != nil {
		return n, fmt.Errorf("the real YARN: %w", err)
	}
	box.SetKoordletArgs(c.KoordletArgs(n.peer.RMWeb))
	if err := box.StartKoordletFor(n.peer.NMWeb); err != nil {
		return n, err
	}
	if n.ls, err = colocation.StartLS(ctx, box, colocation.DefaultOptions()); err != nil {
		return n, fmt.Errorf("the LS service: %w", err)
	}
	if r.rates == nil {
		for _, p := range r.Phases {
			r.rates = append(r.rates, n.ls.RateFor(p.Level))
		}
	}
	threshold, err := r.memoryThreshold(ctx, box)
	if err != nil {
		return n, err
	}
	if n.km, err = box.StartKoordManager(ctx, colocationConfig(threshold+r.Overcommit)); err != nil {
		return n, err
	}
	if c.Batch() {
		// The day starts on a running node: YARN's capacity is the batch
		// allocatable koord-manager computed and koordlet pushed.
		if err := waitCapacity(ctx, box, 2*time.Minute); err != nil {
			return n, err
		}
	}
	fmt.Fprintf(r.Log, "%s: the node is up in %v\n", c, time.Since(began).Round(time.Second))
	return n, nil
}

// stop stops what started, koord-manager first, and keeps the logs before
// the peer's stop removes its directory.
func (n *dayNode) stop() {
	if n.km != nil {
		n.km.Stop()
	}
	if n.ls != nil {
		n.ls.Close()
	}
	if n.peer != nil {
		n.r.keepLogs(n.box, n.name)
		n.peer.Stop()
	}
	n.box.Stop()
}

// memoryThreshold puts the BE memory evict threshold at the budget above
// the node's memory in use now (everything of the day is up): a node whose
// memory beyond today's use is the budget; the lower percent 2 below it
// (Koordinator's default gap). It returns the threshold.
func (r *Runner) memoryThreshold(ctx context.Context, box *nodebox.Box) (int64, error) {
	total, used, err := nodebox.MemInfo()
	if err != nil {
		return 0, err
	}
	threshold := (used + r.Budget) * 100 / total
	if threshold > 95 {
		threshold = 95
	}
	fmt.Fprintf(r.Log, "node memory %d MiB of %d in use; BE memory evict threshold %d%% (%d MiB), lower %d%%; koord-manager's memory reclaim threshold %d%%\n",
		used>>20, total>>20, threshold, threshold*total/100>>20, threshold-2, threshold+r.Overcommit)
	return threshold, box.UpdateNodeSLO(ctx, func(s *slov1alpha1.NodeSLOSpec) {
		if s.ResourceUsedThresholdWithBE == nil {
			s.ResourceUsedThresholdWithBE = &slov1alpha1.ResourceThresholdStrategy{}
		}
		s.ResourceUsedThresholdWithBE.Enable = ptr.To(true)
		s.ResourceUsedThresholdWithBE.MemoryEvictThresholdPercent = ptr.To(threshold)
		s.ResourceUsedThresholdWithBE.MemoryEvictLowerPercent = ptr.To(threshold - 2)
	})
}

// waitCapacity waits until koordlet pushed YARN's capacity from a batch
// allocatable to the RM (its ledger's RM sync: memory pushed > 0).
func waitCapacity(ctx context.Context, box *nodebox.Box, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		l, err := box.Ledger()
		if err == nil && l.RM.Pushed != nil && l.RM.Pushed.MemoryMB > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("koordlet pushed no YARN capacity to the RM %v after koord-manager started (ledger: %+v, %v)", wait, l.RM, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// keepLogs copies the box's logs (koordlet's, koord-manager's, the YARN
// daemons') into Out/name-logs before the box is removed.
func (r *Runner) keepLogs(box *nodebox.Box, name string) {
	if r.Out == "" || name == "" {
		return
	}
	dir := filepath.Join(r.Out, name+"-logs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(r.Log, "keep the logs: %v\n", err)
		return
	}
	files := []string{box.KoordletLog(), filepath.Join(box.Dir(), "koord-manager.log")}
	more, _ := filepath.Glob(filepath.Join(box.Dir(), "yarn", "*.log"))
	submits, _ := filepath.Glob(filepath.Join(box.Dir(), "yarn", "spark-*", "submit.log"))
	for _, f := range append(append(files, more...), submits...) {
		name := filepath.Base(f)
		if name == "submit.log" {
			name = filepath.Base(filepath.Dir(f)) + "-submit.log"
		}
		if b, err := os.ReadFile(f); err == nil {
			_ = os.WriteFile(filepath.Join(dir, name), b, 0o644)
		}
	}
}

// nmPodCPU is the NodeManager pod's CPU time (its container cgroup's
// cpuacct.usage; 0 when unread).
func nmPodCPU(box *nodebox.Box) time.Duration {
	_, pod := box.NMPod()
	b, err := os.ReadFile(filepath.Join(box.CgroupRoot(), "cpuacct", box.PodCgroup(pod), "cpuacct.usage"))
	if err != nil {
		return 0
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0
	}
	return time.Duration(v)
}
