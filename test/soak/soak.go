// Package soak churns YARN containers through the node in a box with every
// YARN feature gate on and checks that koordlet does not grow with the
// churn: thousands of containers, each with a real short-lived process, are
// launched by the NodeManager emulator under the real cgroup hierarchy and
// removed again, a bounded number alive at once. koordlet's open fds
// (/proc/<pid>/fd), goroutines (go_goroutines on /metrics) and in-use heap
// (after a forced GC, through koordlet's pprof endpoint) are sampled after a
// warm-up and at the end of the churn and must be flat; once the churn has
// drained, the container store (/yarn/containers) must equal the container
// cgroups under the hierarchy. Used by test/measure/soak (make soak) and the
// e2e test TestSoak.
package soak

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/test/cgtree"
	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

// Controllers are the cgroup v1 controllers in which the box's NodeManager
// emulator creates container cgroups.
var Controllers = []string{"cpu", "cpuacct", "memory"}

// upstreamGates are koordlet's own gates the YARN-aware strategies build on
// (the e2e pressure tests turn them on the same way).
var upstreamGates = []string{"BEMemoryEvict", "BECPUEvict", "BECPUSuppress"}

// FeatureGates returns koordlet's --feature-gates flag with every YARN gate
// (framework/features) and upstream's BE evict and suppress gates on.
func FeatureGates() string {
	var on []string
	for f := range features.Specs {
		on = append(on, string(f)+"=true")
	}
	for _, f := range upstreamGates {
		on = append(on, f+"=true")
	}
	sort.Strings(on)
	return "--feature-gates=" + strings.Join(on, ",")
}

// KoordletArgs are the box's extra koordlet flags for a soak: every gate,
// the QoS appliers reconciling every second, and pprof on loopback port
// pprofPort (the heap is sampled after a GC forced through it).
func KoordletArgs(pprofPort int) []string {
	return []string{FeatureGates(), "--yarn-qos-reconcile-interval=1s",
		"--enable-pprof=true", "--pprof-addr=127.0.0.1:" + strconv.Itoa(pprofPort)}
}

// NodeSLO gives every strategy the gates turn on something to evaluate
// without making it act on sleeping containers: BE CPU suppress at 65%,
// memory evict at 95% of node memory, the CPU evict satisfaction band, and
// the BE class's CPU QoS (sched-idle: the YARN root idle, every task SCHED_IDLE), Memory
// QoS and L3 CAT (where the kernel has them).
func NodeSLO() slov1alpha1.NodeSLOSpec {
	policy := slov1alpha1.CPUQOSPolicyCoreSched
	return slov1alpha1.NodeSLOSpec{
		ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{
			Enable:                             ptr.To(true),
			CPUSuppressThresholdPercent:        ptr.To[int64](65),
			MemoryEvictThresholdPercent:        ptr.To[int64](95),
			MemoryEvictLowerPercent:            ptr.To[int64](90),
			CPUEvictBESatisfactionLowerPercent: ptr.To[int64](40),
			CPUEvictBESatisfactionUpperPercent: ptr.To[int64](60),
			CPUEvictBEUsageThresholdPercent:    ptr.To[int64](90),
		},
		ResourceQOSStrategy: &slov1alpha1.ResourceQOSStrategy{
			Policies: &slov1alpha1.ResourceQOSPolicies{CPUPolicy: &policy},
			BEClass: &slov1alpha1.ResourceQOS{
				CPUQOS: &slov1alpha1.CPUQOSCfg{Enable: ptr.To(true), CPUQOS: slov1alpha1.CPUQOS{SchedIdle: ptr.To[int64](1)}},
				MemoryQOS: &slov1alpha1.MemoryQOSCfg{Enable: ptr.To(true), MemoryQOS: slov1alpha1.MemoryQOS{
					MinLimitPercent: ptr.To[int64](10), LowLimitPercent: ptr.To[int64](20), ThrottlingPercent: ptr.To[int64](80)}},
				ResctrlQOS: &slov1alpha1.ResctrlQOSCfg{Enable: ptr.To(true)},
			},
		},
	}
}

// ProfileRate is koordlet's heap profile sampling rate in a soak, finer
// than Go's default 512 KiB so that the TSDB's share of the heap is
// estimated within a few hundred KiB.
const ProfileRate = 64 << 10

