package yarnevict

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/rmrelease"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/kill"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/relief"
)

const reliefRoot = "hadoop-yarn"

// v2Root is a fake cgroup v2 YARN root (memory.high, memory.current,
// memory.stat) for memory relief.
type v2Root struct {
	t      *testing.T
	helper *system.FileTestUtil
}

func newV2Root(t *testing.T) *v2Root {
	helper := system.NewFileTestUtil(t)
	t.Cleanup(helper.Cleanup)
	helper.SetCgroupsV2(true)
	r := &v2Root{t: t, helper: helper}
	r.setHigh("max")
	r.charge(6<<30, 2<<30)
	return r
}

// charge sets the root's memory.current and, of it, its file pages.
func (r *v2Root) charge(current, file int64) {
	r.helper.WriteCgroupFileContents(reliefRoot, system.MemoryUsageV2, fmt.Sprint(current))
	r.helper.WriteCgroupFileContents(reliefRoot, system.MemoryStatV2, fmt.Sprintf(
		"anon %d\nfile %d\ninactive_file %d\nactive_file %d\ninactive_anon 0\nactive_anon %d\nunevictable 0\n", current-file, file, file/2, file-file/2, current-file))
}

func (r *v2Root) setHigh(v string) {
	r.helper.WriteCgroupFileContents(reliefRoot, system.MemoryHighV2, v)
}

func (r *v2Root) high() string {
	return strings.TrimSpace(r.helper.ReadCgroupFileContents(reliefRoot, system.MemoryHighV2))
}

// value is the root's memory.high (cgroups.MemoryUnlimited: max, or a
// value at or above it as the fake keeps what was written).
func (r *v2Root) value() int64 {
	v, err := cgroups.ParseMemoryValue(r.high())
	require.NoError(r.t, err)
	return v
}

// reliefGates turns the YARN gates of memory relief on and koordlet's
// BEMemoryEvict to be.
func reliefGates(t *testing.T, be bool) {
	setGates(t, map[string]bool{string(features.YARNMemoryRelief): true, string(features.YARNBEMemoryEvict): true,
		string(koordfeatures.BEMemoryEvict): be})
}

// TestReliefRestoredWithKoordletsGateOff (issue 55, item 4): the rungs
// run only inside koordlet's BE memory evict, so with koordlet's
// BEMemoryEvict off and the YARN gates on nothing of relief runs: a
// throttle a crashed koordlet left (its record on the root) is counted as
// pending and given back at the start, as with the YARN gate off.
func TestReliefRestoredWithKoordletsGateOff(t *testing.T) {
	root := newV2Root(t)
	reliefGates(t, false)
	root.setHigh(fmt.Sprint(4 << 30)) // the crashed koordlet's throttle
	dir := cgroups.NewRootMemoryHigh().Dir(reliefRoot)
	require.NoError(t, unix.Setxattr(dir, cgroups.PriorMemoryHighXattr, []byte(fmt.Sprint(cgroups.MemoryUnlimited)), 0))

	r := &relief.Relief{High: cgroups.NewRootMemoryHigh(), Soft: cgroups.NewRootSoftLimit(), BandPercent: func() int64 { return 5 }}
	assert.False(t, r.Enabled(), "koordlet's BEMemoryEvict is off: the strategy that runs the rungs does not run")
	assert.Equal(t, 1, r.Pending(reliefRoot), "the throttle left behind, counted before the start")
	n := (&relief.ReliefRestorer{Relief: r, Hierarchy: func() string { return reliefRoot }}).RestoreDisabled()
	assert.Equal(t, 1, n)
	assert.Equal(t, cgroups.MemoryUnlimited, root.value(), "the root's own memory.high is back")
	assert.Equal(t, 0, r.Pending(reliefRoot))
}

// reliefRM is a relief on the fake v2 root with the RM rung on (20 s for
// the RM to release, YARN holding 8 GiB), a clock moved by hand.
func reliefRM(w *rmrelease.Window, clock *time.Time) *relief.Relief {
	return &relief.Relief{High: cgroups.NewRootMemoryHigh(), BandPercent: func() int64 { return 5 }, RM: w,
		RMReady: func() bool { return true }, RMDelay: func() time.Duration { return 20 * time.Second },
		Allocated: func() int64 { return 8192 }, Now: func() time.Time { return *clock }, Audit: kill.NewAudit(nil, 0, 0)}
}

