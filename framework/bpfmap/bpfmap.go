// Package bpfmap holds the BPF map operations the plugin set's eBPF
// loaders share: reading a per-CPU counter, and deleting a key that may
// be gone already.
package bpfmap

import (
	"errors"

	"github.com/cilium/ebpf"
)

// Counter returns the sum over CPUs of the per-CPU array m's value at
// index 0 (a counter each CPU adds to, such as the events a ring buffer
// had no room for).
func Counter(m *ebpf.Map) (uint64, error) {
	var perCPU []uint64
	if err := m.Lookup(uint32(0), &perCPU); err != nil {
		return 0, err
	}
	var n uint64
	for _, v := range perCPU {
		n += v
	}
	return n, nil
}

// Delete deletes key from m; a key that is not there is no error.
func Delete(m *ebpf.Map, key any) error {
	if err := m.Delete(key); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return err
	}
	return nil
}
