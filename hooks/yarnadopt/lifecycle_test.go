package yarnadopt

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

func TestDecideLeaf(t *testing.T) {
	runs, gone, none := store.NMRuns, store.NMGone, store.NMNoWord
	for _, tc := range []struct {
		name     string
		s        leafState
		podKnown bool
		adopting bool
		want     leafAction
	}{
		{"listed and running: kept", leafState{NM: runs, Busy: true}, true, true, leafKeep},
		{"listed, empty, the gate on: kept (refilled at its next process)", leafState{NM: runs}, true, true, leafKeep},
		{"listed, empty, the gate off: removed (nothing refills it)", leafState{NM: runs}, true, false, leafRemove},
		{"listed, running, the gate off: kept", leafState{NM: runs, Busy: true}, true, false, leafKeep},
		{"finished and empty: removed", leafState{NM: gone}, true, true, leafRemove},
		{"no word and empty: removed", leafState{NM: none}, true, true, leafRemove},
		{"no NM pod: the store's list is stale, orphaned", leafState{NM: runs, Busy: true}, false, true, leafOrphan},
		{"no NM pod for the grace: killed", leafState{NM: runs, Busy: true, OrphanFor: orphanGrace}, false, true, leafKill},
		{"no NM pod, no word: killed all the same", leafState{NM: none, Busy: true, OrphanFor: orphanGrace}, false, true, leafKill},
		{"no NM pod, the gate off: killed all the same", leafState{Busy: true, OrphanFor: orphanGrace}, false, false, leafKill},
		{"a NodeManager that answers without it (restarted without recovery): orphaned", leafState{NM: gone, Busy: true}, true, true, leafOrphan},
		{"a NodeManager that answers without it, for the grace: killed", leafState{NM: gone, Busy: true, OrphanFor: orphanGrace}, true, true, leafKill},
		{"a NodeManager back that recovered it: kept", leafState{NM: runs, Busy: true, OrphanFor: time.Hour}, true, true, leafKeep},
		// Issue 55 item 1: after a restart the store has the container from
		// the cgroup scan alone until the NodeManager answers.
		{"no word (the NodeManager not asked since the restart): held", leafState{NM: none, Busy: true}, true, true, leafHold},
		{"no word, 10 minutes on: held, never killed", leafState{NM: none, Busy: true, OrphanFor: orphanGrace}, true, true, leafHold},
		{"no word an hour on, the gate off: held", leafState{NM: none, Busy: true, OrphanFor: time.Hour}, true, false, leafHold},
		{"orphaned and empty: removed", leafState{OrphanFor: time.Hour}, false, true, leafRemove},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, decideLeaf(tc.s, tc.podKnown, tc.adopting))
		})
	}
}

// On cgroup v2 a controller the hierarchy's parent does not hand down
// (cpuset) and one whose "+ctrl" write fails (io) are each said once and
// skipped; the others are enabled and the containers get their cgroups.
// Before, the failed write failed every adoption and the missing cpuset
// was skipped without a word.
func TestEnableV2PerController(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu io memory pids\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "cgroup.subtree_control"), nil, 0o644))
	var wrote []string
	old := writeSubtree
	t.Cleanup(func() { writeSubtree = old })
	writeSubtree = func(_, c string) error {
		if c == "io" {
			return errors.New("device or resource busy")
		}
		wrote = append(wrote, c)
		return nil
	}
	said := map[string]int{}
	say := func(key, _ string) { said[key]++ }
	require.NoError(t, enableV2(root, say))
	require.NoError(t, enableV2(root, say))
	assert.Equal(t, []string{"cpu", "memory", "pids", "cpu", "memory", "pids"}, wrote)
	assert.Equal(t, map[string]int{"missing:cpuset": 2, "failed:io": 2}, said, "keyed: the caller says each once")
}