// Godebug returns the GODEBUG value that sets ProfileRate
// (memprofilerate), to be set in this process's environment before the box
// starts: the box passes it on to koordlet.
func Godebug() string {
	v := "memprofilerate=" + strconv.Itoa(ProfileRate)
	if cur := os.Getenv("GODEBUG"); cur != "" {
		v = cur + "," + v
	}
	return v
}

// FreePort returns a free loopback TCP port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Config is one soak.
type Config struct {
	// Containers are launched in total, evenly over Duration.
	Containers int
	Duration   time.Duration
	// Concurrency bounds the containers alive at once; lifetimes are
	// chosen so that about 80% of it is alive during the churn.
	Concurrency int
	// WarmUp is the share of the containers launched before the start
	// sample (default 0.1): koordlet's caches, pools and the metric
	// cache's series have then seen the churn.
	WarmUp float64
	// Tolerance is the allowed growth from the start sample to the end
	// sample (default 0.10), beside each resource's absolute slack.
	Tolerance float64
	// PprofPort is koordlet's --pprof-addr port (see KoordletArgs).
	PprofPort int
	// ProfileDir, when set, receives koordlet's heap profiles at the start
	// and end samples (heap-start.pb.gz, heap-end.pb.gz; heap-later.pb.gz
	// with Linger) and a CPU profile of 20 s of churn (cpu.pb.gz).
	ProfileDir string
	// Linger, when set, takes one more sample that long after the end
	// sample, past koordlet's bounded retentions (the resource executor's
	// 2-minute write cache, the store's 1-minute tombstones); the heap
	// check then uses it.
	Linger time.Duration
	// Log receives progress lines (nil: none).
	Log io.Writer
}

// Sample is koordlet's footprint at one point.
type Sample struct {
	At         time.Time
	Alive      int // YARN containers alive (launched, not exited), residents included
	FDs        int // entries in /proc/<koordlet>/fd
	Goroutines int // go_goroutines
	// Heap after a forced GC: live bytes (HeapAlloc), the part of them
	// allocated by the metric cache (estimated from the heap
	// profile), the rest, and the spans in use (HeapInuse).
	HeapLive, HeapTSDB, HeapOther, HeapInuse uint64
	// HeadSeries is the metric cache's TSDB head series count.
	HeadSeries int
	RSS        uint64 // process_resident_memory_bytes
	CPUSeconds float64
}

