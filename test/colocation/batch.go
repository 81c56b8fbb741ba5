package colocation

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
)

// BatchShape is the YARN batch beside the LS service: one application
// whose ApplicationMaster runs for the whole episode and whose executors
// arrive and finish over it, as a Spark stage's do.
type BatchShape struct {
	// Executors run at once (a finished one is replaced at once).
	Executors int
	// HogThreads are the CPU-burning threads of a CPU executor.
	HogThreads int
	// MemoryMiB is what a memory executor allocates (at 256 MiB/s, then
	// holds); every third executor is one, with one burning thread (0:
	// none, CPU executors only).
	MemoryMiB int
	// MinLife and MaxLife bound an executor's lifetime.
	MinLife, MaxLife time.Duration
	// MemoryHighMiB throttles every memory executor (cgroup v2): its
	// container cgroup's memory.high, written as it is launched, so that
	// its growth past that is slowed by reclaim instead of faulting in
	// pages at full speed (0: no throttle).
	MemoryHighMiB int
}

// DefaultBatch: 3 executors at a time, CPU executors with 2 threads (with
// one memory executor: 5 threads on a 2-CPU node), memory executors of
// 512 MiB, lifetimes of 4–10 s.
var DefaultBatch = BatchShape{Executors: 3, HogThreads: 2, MemoryMiB: 512, MinLife: 4 * time.Second, MaxLife: 10 * time.Second}

// batch drives one episode's YARN application through the NodeManager
// emulator.
type batch struct {
	nm    *nmemu.NM
	shape BatchShape
	app   int64
	rng   *rand.Rand
	stop  chan struct{}
	wg    sync.WaitGroup

	mu       sync.Mutex
	seq      int64
	launched int
	evicted  int
	err      error
}

// startBatch launches application app's AM and its executors.
func startBatch(nm *nmemu.NM, shape BatchShape, app int64, seed int64) (*batch, error) {
	b := &batch{nm: nm, shape: shape, app: app, rng: rand.New(rand.NewSource(seed)), stop: make(chan struct{})}
	am, err := b.launch("exec sleep 3600")
	if err != nil {
		return nil, err
	}
	b.wg.Add(1)
	go b.watch(am, 0)
	for slot := 0; slot < shape.Executors; slot++ {
		b.wg.Add(1)
		go b.slot()
	}
	return b, nil
}

// executorScript is the shell script of the n-th executor.
func (b *batch) executorScript(n int) string {
	burn := kerneltest.HelperScript("burn")
	threads := make([]string, 0, b.shape.HogThreads+1)
	if b.memoryExecutor(n) {
		threads = append(threads, kerneltest.HelperScript(fmt.Sprintf("grow=%d@256", b.shape.MemoryMiB)), burn)
	} else {
		for i := 0; i < b.shape.HogThreads; i++ {
			threads = append(threads, burn)
		}
	}
	return strings.Join(threads, " & ") + " & wait"
}

// memoryExecutor says whether the n-th executor is a memory one.
func (b *batch) memoryExecutor(n int) bool { return n%3 == 2 && b.shape.MemoryMiB > 0 }

// throttle writes MemoryHighMiB to container id's memory.high (its
// unified cgroup, which the NodeManager emulator made for it this run).
func (b *batch) throttle(id string) error {
	file := filepath.Join(b.nm.CgroupDir("", id), "memory.high")
	if err := os.WriteFile(file, []byte(strconv.FormatInt(int64(b.shape.MemoryHighMiB)<<20, 10)), 0o644); err != nil {
		return fmt.Errorf("throttle memory executor %s (needs cgroup v2): %w", id, err)
	}
	return nil
}

func (b *batch) launch(script string) (string, error) {
	b.mu.Lock()
	b.seq++
	seq := b.seq
	b.launched++
	b.mu.Unlock()
	id, err := b.nm.Launch(nmemu.Spec{AppID: b.app, Attempt: 1, Sequence: seq, User: "spark", MemoryMB: 1024, VCores: 1, Script: script})
	if err != nil {
		return "", fmt.Errorf("launch YARN container: %w", err)
	}
	return id, nil
}

func (b *batch) life() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	span := b.shape.MaxLife - b.shape.MinLife
	if span <= 0 {
		return b.shape.MinLife
	}
	return b.shape.MinLife + time.Duration(b.rng.Int63n(int64(span)))
}

// slot keeps one executor running: each lives its lifetime (then the
// application finishes it) and is replaced, until the episode ends.
func (b *batch) slot() {
	defer b.wg.Done()
	for {
		select {
		case <-b.stop:
			return
		default:
		}
		b.mu.Lock()
		n := b.launched
		b.mu.Unlock()
		id, err := b.launch(b.executorScript(n))
		if err == nil && b.memoryExecutor(n) && b.shape.MemoryHighMiB > 0 {
			err = b.throttle(id)
		}
		if err != nil {
			b.fail(err)
			return
		}
		b.wg.Add(1)
		b.watch(id, b.life())
	}
}

// watch waits for container id to exit: after life (0: at the episode's
// end) the application ends it; exiting before that is an eviction.
func (b *batch) watch(id string, life time.Duration) {
	defer b.wg.Done()
	var timer <-chan time.Time
	if life > 0 {
		timer = time.After(life)
	}
	select {
	case <-b.nm.Exited(id):
		b.mu.Lock()
		b.evicted++
		b.mu.Unlock()
		return
	case <-timer:
	case <-b.stop:
	}
	b.nm.Exit(id)
	<-b.nm.Exited(id)
}

func (b *batch) fail(err error) {
	b.mu.Lock()
	if b.err == nil {
		b.err = err
	}
	b.mu.Unlock()
}

// finish ends every container and returns how many were evicted and the
// first launch error.
func (b *batch) finish() (evicted, launched int, err error) {
	close(b.stop)
	b.wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.evicted, b.launched, b.err
}
