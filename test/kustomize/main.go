// Command kustomize renders a kustomization with kustomize's own library
// (what kubectl kustomize runs) and prints the objects as a YAML stream.
//
//	go run . <kustomization dir>
//
// It is its own module: kustomize's plugin loader links Go's plugin package,
// which makes the linker bind every symbol at start-up, and koordlet's
// NVIDIA bindings (in the main module's test binaries) leave symbols
// unresolved on purpose; the deploy tests run this and read its output.
package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: kustomize <kustomization dir>")
		os.Exit(2)
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "kustomize build %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	out, err := m.AsYaml()
	if err != nil {
		fmt.Fprintf(os.Stderr, "kustomize build %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	os.Stdout.Write(out)
}