func (s Sample) String() string {
	return fmt.Sprintf("fds %d, goroutines %d, live heap %.1f MiB = %.1f outside koordlet's metric cache + ~%.1f in it (TSDB head: %d series), heap in use %.1f MiB, RSS %.1f MiB (%d containers alive)",
		s.FDs, s.Goroutines, mib(s.HeapLive), mib(s.HeapOther), mib(s.HeapTSDB), s.HeadSeries, mib(s.HeapInuse), mib(s.RSS), s.Alive)
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

func mibDelta(from, to uint64) float64 { return mib(to) - mib(from) }

// Check is one flatness or consistency check.
type Check struct {
	Name string
	OK   bool
	Note string
}

// Report is the outcome of a soak.
type Report struct {
	Launched, LaunchErrors, Killed int
	// Churn is the time from the first launch to the last exit.
	Churn    time.Duration
	MaxAlive int
	// Start (after the warm-up) and End are taken with the churn drained,
	// the residents alive; Peak near the end of the churn; Later, with
	// Config.Linger, that long after End.
	Start, End, Peak Sample
	Later            *Sample
	// KoordletCPU is koordlet's CPU time from the start to the end
	// sample, in cores.
	KoordletCPU float64
	// Store and Cgroupfs are the container ids in /yarn/containers and
	// under the hierarchy at the end.
	Store, Cgroupfs []string
	Evictions       float64
	// Leftovers describe container cgroups of exited churn containers
	// still present after a drain (the NM removes them on exit).
	Leftovers []string
	Checks    []Check
}

// OK reports whether every check passed.
func (r Report) OK() bool {
	for _, c := range r.Checks {
		if !c.OK {
			return false
		}
	}
	return len(r.Checks) > 0
}

// Print writes the report.
func (r Report) Print(w io.Writer) {
	fmt.Fprintf(w, "churn: %d containers launched (%d launch errors, %d ended by the NM, the rest exited), at most %d alive, %v from first launch to last exit\n",
		r.Launched, r.LaunchErrors, r.Killed, r.MaxAlive, r.Churn.Round(time.Second))
	fmt.Fprintf(w, "koordlet CPU from the start to the end sample: %.3f cores; YARN evictions: %.0f\n", r.KoordletCPU, r.Evictions)
	fmt.Fprintf(w, "start (after the warm-up, drained): %s\n", r.Start)
	fmt.Fprintf(w, "peak  (churn running)             : %s\n", r.Peak)
	fmt.Fprintf(w, "end   (churn over, drained)       : %s\n", r.End)
	if r.Later != nil {
		fmt.Fprintf(w, "later (end + %v)               : %s\n", r.Later.At.Sub(r.End.At).Round(time.Second), *r.Later)
	}
	fmt.Fprintf(w, "live heap %+.1f MiB from start to end: %+.1f MiB outside koordlet's metric cache, ~%+.1f MiB in it (TSDB head series %d → %d;"+
		" the metric cache keeps a dead container's series until head compaction, 1.5 × --tsdb-min-block-duration after its data, 15 min by default)\n",
		mibDelta(r.Start.HeapLive, r.End.HeapLive), mibDelta(r.Start.HeapOther, r.End.HeapOther), mibDelta(r.Start.HeapTSDB, r.End.HeapTSDB),
		r.Start.HeadSeries, r.End.HeadSeries)
	fmt.Fprintf(w, "store %d containers, cgroupfs %d container dirs\n", len(r.Store), len(r.Cgroupfs))
	for i, l := range r.Leftovers {
		if i == 30 {
			fmt.Fprintf(w, "  ... %d more\n", len(r.Leftovers)-i)
			break
		}
		fmt.Fprintf(w, "  left: %s\n", l)
	}
	for _, c := range r.Checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "%s %s: %s\n", mark, c.Name, c.Note)
	}
}

// Slack is the absolute growth allowed beside the relative tolerance, for
// numbers so small that one connection or timer is more than 10%: an fd
// is one HTTP keep-alive connection (to the API server, the NM, a scrape)
// or a cgroup file being read at the sample; goroutines come and go with
// those connections and with the loops' timers; the heap moves by a few
// allocator spans between two forced GCs.
var Slack = struct {
	FDs, Goroutines int
	Heap            uint64
}{FDs: 5, Goroutines: 20, Heap: 2 << 20}

