package e2e

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	koordletyarn "github.com/koordlet-yarn/koordlet-yarn"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

// alive reports whether pid runs (a zombie is dead).
func alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// TestFaults: the NM slow, sending garbage, failing or down, and koordlet
// restarted: koordlet stays healthy, keeps what it knew, keeps discovering
// from cgroups, rebuilds its state after a restart, and no YARN process is
// harmed.
func TestFaults(t *testing.T) {
	b := startBox(t, nodebox.Options{KoordletArgs: []string{"--yarn-nm-timeout=500ms"}})
	am, err := b.NM.Launch(nmemu.Spec{AppID: 7, Attempt: 1, Sequence: 1, User: "etl", MemoryMB: 1024, VCores: 1, Script: "exec sleep 3600"})
	require.NoError(t, err)
	ex, err := b.NM.Launch(nmemu.Spec{AppID: 7, Attempt: 1, Sequence: 2, User: "etl", MemoryMB: 2048, VCores: 1, Script: "exec sleep 3600"})
	require.NoError(t, err)
	var resp koordletyarn.ContainersResponse
	require.Eventually(t, func() bool {
		resp, err = b.Containers()
		return err == nil && find(resp, am) != nil && find(resp, ex) != nil && find(resp, ex).Source == store.SourceBoth
	}, 20*time.Second, 200*time.Millisecond)

	pids := []int{b.NM.Pid(am), b.NM.Pid(ex), b.NMPID()}
	seq := int64(3)
	for _, mode := range []nmemu.Mode{nmemu.ModeSlow, nmemu.ModeGarbage, nmemu.ModeError, "down"} {
		t.Run(string(mode), func(t *testing.T) {
			if mode == "down" {
				b.NM.StopServing()
			} else {
				b.NM.SetMode(mode)
			}
			// A container started while the NM misbehaves is found from cgroups.
			id, err := b.NM.Launch(nmemu.Spec{AppID: 7, Attempt: 1, Sequence: seq, User: "etl", MemoryMB: 512, VCores: 1, Script: "exec sleep 3600"})
			seq++
			require.NoError(t, err)
			pids = append(pids, b.NM.Pid(id))
			require.Eventually(t, func() bool {
				resp, err = b.Containers()
				c := find(resp, id)
				return err == nil && c != nil && len(c.Pids) == 1 && resp.Informer.NMError != ""
			}, 20*time.Second, 200*time.Millisecond, "discovery goes on from cgroups and the NM error is reported")
			c := find(resp, am)
			require.NotNil(t, c)
			assert.Equal(t, "etl", c.User, "what the NM said is kept")
			assert.Equal(t, int64(1000), c.RequestMilliCPU)
			assert.True(t, b.KoordletAlive(), "koordlet stays up")
			b.NM.SetMode(nmemu.ModeOK)
		})
	}

	// koordlet restarts (the NM is still down): the store is rebuilt from cgroups.
	b.StopKoordlet()
	require.NoError(t, b.StartKoordlet())
	require.Eventually(t, func() bool {
		resp, err = b.Containers()
		return err == nil && len(resp.Containers) == int(seq-1)
	}, 20*time.Second, 200*time.Millisecond, "state rebuilt after a restart")
	for _, pid := range pids {
		assert.True(t, alive(pid), "pid %d survived every fault", pid)
	}
}
