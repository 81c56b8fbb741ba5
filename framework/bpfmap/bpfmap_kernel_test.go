package bpfmap

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

func newMap(t *testing.T, spec *ebpf.MapSpec) *ebpf.Map {
	t.Helper()
	if err := rlimit.RemoveMemlock(); err != nil {
		kerneltest.Skipf(t, "real-kernel test: %v", err)
	}
	m, err := ebpf.NewMap(spec)
	if err != nil {
		kerneltest.Skipf(t, "real-kernel test: cannot make a BPF map here: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// TestRealKernelCounter: the counter is the sum over CPUs.
func TestRealKernelCounter(t *testing.T) {
	m := newMap(t, &ebpf.MapSpec{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	n, err := Counter(m)
	require.NoError(t, err)
	assert.Zero(t, n)
	cpus, err := ebpf.PossibleCPU()
	require.NoError(t, err)
	perCPU := make([]uint64, cpus)
	for i := range perCPU {
		perCPU[i] = uint64(i + 1)
	}
	require.NoError(t, m.Put(uint32(0), perCPU))
	n, err = Counter(m)
	require.NoError(t, err)
	assert.Equal(t, uint64(cpus*(cpus+1)/2), n)
}

// TestRealKernelDelete: a cgroups.Key is a 16-byte map key as it is; deleting
// one that is not there is no error.
func TestRealKernelDelete(t *testing.T) {
	m := newMap(t, &ebpf.MapSpec{Type: ebpf.Hash, KeySize: 16, ValueSize: 1, MaxEntries: 4})
	k := cgroups.Key{HierarchyID: 3, ID: 42}
	require.NoError(t, m.Put(k, uint8(1)))
	var v uint8
	require.NoError(t, m.Lookup(cgroups.Key{HierarchyID: 3, ID: 42}, &v))
	assert.Equal(t, uint8(1), v)
	require.NoError(t, Delete(m, k))
	require.NoError(t, Delete(m, k), "a key already gone")
	assert.Error(t, m.Lookup(k, &v))
}