// Run churns cfg.Containers containers through box's NodeManager emulator
// and checks koordlet; the error is for a soak that could not run, failed
// checks are in the report.
func Run(ctx context.Context, box *nodebox.Box, cfg Config) (Report, error) {
	var rep Report
	if cfg.Containers <= 0 || cfg.Duration <= 0 || cfg.Concurrency <= 0 {
		return rep, fmt.Errorf("soak: containers, duration and concurrency must be positive")
	}
	if cfg.WarmUp <= 0 {
		cfg.WarmUp = 0.1
	}
	if cfg.Tolerance <= 0 {
		cfg.Tolerance = 0.10
	}
	logf := func(format string, args ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "soak: "+format+"\n", args...)
		}
	}
	pid, err := koordletPID()
	if err != nil {
		return rep, err
	}
	k := &koordlet{box: box, pid: pid, pprof: "http://127.0.0.1:" + strconv.Itoa(cfg.PprofPort)}
	h, err := k.heap("")
	if err != nil {
		return rep, fmt.Errorf("soak: koordlet's pprof endpoint (--enable-pprof): %w", err)
	}
	logf("koordlet's heap profile samples every %.0f bytes (see Godebug)", h.rate)

	interval := cfg.Duration / time.Duration(cfg.Containers)
	meanLife := time.Duration(0.8 * float64(cfg.Concurrency) * float64(interval))
	logf("%d containers over %v (one every %v), at most %d alive, lifetimes %v-%v; koordlet pid %d",
		cfg.Containers, cfg.Duration, interval, cfg.Concurrency, meanLife/2, meanLife*3/2, pid)
	resync, err := k.resyncInterval()
	if err != nil {
		return rep, err
	}

	// Five residents live through the whole soak: the start and end
	// samples see the same live set, and the store has something to
	// equal at the end.
	for s := int64(1); s <= residents; s++ {
		if _, err := box.NM.Launch(nmemu.Spec{AppID: residentApp, Attempt: 1, Sequence: s, User: "soak", MemoryMB: 512, VCores: 1,
			Script: "exec sleep 3600"}); err != nil {
			return rep, err
		}
	}
	c := &churn{box: box, rng: rand.New(rand.NewSource(1)), meanLife: meanLife, slots: make(chan struct{}, cfg.Concurrency), logf: logf}
	// The start and end samples are taken with the churn drained (only the
	// residents alive) and one resync and collection later, so that they
	// compare like with like: koordlet keeps three usage files open per
	// live container (framework/cgroups.UsageReader), and live
	// containers hold heap. A sample mid-churn is reported as the peak.
	settle := func() { time.Sleep(resync + 2*time.Second) }
	warm := int(float64(cfg.Containers) * cfg.WarmUp)
	first := time.Now()
	if err := c.run(ctx, 0, warm, interval, nil); err != nil {
		return rep, err
	}
	if err := c.drain(2*meanLife + time.Minute); err != nil {
		return rep, err
	}
	rep.Leftovers = append(rep.Leftovers, leftovers(box, "after the warm-up's last exit")...)
	settle()
	if rep.Start, err = k.sample(residents, cfg.ProfileDir, "heap-start.pb.gz"); err != nil {
		return rep, err
	}
	logf("start, after %d warm-up containers: %s", warm, rep.Start)

	var background sync.WaitGroup
	var peak Sample
	var peakErr error
	defer background.Wait()
	err = c.run(ctx, warm, cfg.Containers, interval, func(i int) {
		switch i {
		case warm + (cfg.Containers-warm)/2:
			if cfg.ProfileDir != "" {
				background.Add(1)
				go func() {
					defer background.Done()
					if err := k.save("/debug/pprof/profile?seconds=20", filepath.Join(cfg.ProfileDir, "cpu.pb.gz")); err != nil {
						logf("CPU profile: %v", err)
					}
				}()
			}
		case cfg.Containers - cfg.Containers/20 - 1:
			background.Add(1)
			go func() {
				defer background.Done()
				if peak, peakErr = k.sample(residents+c.aliveNow(), "", ""); peakErr == nil {
					logf("during the churn: %s", peak)
				}
			}()
		}
	})
	if err != nil {
		return rep, err
	}
	background.Wait()
	if peakErr != nil {
		return rep, peakErr
	}
	rep.Peak = peak
	if err := c.drain(2*meanLife + time.Minute); err != nil {
		return rep, err
	}
	rep.Leftovers = append(rep.Leftovers, leftovers(box, "after the last exit")...)
	c.mu.Lock()
	rep.Launched, rep.LaunchErrors, rep.Killed, rep.MaxAlive = c.launched, c.launchErrors, c.killed, c.maxAlive
	rep.Churn = c.lastExit.Sub(first)
	c.mu.Unlock()
	// One resync after the last exit the store must hold exactly the
	// containers whose cgroups exist: the residents.
	settle()
	if rep.End, err = k.sample(residents, cfg.ProfileDir, "heap-end.pb.gz"); err != nil {
		return rep, err
	}
	logf("end, churn drained: %s", rep.End)
	rep.Leftovers = append(rep.Leftovers, leftovers(box, "at the end")...)
	rep.KoordletCPU = (rep.End.CPUSeconds - rep.Start.CPUSeconds) / rep.End.At.Sub(rep.Start.At).Seconds()
	storeIDs, storeDirs, err := k.store()
	if err != nil {
		return rep, err
	}
	fsIDs, fsDirs, err := cgroupfs(box.CgroupRoot())
	if err != nil {
		return rep, err
	}
	rep.Store, rep.Cgroupfs = storeIDs, fsIDs
	rep.Evictions = k.evictions()
	heapEnd := rep.End
	if cfg.Linger > 0 {
		logf("lingering %v", cfg.Linger)
		time.Sleep(cfg.Linger)
		later, err := k.sample(residents, cfg.ProfileDir, "heap-later.pb.gz")
		if err != nil {
			return rep, err
		}
		rep.Later, heapEnd = &later, later
		logf("later: %s", later)
	}

	growth := func(name string, start, end, slack uint64, unit string) Check {
		limit := start + uint64(float64(start)*cfg.Tolerance)
		if start+slack > limit {
			limit = start + slack
		}
		return Check{Name: name, OK: end <= limit,
			Note: fmt.Sprintf("%d%s at start, %d%s at end (limit %d%s: +%.0f%% or +%d%s)", start, unit, end, unit, limit, unit,
				cfg.Tolerance*100, slack, unit)}
	}
	rep.Checks = append(rep.Checks,
		Check{Name: "launches", OK: rep.LaunchErrors == 0, Note: fmt.Sprintf("%d launched, %d errors", rep.Launched, rep.LaunchErrors)},
		growth("open fds flat", uint64(rep.Start.FDs), uint64(rep.End.FDs), uint64(Slack.FDs), ""),
		growth("goroutines flat", uint64(rep.Start.Goroutines), uint64(rep.End.Goroutines), uint64(Slack.Goroutines), ""),
		growth("live heap outside koordlet's metric cache flat", rep.Start.HeapOther>>10, heapEnd.HeapOther>>10, Slack.Heap>>10, " KiB"),
		Check{Name: "koordlet alive", OK: box.KoordletAlive(), Note: fmt.Sprintf("pid %d", pid)},
		Check{Name: "exited containers' cgroups removed", OK: len(rep.Leftovers) == 0,
			Note: fmt.Sprintf("%d left: %s", len(rep.Leftovers), strings.Join(head(rep.Leftovers), "; "))},
		sameSet("store = cgroupfs (ids)", storeIDs, fsIDs),
		sameSet("store = cgroupfs (owned cgroup dirs)", storeDirs, fsDirs),
	)
	return rep, nil
}

