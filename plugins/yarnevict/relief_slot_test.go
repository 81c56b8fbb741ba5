package yarnevict

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/metriccache"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/kill"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/relief"
)

// reliefSlot is koordlet's memory slot with the YARN-aware BE trigger and
// memory relief on the fake v2 root: a 40000-MiB node, NodeSLO's threshold
// 50% (20000 MiB, the throttle's band from 18000 MiB) and lower 45%, and
// one running YARN container under the root.
type reliefSlot struct {
	root   *v2Root
	slot   *Slot
	be     *MemoryEvict
	relief *relief.Relief
	audit  *kill.Audit
	clock  time.Time
}

const reliefContainer = "container_1700000000000_0042_01_000002"

func newReliefSlot(t *testing.T) *reliefSlot {
	root := newV2Root(t)
	reliefGates(t, true)
	const mib = int64(1 << 20)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(40000*mib, resource.BinarySI)}}}
	slo := &slov1alpha1.NodeSLO{Spec: slov1alpha1.NodeSLOSpec{ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{
		Enable: ptr.To(true), MemoryEvictThresholdPercent: ptr.To[int64](50), MemoryEvictLowerPercent: ptr.To[int64](45)}}}
	// One YARN container (no process in its fake cgroup: a kill signals
	// nothing and fails, its audit record says why it was chosen).
	id, err := yarn.ParseContainerID(reliefContainer)
	require.NoError(t, err)
	dir := reliefRoot + "/" + reliefContainer
	st := store.New()
	st.Resync(store.Observation{ScanOK: true, Scan: []cgroups.Container{{Name: reliefContainer, ID: id, Pids: []int{1 << 30},
		Cgroups: cgroups.Cgroups{cgroups.CPU: {Dir: dir, Owned: true}, cgroups.Memory: {Dir: dir, Owned: true}}}}}, time.Now())
	root.helper.WriteFileContents(dir+"/memory.stat", "anon 3221225472\nfile 0\ninactive_file 0\nactive_file 0\ninactive_anon 0\nactive_anon 3221225472\nunevictable 0\n")
	root.helper.WriteFileContents(dir+"/memory.current", "3221225472")

	s := &reliefSlot{root: root, audit: kill.NewAudit(nil, 0, 0), clock: time.Unix(1000, 0)}
	s.relief = &relief.Relief{High: cgroups.NewRootMemoryHigh(), BandPercent: func() int64 { return 5 }, Audit: s.audit,
		Now: func() time.Time { return s.clock }}
	h := cgroups.Hierarchy{CgroupRoot: root.helper.TempDir, ProcRoot: root.helper.TempDir + "/proc", Dir: reliefRoot, V2: true}
	env := newSlotEnv(t, AllocMemory, node, slo, nil, st, func(func(metriccache.MetricResource, map[metriccache.MetricProperty]string, float64)) {},
		func(d *Deps) {
			d.Relief, d.Audit, d.Hierarchy = s.relief, s.audit, func() string { return reliefRoot }
			d.Killer = func() *kill.Killer { return &kill.Killer{H: h, Grace: time.Millisecond} }
		})
	s.slot = env.slot
	s.be = &MemoryEvict{deps: env.slot.alloc.Deps, opts: env.slot.opts, interval: time.Second, cooling: 4 * time.Second, executor: env.exec}
	s.slot.be, s.slot.cooling = s.be, 4*time.Second
	return s
}

// use sets node memory used (MemTotal − MemAvailable).
func (s *reliefSlot) use(usedMiB int64) {
	const totalKiB = 40000 << 10
	s.root.helper.WriteProcSubFileContents("meminfo", fmt.Sprintf("MemTotal: %d kB\nMemFree: 1000 kB\nMemAvailable: %d kB\n", totalKiB, totalKiB-usedMiB<<10))
}

// TestSlotCoolingRunsRelief (issue 55, item 13): the rungs before the
// kill act at every check, a kill's cooling too: node memory rises into
// the band while the slot cools after an eviction, and the throttle is set
// at once; it is raised again as headroom returns, still in the cooling.
func TestSlotCoolingRunsRelief(t *testing.T) {
	s := newReliefSlot(t)
	s.slot.lastEvict = s.clock // a pod evicted just now: the slot cools for 4 s
	s.use(19000)
	s.slot.Cycle(s.clock.Add(time.Second))
	low := s.root.value()
	require.Less(t, low, cgroups.MemoryUnlimited, "throttled during the cooling")
	s.use(18200)
	s.slot.Cycle(s.clock.Add(2 * time.Second))
	assert.Greater(t, s.root.value(), low, "raised as headroom returns, in the cooling")
	s.use(10000)
	s.slot.Cycle(s.clock.Add(3 * time.Second))
	assert.Equal(t, cgroups.MemoryUnlimited, s.root.value(), "given back below the band, in the cooling")
}

// TestMemoryEvictHeldAtTheFloorKills (issue 55, item 3): LS holds node
// memory in the band, past its middle, under the threshold; the YARN
// root's anon memory presses against the memory.high the throttle holds at
// its floor. Without the RM rung the hold escalates to a kill of the
// ranked YARN container once it has lasted DefaultFloorHoldLimit, its
// audit record saying why; not before.
func TestMemoryEvictHeldAtTheFloorKills(t *testing.T) {
	s := newReliefSlot(t)
	const mib = int64(1 << 20)
	s.use(19700) // the band's middle is 19000 MiB
	anon := int64(3 << 30)
	s.root.charge(anon+256*mib, 256*mib)
	evictions := func() (n int, why string) {
		recs, _ := s.audit.Recent()
		for _, r := range recs {
			if r.IsEviction() {
				n++
				why = r.Why
			}
		}
		return n, why
	}
	start := s.clock
	for i := 0; i <= 40; i++ {
		s.clock = start.Add(time.Duration(i) * time.Second)
		s.slot.Cycle(s.clock)
		if n, _ := evictions(); n > 0 {
			assert.GreaterOrEqual(t, s.clock.Sub(start), 30*time.Second, "not before the hold has lasted its bound")
			break
		}
		anon += mib // pressing against memory.high; node memory stays
		s.root.charge(anon+32*mib, 32*mib)
	}
	n, why := evictions()
	require.Equal(t, 1, n, "the hold escalated to one kill")
	assert.Contains(t, why, "held the YARN hierarchy at its floor")
	assert.Contains(t, why, "over 31 checks")

	// The kill released nothing (no process in the fake cgroup) and the
	// root still presses: the next kill comes a bound later, not at the
	// next check.
	killedAt := s.clock
	for i := 1; i <= 30; i++ {
		s.clock = killedAt.Add(time.Duration(i) * time.Second)
		anon += mib
		s.root.charge(anon+32*mib, 32*mib)
		s.slot.Cycle(s.clock)
		if n, _ := evictions(); n > 1 {
			break
		}
	}
	n, _ = evictions()
	assert.Equal(t, 2, n)
	assert.Equal(t, 30*time.Second, s.clock.Sub(killedAt), "the second kill a bound after the first")
}
