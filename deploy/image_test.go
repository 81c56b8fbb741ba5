package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeBuilder writes an executable named name into dir that records its
// arguments in dir/<name>.log and whose "info" succeeds only when working.
func fakeBuilder(t *testing.T, dir, name string, working bool) {
	t.Helper()
	info := "exit 0"
	if !working {
		info = "echo 'Cannot connect to the daemon' >&2; exit 1"
	}
	script := "#!/bin/sh\nif [ \"$1\" = info ]; then " + info + "; fi\necho \"$*\" >> \"" + filepath.Join(dir, name+".log") + "\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755))
}

// TestImageScript runs deploy/image.sh (what make image runs) with only
// fake builders in PATH: it picks the first that works, passes the build
// arguments through, pushes with PUSH=1, and fails saying why when none
// works.
func TestImageScript(t *testing.T) {
	for _, tc := range []struct {
		name     string
		builders map[string]bool // name → working
		env      []string
		want     string // builder used ("": none, the script fails)
		wantLog  []string
		wantErr  []string
	}{
		{name: "none", wantErr: []string{"no usable container image builder", "docker, podman, buildah and nerdctl"}},
		{name: "docker without its daemon", builders: map[string]bool{"docker": false},
			wantErr: []string{"no usable container image builder", "docker is installed but 'docker info' fails", "Cannot connect"}},
		{name: "docker without daemon, podman works", builders: map[string]bool{"docker": false, "podman": true},
			env: []string{"IMAGE=reg.example/koordlet-yarn:t"}, want: "podman",
			wantLog: []string{"build -f", "Dockerfile -t reg.example/koordlet-yarn:t"}},
		{name: "buildah", builders: map[string]bool{"buildah": true}, env: []string{"KOORDINATOR_VERSION=v1.8.0"}, want: "buildah",
			wantLog: []string{"bud --layers", "--build-arg KOORDINATOR_VERSION=v1.8.0"}},
		{name: "version stamped", builders: map[string]bool{"podman": true}, env: []string{"VERSION=v0.1.0"}, want: "podman",
			wantLog: []string{"--build-arg VERSION=v0.1.0"}},
		{name: "nerdctl and push", builders: map[string]bool{"nerdctl": true}, env: []string{"PUSH=1", "IMAGE=r/k:1"}, want: "nerdctl",
			wantLog: []string{"build -f", "push r/k:1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, working := range tc.builders {
				fakeBuilder(t, dir, name, working)
			}
			cmd := exec.Command("/bin/sh", "image.sh")
			cmd.Env = append([]string{"PATH=" + dir}, tc.env...)
			out, err := cmd.CombinedOutput()
			if tc.want == "" {
				require.Error(t, err, "%s", out)
				for _, s := range tc.wantErr {
					assert.Contains(t, string(out), s)
				}
				return
			}
			require.NoError(t, err, "%s", out)
			log, err := os.ReadFile(filepath.Join(dir, tc.want+".log"))
			require.NoError(t, err, "%s did not build: %s", tc.want, out)
			for _, s := range tc.wantLog {
				assert.Contains(t, string(log), s)
			}
			assert.True(t, strings.Contains(string(out), "building"), "%s", out)
		})
	}
}