// residents are the containers that live through the whole soak.
const residents = 5

// residentApp is the residents' application id.
const residentApp = 9999

// leftovers describes the container cgroups under the hierarchy that do not
// belong to residents: controller, id, the NM's view of the container, the
// processes inside and when the directory last changed.
func leftovers(box *nodebox.Box, when string) []string {
	var out []string
	for _, ctrl := range Controllers {
		dir := filepath.Join(box.CgroupRoot(), ctrl, nodebox.YARNHierarchy)
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			id := e.Name()
			if !e.IsDir() || !strings.HasPrefix(id, "container_") || strings.Contains(id, fmt.Sprintf("_%04d_", residentApp)) {
				continue
			}
			state := "unknown to the NM"
			if c, ok := box.NM.Get(id); ok {
				state = fmt.Sprintf("NM %s exit %d", c.State, c.ExitCode)
			}
			changed := ""
			if fi, err := os.Stat(filepath.Join(dir, id)); err == nil {
				changed = fi.ModTime().Format("15:04:05.000")
			}
			out = append(out, fmt.Sprintf("%s %s/%s (%s, pids %v, changed %s)", when, ctrl, id, state,
				cgtree.Pids(filepath.Join(dir, id)), changed))
		}
	}
	return out
}

// churn launches containers through the NM emulator and follows their exits.
type churn struct {
	box      *nodebox.Box
	rng      *rand.Rand
	meanLife time.Duration
	slots    chan struct{}
	logf     func(string, ...any)
	wg       sync.WaitGroup

	mu                                      sync.Mutex
	alive, maxAlive, launched, launchErrors int
	killed                                  int
	lastExit                                time.Time
}

func (c *churn) aliveNow() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.alive
}

