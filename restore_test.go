package koordletyarn

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/hooks/yarnadopt"
	"github.com/koordlet-yarn/koordlet-yarn/hooks/yarnmemcg"
	"github.com/koordlet-yarn/koordlet-yarn/hooks/yarnqos"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/relief"
)

// TestRestoreStatus: with every acting gate off (the observe-only
// koordlet), /yarn/restore and koordlet_yarn_restore_pending count what an
// earlier koordlet left on a fake v1 node, kind by kind, read from the
// node's markers and records; the restorers (or, for the RM record, its
// removal) bring each to 0, and only then is the status complete.
func TestRestoreStatus(t *testing.T) {
	t.Setenv("NODE_NAME", "n1")
	helper := system.NewFileTestUtil(t)
	t.Cleanup(helper.Cleanup)
	helper.SetCgroupsV2(false)

	reg := prometheus.NewRegistry()
	fw, err := install(flag.NewFlagSet("koordlet", flag.ContinueOnError), reg)
	require.NoError(t, err)
	const h = "hadoop-yarn"
	fw.Config.CgroupHierarchy = h
	fw.Config.NMEndpoint = "http://127.0.0.1:1" // nothing listens there
	record := filepath.Join(t.TempDir(), "rm.json")
	fw.Config.Ledger.RMCapacityRecord = record

	pendingOf := func(resp RestoreResponse) map[string]int {
		out := map[string]int{}
		for _, k := range resp.Kinds {
			require.True(t, k.Off, "%s: every acting gate is off by default", k.Kind)
			out[k.Kind] = k.Pending
		}
		return out
	}
	// Before the hierarchy is known the cgroup kinds cannot be told.
	before := fw.restoreStatus()
	assert.False(t, before.Complete)
	assert.Equal(t, -1, pendingOf(before)["cpu-qos"])
	assert.Equal(t, -1, pendingOf(before)["container-cgroups"])

	cpuRoot := filepath.Join(helper.TempDir, "cpu", h)
	memRoot := filepath.Join(helper.TempDir, "memory", h)
	require.NoError(t, os.MkdirAll(cpuRoot, 0o755))
	require.NoError(t, os.MkdirAll(memRoot, 0o755))
	fw.Informer.Setup(nil, nil)
	require.Equal(t, h, fw.Informer.HierarchyDir())

	const (
		idle    = "container_e17_1700000000000_0042_01_000002"
		mqos    = "container_e17_1700000000000_0042_01_000003"
		adopted = "container_e17_1700000000000_0042_01_000004"
		memcg   = "container_e17_1700000000000_0042_01_000005"
		stray   = "container_e17_1700000000000_0042_01_000006"
	)
	// cpu-qos: the root made idle, one container's tasks SCHED_IDLE.
	// cpu.idle's resource checks kubepods support: written by hand.
	require.NoError(t, os.WriteFile(filepath.Join(cpuRoot, system.CPUIdleName), []byte("1"), 0o644))
	helper.WriteCgroupFileContents(h+"/"+idle, system.CPUTasks, "")
	require.NoError(t, os.WriteFile(filepath.Join(cpuRoot, idle, system.CPUIdleName), []byte("0"), 0o644))
	require.NoError(t, unix.Setxattr(filepath.Join(cpuRoot, idle), yarnqos.SchedIdleMarker, []byte("1"), 0))
	// Not koordlet-yarn's (it writes cpu.idle on the YARN root only): an
	// unmarked container cgroup's cpu.idle=1 is not pending.
	helper.WriteCgroupFileContents(h+"/"+stray, system.CPUTasks, "")
	require.NoError(t, os.WriteFile(filepath.Join(cpuRoot, stray, system.CPUIdleName), []byte("1"), 0o644))
	// memory-qos: one container's prior values recorded.
	require.NoError(t, os.Mkdir(filepath.Join(memRoot, mqos), 0o755))
	require.NoError(t, unix.Setxattr(filepath.Join(memRoot, mqos), yarnqos.MemoryQoSMarker, []byte(`{"memory.low":"0"}`), 0))
	// resctrl: one container's tasks moved into the BE group.
	require.NoError(t, unix.Setxattr(filepath.Join(cpuRoot, idle), yarnqos.ResctrlMarker, []byte("1"), 0))
	// cpu-quota: the root's own quota recorded before a division.
	helper.WriteCgroupFileContents(h, system.CPUCFSQuota, "120000")
	require.NoError(t, unix.Setxattr(cpuRoot, cgroups.PriorQuotaXattr, []byte("-1"), 0))
	// container-cgroups and memory-cgroups: one cgroup koordlet made each.
	require.NoError(t, os.Mkdir(filepath.Join(memRoot, adopted), 0o755))
	require.NoError(t, unix.Setxattr(filepath.Join(memRoot, adopted), yarnadopt.Marker, []byte("1"), 0))
	require.NoError(t, os.Mkdir(filepath.Join(memRoot, memcg), 0o755))
	require.NoError(t, unix.Setxattr(filepath.Join(memRoot, memcg), yarnmemcg.Marker, []byte("1"), 0))
	// memory-relief: the root's own soft limit recorded before relief set 0.
	require.NoError(t, os.WriteFile(filepath.Join(memRoot, "memory.soft_limit_in_bytes"), []byte("0"), 0o644))
	require.NoError(t, unix.Setxattr(memRoot, cgroups.PriorSoftLimitXattr, []byte("9223372036854771712"), 0))
	// rm-capacity: YARN's own capacity recorded before a push.
	require.NoError(t, os.WriteFile(record, []byte(`{"nodeId":"n1:45454","own":{"memoryMB":8192,"vCores":8},"since":"2026-11-27T00:00:00Z"}`), 0o644))

	left := fw.restoreStatus()
	assert.False(t, left.Complete)
	assert.Equal(t, map[string]int{"cpu-qos": 2, "memory-qos": 1, "resctrl": 1, "cpu-quota": 1, "memory-cgroups": 1,
		"container-cgroups": 1, "rm-capacity": 1, "ledger-entry": 1, "memory-relief": 1}, pendingOf(left))
	// The first scrape starts a reading in the background; a later one
	// serves it.
	require.Eventually(t, func() bool { return testutil.CollectAndCount(reg, "koordlet_yarn_restore_pending") == 9 }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`# HELP koordlet_yarn_restore_pending `+restorePendingHelp+`
# TYPE koordlet_yarn_restore_pending gauge
koordlet_yarn_restore_pending{kind="container-cgroups",node="n1"} 1
koordlet_yarn_restore_pending{kind="cpu-qos",node="n1"} 2
koordlet_yarn_restore_pending{kind="cpu-quota",node="n1"} 1
koordlet_yarn_restore_pending{kind="ledger-entry",node="n1"} 1
koordlet_yarn_restore_pending{kind="memory-cgroups",node="n1"} 1
koordlet_yarn_restore_pending{kind="memory-qos",node="n1"} 1
koordlet_yarn_restore_pending{kind="memory-relief",node="n1"} 1
koordlet_yarn_restore_pending{kind="resctrl",node="n1"} 1
koordlet_yarn_restore_pending{kind="rm-capacity",node="n1"} 1
`), "koordlet_yarn_restore_pending"))

	// The restorers koordlet runs at a start with the gates off.
	fw.QoS.RestoreDisabled() // cpu.idle, SCHED_IDLE (no task), resctrl (no BE group: unmarked)
	fw.memcg.RestoreDisabled()
	fw.adopt.RestoreDisabled()
	assert.Equal(t, 1, (&relief.ReliefRestorer{Relief: fw.relief, Hierarchy: fw.Informer.HierarchyDir}).RestoreDisabled(), "the soft limit given back")
	soft, err := os.ReadFile(filepath.Join(memRoot, "memory.soft_limit_in_bytes"))
	require.NoError(t, err)
	assert.Equal(t, "-1", strings.TrimSpace(string(soft)), "no soft limit, as the record says")
	restored, _, err := fw.quota.Restore(h)
	require.NoError(t, err)
	require.True(t, restored)
	// Memory QoS's file does not exist on this v1 fake: drop the record as
	// a write-back would.
	require.NoError(t, unix.Removexattr(filepath.Join(memRoot, mqos), yarnqos.MemoryQoSMarker))
	require.NoError(t, os.Remove(record)) // given back to the RM
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	fw.staleEntry.Client = func() kubernetes.Interface { return fake.NewSimpleClientset(node) }
	done, err := fw.staleEntry.Once(context.Background())
	require.NoError(t, err)
	require.True(t, done)

	rec := httptest.NewRecorder()
	fw.restoreHandler()(rec, httptest.NewRequest(http.MethodGet, RestorePath, nil))
	require.Equal(t, http.StatusOK, rec.Code)
	var body RestoreResponse
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	assert.True(t, body.Complete, "%+v", body)
	for k, n := range pendingOf(body) {
		assert.Zero(t, n, k)
	}
	b, err := os.ReadFile(filepath.Join(cpuRoot, system.CPUIdleName))
	require.NoError(t, err)
	assert.Equal(t, "0", strings.TrimSpace(string(b)), "the root's cpu.idle back")

	rec = httptest.NewRecorder()
	fw.restoreHandler()(rec, httptest.NewRequest(http.MethodPost, RestorePath, nil))
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
}
