// Command helm renders a helm chart's templates with helm's own engine (what
// helm template runs) and prints the objects as a YAML stream:
//
//	go run . <chart dir> [values file...]
//
// It is its own module, as test/kustomize is: helm's library pulls in much
// that the plugin set does not need. The deploy tests run it on Koordinator's
// chart v1.8.0 (the templates in deploy/helm/testdata) with
// deploy/helm/post-render.
package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: helm <chart dir> [values file...]")
		os.Exit(2)
	}
	out, err := render(os.Args[1], os.Args[2:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "helm template %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	fmt.Print(out)
}

// render renders the chart at dir with the values files merged over its
// defaults, as helm template koordinator <dir> -f ... does.
func render(dir string, valueFiles []string) (string, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return "", err
	}
	vals := map[string]any{}
	for _, f := range valueFiles {
		v, err := chartutil.ReadValuesFile(f)
		if err != nil {
			return "", err
		}
		vals = chartutil.CoalesceTables(v.AsMap(), vals)
	}
	opts := chartutil.ReleaseOptions{Name: "koordinator", Namespace: "koordinator-system", IsInstall: true}
	top, err := chartutil.ToRenderValues(ch, vals, opts, chartutil.DefaultCapabilities)
	if err != nil {
		return "", err
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		return "", err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		if strings.HasSuffix(n, ".yaml") && strings.TrimSpace(files[n]) != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", n, files[n])
	}
	return b.String(), nil
}