// run launches containers from..to-1, one every interval (later when the
// concurrency bound is reached), calling each(i) before the i-th launch.
func (c *churn) run(ctx context.Context, from, to int, interval time.Duration, each func(i int)) error {
	begin := time.Now()
	for i := from; i < to; i++ {
		if d := time.Until(begin.Add(time.Duration(i-from) * interval)); d > 0 {
			time.Sleep(d)
		}
		select {
		case c.slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		if each != nil {
			each(i)
		}
		if i > from && (i-from)%((to-from)/10+1) == 0 {
			c.logf("%d launched, %d alive", i, c.aliveNow())
		}
		c.launch(i)
	}
	return nil
}

// launch starts container i with a lifetime around meanLife. Every fifth
// container forks a child; every fifth other one runs until the NM ends it
// (as when its application finishes); the rest exit by themselves.
func (c *churn) launch(i int) {
	life := c.meanLife/2 + time.Duration(c.rng.Int63n(int64(c.meanLife)+1))
	secs := fmt.Sprintf("%.3f", life.Seconds())
	script := "exec sleep " + secs
	endedByNM := i%5 == 3
	switch {
	case i%5 == 1:
		script = "sleep " + secs + " & exec sleep " + secs
	case endedByNM:
		script = "exec sleep 3600"
	}
	spec := nmemu.Spec{AppID: int64(1000 + i/20), Attempt: 1, Sequence: int64(i%20 + 1), User: "soak",
		MemoryMB: 512, VCores: 1, Opportunistic: i%7 == 0, Script: script}
	id, err := c.box.NM.Launch(spec)
	c.mu.Lock()
	c.launched++
	if err != nil {
		c.launchErrors++
		c.mu.Unlock()
		c.logf("launch %s: %v", id, err)
		<-c.slots
		return
	}
	c.alive++
	c.maxAlive = max(c.maxAlive, c.alive)
	c.mu.Unlock()
	if endedByNM {
		time.AfterFunc(life, func() { c.box.NM.Exit(id) })
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		<-c.box.NM.Exited(id)
		c.mu.Lock()
		c.alive--
		c.lastExit = time.Now()
		if endedByNM {
			c.killed++
		}
		c.mu.Unlock()
		<-c.slots
	}()
}

// drain waits until every launched container has exited.
func (c *churn) drain(timeout time.Duration) error {
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("soak: %d containers still alive %v after the last launch", c.aliveNow(), timeout)
	}
}

// sameSet compares two id lists.
func sameSet(name string, store, fs []string) Check {
	in := map[string]bool{}
	for _, s := range store {
		in[s] = true
	}
	var onlyFS, onlyStore []string
	for _, f := range fs {
		if !in[f] {
			onlyFS = append(onlyFS, f)
		}
		delete(in, f)
	}
	for s := range in {
		onlyStore = append(onlyStore, s)
	}
	sort.Strings(onlyStore)
	if len(onlyFS) == 0 && len(onlyStore) == 0 {
		return Check{Name: name, OK: true, Note: fmt.Sprintf("%d equal entries", len(fs))}
	}
	return Check{Name: name, Note: fmt.Sprintf("only in the store %v, only in cgroupfs %v", head(onlyStore), head(onlyFS))}
}

func head(s []string) []string {
	if len(s) > 10 {
		return append(s[:10:10], fmt.Sprintf("... %d more", len(s)-10))
	}
	return s
}

// cgroupfs lists the container_* directories under the box's hierarchy:
// the ids, and "<controller>:<id>" for each directory.
func cgroupfs(root string) (ids, dirs []string, err error) {
	seen := map[string]bool{}
	for _, ctrl := range Controllers {
		entries, err := os.ReadDir(filepath.Join(root, ctrl, nodebox.YARNHierarchy))
		if err != nil {
			return nil, nil, err
		}
		for _, e := range entries {
			if !e.IsDir() || !strings.HasPrefix(e.Name(), "container_") {
				continue
			}
			dirs = append(dirs, ctrl+":"+e.Name())
			if !seen[e.Name()] {
				seen[e.Name()] = true
				ids = append(ids, e.Name())
			}
		}
	}
	sort.Strings(ids)
	sort.Strings(dirs)
	return ids, dirs, nil
}

// koordletPID finds the box's koordlet: the child of this process running
// bin/koordlet (only one box runs on a machine).
func koordletPID() (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	self := os.Getpid()
	var found []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil || strings.TrimSpace(string(comm)) != "koordlet" {
			continue
		}
		if ppid(pid) == self {
			found = append(found, pid)
		}
	}
	if len(found) != 1 {
		return 0, fmt.Errorf("soak: expected one koordlet child of this process, found %v", found)
	}
	return found[0], nil
}

func ppid(pid int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 2 {
		return 0
	}
	p, _ := strconv.Atoi(fields[1])
	return p
}

// koordlet reads one koordlet's footprint.
type koordlet struct {
	box   *nodebox.Box
	pid   int
	pprof string
}

