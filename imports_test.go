package koordletyarn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// modulePath is this module's import path.
const modulePath = "github.com/koordlet-yarn/koordlet-yarn"

// layer is the layer of a module package, by its directory below the
// module root: "root" (the entry point), "framework", "plugins" (also
// collectors and hooks), "preflight", "cmd" or "test".
func layer(importPath string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(importPath, modulePath), "/")
	if rel == "" {
		return "root"
	}
	switch top, _, _ := strings.Cut(rel, "/"); top {
	case "framework":
		return "framework"
	case "plugins", "collectors", "hooks":
		return "plugins"
	default:
		return top
	}
}

// allowedLayers are the module layers each layer's non-test code may
// import: imports point one way, entry (root, cmd) → preflight →
// plugins/collectors/hooks → framework. Layers not listed (test, deploy)
// are unrestricted.
var allowedLayers = map[string][]string{
	"framework": {"framework"},
	"plugins":   {"framework", "plugins"},
	"preflight": {"framework", "plugins", "preflight"},
	"root":      {"framework", "plugins", "preflight"},
}

// importViolations returns "pkg imports dep" for every non-test import of
// a module package that crosses the layers the wrong way.
func importViolations(imports map[string][]string) []string {
	var bad []string
	for pkg, deps := range imports {
		allowed, restricted := allowedLayers[layer(pkg)]
		if !restricted {
			continue
		}
		for _, dep := range deps {
			if dep != modulePath && !strings.HasPrefix(dep, modulePath+"/") {
				continue
			}
			ok := false
			for _, l := range allowed {
				ok = ok || layer(dep) == l
			}
			if !ok {
				bad = append(bad, fmt.Sprintf("%s (%s) imports %s (%s)", pkg, layer(pkg), dep, layer(dep)))
			}
		}
	}
	return bad
}

func TestImportViolations(t *testing.T) {
	m := modulePath
	for _, tc := range []struct {
		name    string
		imports map[string][]string
		bad     int
	}{
		{"one way", map[string][]string{
			m:                           {m + "/plugins/yarnevict", m + "/framework/store", m + "/preflight"},
			m + "/plugins/yarnevict":    {m + "/collectors/yarnusage", m + "/framework/cgroups", "fmt"},
			m + "/framework/store":      {m + "/framework/yarn", "k8s.io/klog/v2"},
			m + "/preflight":            {m + "/hooks/yarnqos", m + "/framework/cgroups"},
			m + "/cmd/koordlet":         {m},
			m + "/test/nodebox":         {m, m + "/test/nmemu"},
			m + "/collectors/yarnusage": {m + "/framework/store"},
		}, 0},
		{"framework imports a plugin", map[string][]string{m + "/framework/store": {m + "/plugins/yarninformer"}}, 1},
		{"framework imports the root", map[string][]string{m + "/framework/config": {m}}, 1},
		{"framework imports the preflight", map[string][]string{m + "/framework/cgroups": {m + "/preflight"}}, 1},
		{"a hook imports the root", map[string][]string{m + "/hooks/yarnqos": {m}}, 1},
		{"a collector imports the preflight", map[string][]string{m + "/collectors/yarnusage": {m + "/preflight"}}, 1},
		{"a plugin imports test code", map[string][]string{m + "/plugins/yarnevict": {m + "/test/kerneltest"}}, 1},
		{"the preflight imports the root", map[string][]string{m + "/preflight": {m}}, 1},
		{"the root imports cmd", map[string][]string{m: {m + "/cmd/koordlet"}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Len(t, importViolations(tc.imports), tc.bad)
		})
	}
}

// TestImportDirection enforces the layering on the module's real packages
// (non-test imports, from go list).
func TestImportDirection(t *testing.T) {
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", stderr.String())

	imports := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		imports[p.ImportPath] = p.Imports
	}
	// The listing is real: the layers it checks are there.
	for _, pkg := range []string{modulePath, modulePath + "/framework/store", modulePath + "/plugins/yarninformer", modulePath + "/hooks/yarnqos", modulePath + "/collectors/yarnusage"} {
		require.Contains(t, imports, pkg)
	}
	assert.Empty(t, importViolations(imports), "imports must point one way: entry → plugins/collectors/hooks → framework")
}
