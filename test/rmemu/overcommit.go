package rmemu

import (
	"sort"
	"time"
)

// The scheduler's side of updateNodeResource, as Hadoop's
// AbstractYarnScheduler does it (YARN-999, YARN-5202): a node whose
// capacity is set below what is allocated on it takes no new containers;
// an update that changes the node's resource (one with the same resource
// changes nothing) with an overCommitTimeout ≥ 0 sets the timeout
// (replacing an earlier one; 0 kills during the update), and once it has
// passed, at each of the node's heartbeats, the
// scheduler kills containers until the allocation fits the capacity, in
// SchedulerNode.getContainersToKill's order: ApplicationMasters last,
// OPPORTUNISTIC before GUARANTEED, the newest first. The AMs see those
// containers PREEMPTED (-102); the NodeManager kills them as asked by the
// RM. Fitting is memory only, as the CapacityScheduler's default
// DefaultResourceCalculator compares. Without SetNodeContainers the
// emulator knows no allocations and preempts nothing.

// Running is a container the scheduler holds on a node: what the
// NodeManager's heartbeats report and the RM allocated.
type Running struct {
	ID                string
	MemoryMB, VCores  int64
	AM, Opportunistic bool
	// Created is when the RM allocated it (the kill order's tie-break).
	Created time.Time
}

// NodeContainers is the scheduler's view of one node: its running
// containers, and how it ends one (the NodeManager kills it when the
// RM's heartbeat response lists it).
type NodeContainers struct {
	Running func() []Running
	Preempt func(id string)
}

// Preemption is one container the emulated scheduler killed to end an
// over-commit.
type Preemption struct {
	Time   time.Time
	NodeID string
	ID     string
}

// heartbeat is how often each node with containers known heartbeats
// (yarn.resourcemanager.nodemanagers.heartbeat-interval-ms, 1000 by
// default).
const heartbeat = time.Second

// SetNodeContainers gives the scheduler node nodeID's containers; from
// then on the node heartbeats every second until Stop.
func (rm *RM) SetNodeContainers(nodeID string, nc NodeContainers) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if rm.running == nil {
		rm.running = map[string]NodeContainers{}
	}
	rm.running[nodeID] = nc
	if rm.stop == nil {
		rm.stop = make(chan struct{})
		rm.beating.Add(1)
		go rm.heartbeats(rm.stop)
	}
}

// ClearNodeContainers forgets node nodeID's containers: the scheduler
// preempts nothing there any more.
func (rm *RM) ClearNodeContainers(nodeID string) {
	rm.mu.Lock()
	delete(rm.running, nodeID)
	rm.mu.Unlock()
}

// Stop ends the heartbeats SetNodeContainers started and waits for the
// one under way.
func (rm *RM) Stop() {
	rm.mu.Lock()
	if rm.stop != nil {
		close(rm.stop)
		rm.stop = nil
	}
	rm.mu.Unlock()
	rm.beating.Wait()
}

// Preemptions returns the containers killed for over-commits so far.
func (rm *RM) Preemptions() []Preemption {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	return append([]Preemption(nil), rm.preempted...)
}

func (rm *RM) heartbeats(stop <-chan struct{}) {
	defer rm.beating.Done()
	t := time.NewTicker(heartbeat)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			rm.mu.Lock()
			ids := make([]string, 0, len(rm.running))
			for id := range rm.running {
				ids = append(ids, id)
			}
			rm.mu.Unlock()
			for _, id := range ids {
				rm.Heartbeat(id, now)
			}
		}
	}
}

// Heartbeat is node nodeID's heartbeat at now: past its over-commit
// timeout, the containers to kill are killed (their Preempt called
// outside the RM's lock). A container killed before no longer holds its
// allocation (the RM releases it at the kill), even while the NodeManager
// still reports it. Heartbeats of one RM are serialized.
func (rm *RM) Heartbeat(nodeID string, now time.Time) {
	rm.beat.Lock()
	defer rm.beat.Unlock()
	rm.mu.Lock()
	nc, ok := rm.running[nodeID]
	deadline, set := rm.overcommit[nodeID]
	capacity := rm.nodes[nodeID]
	rm.mu.Unlock()
	if !ok || !set || now.Before(deadline) || nc.Running == nil || nc.Preempt == nil {
		return
	}
	var held []Running
	running := nc.Running()
	rm.mu.Lock()
	for _, c := range running {
		if !rm.killed[c.ID] {
			held = append(held, c)
		}
	}
	rm.mu.Unlock()
	kill := ToKill(held, capacity.MemoryMB)
	if len(kill) == 0 {
		return
	}
	rm.mu.Lock()
	if rm.killed == nil {
		rm.killed = map[string]bool{}
	}
	for _, id := range kill {
		rm.killed[id] = true
		rm.preempted = append(rm.preempted, Preemption{Time: now, NodeID: nodeID, ID: id})
	}
	rm.mu.Unlock()
	for _, id := range kill {
		nc.Preempt(id)
	}
}

// ToKill returns the containers the scheduler kills so that what running
// holds fits capacityMB: none when it fits, else in
// getContainersToKill's order until it does.
func ToKill(running []Running, capacityMB int64) []string {
	var allocated int64
	for _, c := range running {
		allocated += c.MemoryMB
	}
	unallocated := capacityMB - allocated
	if unallocated >= 0 {
		return nil
	}
	order := append([]Running(nil), running...)
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if a.AM != b.AM {
			return !a.AM
		}
		if a.Opportunistic != b.Opportunistic {
			return a.Opportunistic
		}
		return a.Created.After(b.Created)
	})
	var out []string
	for _, c := range order {
		out = append(out, c.ID)
		unallocated += c.MemoryMB
		if unallocated >= 0 {
			break
		}
	}
	return out
}

// used is the memory and vcores node nodeID's known containers hold, and
// how many they are (0 when none are known). The view is read outside the
// RM's lock.
func (rm *RM) used(nodeID string) (memoryMB, vcores int64, n int) {
	rm.mu.Lock()
	nc, ok := rm.running[nodeID]
	rm.mu.Unlock()
	if !ok || nc.Running == nil {
		return 0, 0, 0
	}
	for _, c := range nc.Running() {
		memoryMB += c.MemoryMB
		vcores += c.VCores
		n++
	}
	return memoryMB, vcores, n
}