// sample takes three readings a second apart and keeps the median of each
// figure, saving a heap profile to dir/name when both are set.
func (k *koordlet) sample(alive int, dir, name string) (Sample, error) {
	var ss []Sample
	for i := 0; i < 3; i++ {
		if i > 0 {
			time.Sleep(time.Second)
		}
		s := Sample{At: time.Now(), Alive: alive}
		fds, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(k.pid), "fd"))
		if err != nil {
			return s, fmt.Errorf("soak: koordlet's fds: %w", err)
		}
		s.FDs = len(fds)
		profile := ""
		if i == 2 && dir != "" && name != "" {
			profile = filepath.Join(dir, name)
		}
		h, err := k.heap(profile)
		if err != nil {
			return s, err
		}
		s.HeapLive, s.HeapTSDB, s.HeapInuse = h.live, h.tsdb, h.inuse
		s.HeapOther = h.live - min(h.tsdb, h.live)
		fams, err := k.box.MetricFamilies()
		if err != nil {
			return s, fmt.Errorf("soak: %w", err)
		}
		gauge := func(name string) (float64, error) {
			f, ok := fams[name]
			if !ok || len(f.Metric) == 0 {
				return 0, fmt.Errorf("soak: koordlet's /metrics has no %s", name)
			}
			m := f.Metric[0]
			switch {
			case m.Gauge != nil:
				return m.Gauge.GetValue(), nil
			case m.Counter != nil:
				return m.Counter.GetValue(), nil
			}
			return 0, fmt.Errorf("soak: %s is neither a gauge nor a counter", name)
		}
		g, err := gauge("go_goroutines")
		if err != nil {
			return s, err
		}
		s.Goroutines = int(g)
		rss, err := gauge("process_resident_memory_bytes")
		if err != nil {
			return s, err
		}
		s.RSS = uint64(rss)
		if series, err := gauge("prometheus_tsdb_head_series"); err == nil {
			s.HeadSeries = int(series)
		}
		if s.CPUSeconds, err = gauge("process_cpu_seconds_total"); err != nil {
			return s, err
		}
		ss = append(ss, s)
	}
	med := ss[1]
	med.FDs = medianInt(ss, func(s Sample) int { return s.FDs })
	med.Goroutines = medianInt(ss, func(s Sample) int { return s.Goroutines })
	med.HeapLive = uint64(medianInt(ss, func(s Sample) int { return int(s.HeapLive) }))
	med.HeapTSDB = uint64(medianInt(ss, func(s Sample) int { return int(s.HeapTSDB) }))
	med.HeapOther = uint64(medianInt(ss, func(s Sample) int { return int(s.HeapOther) }))
	med.HeapInuse = uint64(medianInt(ss, func(s Sample) int { return int(s.HeapInuse) }))
	med.HeadSeries = medianInt(ss, func(s Sample) int { return s.HeadSeries })
	med.RSS = uint64(medianInt(ss, func(s Sample) int { return int(s.RSS) }))
	return med, nil
}

func medianInt(ss []Sample, f func(Sample) int) int {
	v := make([]int, len(ss))
	for i, s := range ss {
		v[i] = f(s)
	}
	sort.Ints(v)
	return v[len(v)/2]
}

// heapFigures are koordlet's heap figures after a forced GC.
type heapFigures struct {
	live, tsdb, inuse uint64
	// rate is the profile's sampling rate (runtime.MemProfileRate).
	rate float64
}

// metricCacheFrames mark the stacks of allocations kept by koordlet's
// metric cache: its Prometheus TSDB, and the label sets koordlet's
// appender builds for it.
var metricCacheFrames = []string{"github.com/prometheus/prometheus/tsdb", "github.com/koordinator-sh/koordinator/pkg/koordlet/metriccache."}

// heap forces a GC in koordlet and reads its heap profile in the text
// format (debug=1): HeapAlloc and HeapInuse from the runtime.MemStats it
// ends with, and the in-use bytes of the sampled stacks through koordlet's
// metric cache (metricCacheFrames), scaled for the sampling as pprof does;
// with path set it also saves the binary profile there.
func (k *koordlet) heap(path string) (heapFigures, error) {
	var h heapFigures
	resp, err := httpGet(k.pprof + "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return h, err
	}
	defer resp.Body.Close()
	h, err = parseHeap(resp.Body)
	if err != nil {
		return h, err
	}
	if path != "" {
		if err := k.save("/debug/pprof/heap", path); err != nil {
			return h, err
		}
	}
	return h, nil
}

