package nodebox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

func TestCheckNotKubernetesNode(t *testing.T) {
	if os.Geteuid() != 0 {
		kerneltest.Skip(t, "trusted.* extended attributes need root")
	}
	type layout struct {
		kubelet  bool
		pods     int
		kubepods map[string]string // dir under the cgroup root → marker ("" none)
	}
	for _, tc := range []struct {
		name    string
		layout  layout
		refuse  string
		allowed bool
	}{
		{name: "clean machine", allowed: true},
		{name: "kubelet process", layout: layout{kubelet: true}, refuse: "a kubelet process runs"},
		{name: "kubelet pods", layout: layout{pods: 2}, refuse: "has 2 pod directories"},
		{name: "foreign cgroupfs kubepods", layout: layout{kubepods: map[string]string{"cpu/kubepods": ""}}, refuse: "cpu/kubepods exists and was not created"},
		{name: "foreign systemd kubepods", layout: layout{kubepods: map[string]string{"memory/kubepods.slice": ""}}, refuse: "kubepods.slice exists"},
		{name: "foreign v2 kubepods", layout: layout{kubepods: map[string]string{"unified/kubepods": ""}}, refuse: "unified/kubepods exists"},
		{name: "a crashed box's tree", layout: layout{kubepods: map[string]string{"cpu/kubepods": "pid=1", "memory/kubepods": "pid=1"}}, allowed: true},
		{name: "a crashed box's tree beside a foreign one", layout: layout{kubepods: map[string]string{"cpu/kubepods": "pid=1", "memory/kubepods": ""}}, refuse: "memory/kubepods exists"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cg, proc, pods := filepath.Join(dir, "cgroup"), filepath.Join(dir, "proc"), filepath.Join(dir, "pods")
			for _, d := range []string{"cpu", "memory", "unified"} {
				require.NoError(t, os.MkdirAll(filepath.Join(cg, d), 0o755))
			}
			require.NoError(t, os.MkdirAll(filepath.Join(proc, "42"), 0o755))
			comm := "bash\n"
			if tc.layout.kubelet {
				comm = "kubelet\n"
			}
			require.NoError(t, os.WriteFile(filepath.Join(proc, "42", "comm"), []byte(comm), 0o644))
			for i := 0; i < tc.layout.pods; i++ {
				require.NoError(t, os.MkdirAll(filepath.Join(pods, string(rune('a'+i))), 0o755))
			}
			for rel, mark := range tc.layout.kubepods {
				p := filepath.Join(cg, rel)
				require.NoError(t, os.MkdirAll(p, 0o755))
				if mark != "" {
					require.NoError(t, setMarker(p, mark))
				}
			}
			err := checkNotKubernetesNode(cg, proc, pods)
			if tc.allowed {
				assert.NoError(t, err)
				assert.Len(t, leftoverTrees(cg), len(tc.layout.kubepods))
				return
			}
			require.ErrorIs(t, err, ErrKubernetesNode)
			assert.Contains(t, err.Error(), tc.refuse)
		})
	}
}
