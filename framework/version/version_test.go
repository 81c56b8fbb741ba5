package version

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestInfo(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/koordlet-yarn/koordlet-yarn", Version: "(devel)"},
		Deps:     []*debug.Module{{Path: "k8s.io/api", Version: "v0.33.0"}, {Path: koordinatorModule, Version: "v1.8.0"}},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "4e357fc0123456789abcdef"}, {Key: "vcs.modified", Value: "true"}}}
	for _, tc := range []struct {
		name, stamped string
		bi            *debug.BuildInfo
		want          Info
	}{
		{"stamped", "v0.1.0", bi, Info{Version: "v0.1.0", Koordinator: "v1.8.0", Go: "go1.26.0"}},
		{"from VCS", "", bi, Info{Version: "(devel)+4e357fc01234-dirty", Koordinator: "v1.8.0", Go: "go1.26.0"}},
		{"no build info", "", nil, Info{Version: "unknown", Koordinator: "unknown"}},
		{"stamped by Go from VCS", "", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.0.0-20261125140000-4e357fc01234+dirty"},
			Settings: bi.Settings}, Info{Version: "v0.0.0-20261125140000-4e357fc01234+dirty", Koordinator: "unknown", Go: "go1.26.0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := info(tc.stamped, tc.bi)
			if tc.bi == nil {
				got.Go = ""
			}
			assert.Equal(t, tc.want, got)
		})
	}
	replaced := *bi
	replaced.Deps = []*debug.Module{{Path: koordinatorModule, Version: "v1.8.0", Replace: &debug.Module{Path: "../koordinator", Version: "v1.8.1-fix"}}}
	assert.Equal(t, "v1.8.1-fix", info("v1", &replaced).Koordinator)
	assert.Equal(t, "koordlet-yarn v1 (Koordinator v1.8.1-fix, go1.26.0)", info("v1", &replaced).String())
}