// TestReliefForeignHighKeepsTheRMRung (issue 55, item 9): another writer
// changes the root's memory.high: the throttle leaves it to that writer,
// but the band still frames the pressure and a slow growth in it is still
// asked of the ResourceManager.
func TestReliefForeignHighKeepsTheRMRung(t *testing.T) {
	root := newV2Root(t)
	reliefGates(t, true)
	const mib = int64(1 << 20)
	lv := relief.Levels{Threshold: 20000 * mib, Lower: 19000 * mib, Capacity: 40000 * mib} // the band from 18000 MiB
	w := &rmrelease.Window{}
	clock := time.Unix(1000, 0)
	r := reliefRM(w, &clock)
	lv.Used = 18800 * mib
	r.Check(reliefRoot, lv)
	require.NotEqual(t, "max", root.high(), "throttled in the band")
	root.setHigh(fmt.Sprint(7 << 30)) // another writer's value
	for i := 0; i < 12; i++ {
		clock = clock.Add(time.Second)
		lv.Used += 10 * mib
		r.Check(reliefRoot, lv)
	}
	assert.Equal(t, fmt.Sprint(7<<30), root.high(), "the other writer's value is left alone")
	_, asked := w.UsageAsk()
	assert.True(t, asked, "a slow growth in the band is asked of the RM, the root's memory.high another's")
	lv.Used = 16000 * mib
	r.Check(reliefRoot, lv)
	_, asked = w.UsageAsk()
	assert.False(t, asked, "withdrawn when the pressure is over")
	assert.Equal(t, fmt.Sprint(7<<30), root.high())
}

// TestReliefHeldAtTheFloorAsksTheRM (issue 55, item 3): LS holds node
// memory in the band, past its middle and under the threshold; the YARN
// root's anon memory grows past the memory.high the throttle holds at its
// floor, so its allocators stall while node memory does not grow (no
// growth for the RM rung, no crossing for the kill). After
// DefaultFloorHoldLimit of such checks the hold escalates to the RM rung.
func TestReliefHeldAtTheFloorAsksTheRM(t *testing.T) {
	root := newV2Root(t)
	reliefGates(t, true)
	const mib = int64(1 << 20)
	lv := relief.Levels{Used: 19700 * mib, Threshold: 20000 * mib, Lower: 19600 * mib, Capacity: 40000 * mib} // band 18000–20000, middle 19000
	w := &rmrelease.Window{}
	clock := time.Unix(1000, 0)
	r := reliefRM(w, &clock)
	anon := int64(4 << 30)
	root.charge(anon+512*mib, 512*mib)
	r.Check(reliefRoot, lv)
	held := root.high()
	require.Equal(t, fmt.Sprint(relief.ThrottleFloor(anon+512*mib, 512*mib)&^4095), held, "at the floor")
	for i := 1; i <= 40; i++ {
		clock = clock.Add(time.Second)
		anon += mib // the grower presses against memory.high; node memory stays where LS holds it
		root.charge(anon+64*mib, 64*mib)
		r.Check(reliefRoot, lv)
		require.Equal(t, held, root.high(), "held at check %d", i)
	}
	capMB, asked := w.UsageAsk()
	require.True(t, asked, "held at the floor for 40 s: the RM is asked")
	assert.Equal(t, int64(8192-(19700-18000)), capMB, "YARN's allocation less what brings node memory to the throttle's start")

	// The RM does not release: once it has had its 20 s, the kill.
	var esc relief.Escalation
	for i := 0; i < 25 && esc.Release == 0; i++ {
		clock = clock.Add(time.Second)
		anon += mib
		root.charge(anon+64*mib, 64*mib)
		esc = r.Check(reliefRoot, lv)
	}
	require.Positive(t, esc.Release, "the RM did not release in its time: the kill")
	assert.Equal(t, (19700-18000)*mib, esc.Release, "down to the throttle's start")
	assert.Contains(t, esc.Why, "the ResourceManager, asked 20s ago, has not released")
	r.Evicted(true)
	esc = r.Check(reliefRoot, lv)
	assert.Zero(t, esc.Release, "after a kill the hold is measured anew")
}
