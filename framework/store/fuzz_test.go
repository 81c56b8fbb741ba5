package store

import (
	"bytes"
	"io"
	"runtime"
	"slices"
	"testing"
	"time"

	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// nmResponseAllocBound is what the NM response path (decode and resync) may
// allocate for a body of n bytes. The costs are per list entry, and entries
// are capped at yarn.MaxNMContainers: a kept container costs a few KiB
// (token-streamed decode, store entry, the resync's growing scratch) for at
// least 37 body bytes, a dropped entry well under 1 KiB for at least 11
// bytes; a value over yarn.MaxNMValueBytes fails before it is buffered.
// Anything superlinear in the body breaks the bound.
func nmResponseAllocBound(n int) uint64 { return 1<<20 + 160*uint64(n) }

// FuzzNMResponse drives the whole NM response path: an NM body is decoded
// as the NM client does and the result merged into a store that already
// knows containers from a cgroup scan, the NM and an event, as the informer
// does. Invariants: no panic; every container in the store has a valid,
// canonical id and requests in range; only the scan and the event give a
// container cgroups; a decode error leaves the store unchanged; the merge
// is idempotent; allocation is bounded by nmResponseAllocBound.
//
// The seed corpus in testdata/fuzz/FuzzNMResponse (the documented shapes,
// the null/empty/single-object variants, numbers as strings, unknown
// fields, RemoteException, bad numbers and hostile bodies) runs with every
// go test; make fuzz mutates it for a while.
func FuzzNMResponse(f *testing.F) {
	// Bad entries are logged; thousands of fuzz inputs would flood the output.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	f.Cleanup(func() { klog.LogToStderr(true) })

	f.Fuzz(checkNMResponse)
}

// checkNMResponse runs one body through the path and checks the invariants.
func checkNMResponse(t *testing.T, body []byte) {
	s, scan, scanStart := fuzzStore()
	before := values(s)

	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	list, err := yarn.DecodeContainers(bytes.NewReader(body))
	obs := Observation{Scan: scan, ScanOK: true, NM: list, NMOK: err == nil, Started: scanStart}
	now := scanStart.Add(time.Second)
	st := s.Resync(obs, now)
	runtime.ReadMemStats(&m1)

	if alloc, bound := m1.TotalAlloc-m0.TotalAlloc, nmResponseAllocBound(len(body)); alloc > bound {
		t.Fatalf("a %d-byte body allocated %d bytes (bound %d)", len(body), alloc, bound)
	}
	if err != nil {
		if st != (Stats{}) {
			t.Fatalf("a decode error (%v) changed the store: %+v", err, st)
		}
		if after := values(s); !equalValues(before, after) {
			t.Fatalf("a decode error (%v) changed the store:\nbefore %+v\nafter  %+v", err, before, after)
		}
		return
	}
	checkInvariants(t, s, list)
	// Every id taken is spelled in the body exactly as it is kept: an id
	// that only parses to a container (more leading zeros) is not it.
	if !bytes.ContainsRune(body, '\\') {
		for _, n := range list {
			if !bytes.Contains(body, []byte(`"`+n.ID.String()+`"`)) {
				t.Fatalf("decoded container %s is not spelled so in the body", n.ID)
			}
		}
	}
	// The same observation again changes nothing.
	if st := s.Resync(obs, now.Add(time.Second)); st != (Stats{}) {
		t.Fatalf("resync is not idempotent: %+v", st)
	}
}

// fuzzStore returns a store that knows containers 1 (scan and NM), 2 (scan
// only), 3 (NM only, localizing) and 4 (its cgroup seen by an event after
// the next scan began), with that scan (containers 1 and 2) and its start.
func fuzzStore() (*Store, []cgroups.Container, time.Time) {
	s := New()
	scan := []cgroups.Container{scanned(1, 10), scanned(2, 20)}
	s.Resync(Observation{
		Scan: scan, ScanOK: true,
		NM: []yarn.NMContainer{nm(1, yarn.StateRunning), nm(3, yarn.StateLocalizing)}, NMOK: true,
	}, t0)
	scanStart := t0.Add(time.Second)
	id := cid(4)
	s.Observe(CgroupEvent{Type: CgroupCreated, Name: id.String(), ID: id, Controller: cgroups.CPU,
		Dir: "kubepods/besteffort/hadoop-yarn/" + id.String()}, scanStart.Add(time.Millisecond))
	return s, scan, scanStart
}

// values copies the store's containers.
func values(s *Store) []Container {
	var out []Container
	for _, c := range s.Snapshot() {
		out = append(out, *c)
	}
	return out
}

func equalValues(a, b []Container) bool {
	return slices.EqualFunc(a, b, func(x, y Container) bool {
		return x.equal(&y) && x.ID == y.ID && x.ApplicationID == y.ApplicationID &&
			x.IsAM == y.IsAM && x.FirstSeen.Equal(y.FirstSeen)
	})
}

func checkInvariants(t *testing.T, s *Store, list []yarn.NMContainer) {
	t.Helper()
	withCgroup := map[yarn.ContainerID]bool{cid(1): true, cid(2): true, cid(4): true}
	for _, c := range s.Snapshot() {
		id, err := yarn.ParseContainerID(c.Name)
		if err != nil || id != c.ID || id.String() != c.Name {
			t.Fatalf("container %q has id %+v: not a canonical container id (%v)", c.Name, c.ID, err)
		}
		if c.RequestMilliCPU < 0 || c.RequestMilliCPU > yarn.MaxVCores*1000 ||
			c.RequestMemoryBytes < 0 || c.RequestMemoryBytes > yarn.MaxMemoryMB<<20 {
			t.Fatalf("container %s has requests out of range: %d milli-CPU, %d bytes", c.Name, c.RequestMilliCPU, c.RequestMemoryBytes)
		}
		if c.Source == 0 {
			t.Fatalf("container %s has no source", c.Name)
		}
		if (c.HasCgroup() || c.Cgroups != (cgroups.Cgroups{}) || len(c.Pids) > 0) && !withCgroup[c.ID] {
			t.Fatalf("container %s got cgroups or pids from the NM: %+v", c.Name, c)
		}
	}
	for _, n := range list {
		if n.TotalVCoresNeeded < 0 || n.TotalVCoresNeeded > yarn.MaxVCores || n.TotalMemoryNeededMB < 0 || n.TotalMemoryNeededMB > yarn.MaxMemoryMB {
			t.Fatalf("decoded container %s has requests out of range: %+v", n.ID, n)
		}
		if _, ok := s.GetByID(n.ID); !ok && (!yarn.IsTerminalState(n.State) || withCgroup[n.ID]) {
			t.Fatalf("container %s listed by the NM (%s) is not in the store", n.ID, n.State)
		}
	}
}