// parseHeap reads a Go heap profile in the text format.
func parseHeap(r io.Reader) (heapFigures, error) {
	var h heapFigures
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	rate := 0.0
	var objects, bytes float64
	tsdb := false
	flush := func() {
		if tsdb && objects > 0 && bytes > 0 {
			scale := 1.0
			if rate > 1 {
				scale = 1 / (1 - math.Exp(-bytes/objects/rate))
			}
			h.tsdb += uint64(bytes * scale)
		}
		objects, bytes, tsdb = 0, 0, false
	}
	var haveLive, haveInuse bool
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "heap profile:"):
			// heap profile: N: B [N: B] @ heap/<2*MemProfileRate>
			if i := strings.LastIndex(line, "heap/"); i >= 0 {
				if v, err := strconv.ParseFloat(line[i+len("heap/"):], 64); err == nil {
					rate = v / 2
				}
			}
		case strings.HasPrefix(line, "# HeapAlloc = "):
			v, err := strconv.ParseUint(strings.TrimPrefix(line, "# HeapAlloc = "), 10, 64)
			h.live, haveLive = v, err == nil
		case strings.HasPrefix(line, "# HeapInuse = "):
			v, err := strconv.ParseUint(strings.TrimPrefix(line, "# HeapInuse = "), 10, 64)
			h.inuse, haveInuse = v, err == nil
		case strings.HasPrefix(line, "#"):
			for _, f := range metricCacheFrames {
				if strings.Contains(line, f) {
					tsdb = true
				}
			}
		case strings.Contains(line, "] @"):
			// <inuse objects>: <inuse bytes> [<alloc objects>: <alloc bytes>] @ <pcs>
			flush()
			var o, b, ao, ab float64
			if _, err := fmt.Sscanf(line, "%g: %g [%g: %g]", &o, &b, &ao, &ab); err == nil {
				objects, bytes = o, b
			}
		}
	}
	flush()
	h.rate = rate
	if err := sc.Err(); err != nil {
		return h, err
	}
	if !haveLive || !haveInuse {
		return h, fmt.Errorf("soak: no HeapAlloc/HeapInuse in koordlet's heap profile")
	}
	return h, nil
}

// save writes a pprof endpoint's body to path.
func (k *koordlet) save(endpoint, path string) error {
	resp, err := httpGet(k.pprof + endpoint)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func httpGet(url string) (*http.Response, error) {
	client := http.Client{Timeout: time.Minute}
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	return resp, nil
}

// resyncInterval is the informer's resync period, from two consecutive
// resyncs seen on /yarn/containers.
func (k *koordlet) resyncInterval() (time.Duration, error) {
	r, err := k.box.Containers()
	if err != nil {
		return 0, err
	}
	first := r.Informer.LastResync
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		r, err := k.box.Containers()
		if err != nil {
			return 0, err
		}
		if r.Informer.LastResync.After(first) {
			if first.IsZero() {
				first = r.Informer.LastResync
				continue
			}
			return r.Informer.LastResync.Sub(first).Round(100 * time.Millisecond), nil
		}
	}
	return 0, fmt.Errorf("soak: no resync within a minute")
}

// store lists the containers in /yarn/containers: the ids, and
// "<controller>:<id>" for each owned cgroup.
func (k *koordlet) store() (ids, dirs []string, err error) {
	r, err := k.box.Containers()
	if err != nil {
		return nil, nil, err
	}
	for _, c := range r.Containers {
		ids = append(ids, c.Name)
		for _, ctrl := range Controllers {
			cc, ok := cgroups.ParseController(ctrl)
			if !ok {
				continue
			}
			if ref := c.Cgroups[cc]; ref.Owned && ref.Dir == nodebox.YARNHierarchy+"/"+c.Name {
				dirs = append(dirs, ctrl+":"+c.Name)
			}
		}
	}
	sort.Strings(ids)
	sort.Strings(dirs)
	return ids, dirs, nil
}

// evictions sums koordlet_yarn_container_evictions_total (-1 when
// koordlet's /metrics cannot be read).
func (k *koordlet) evictions() float64 {
	fams, err := k.box.MetricFamilies()
	if err != nil {
		return -1
	}
	return nodebox.CounterSum(fams, "koordlet_yarn_container_evictions_total", "", "")
}
