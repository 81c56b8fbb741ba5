package kubeletnode

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Files Prepare leaves in its directory for the guest (which has no go
// command): the DaemonSet as an operator renders it, observe-only and with
// the enforcement component and its capabilities, and the test pods'
// program.
const (
	ObserveManifest = "observe.yaml"
	EnforceManifest = "enforce.yaml"
	// AllGatesManifest is the enforcement render with every component but
	// the ledger's (which needs a ResourceManager and koord-manager) and
	// the node-side gates no component turns on added to the isolation
	// component's list, as docs/deploy.md has an operator do once the
	// node is set up for them: YARNContainerCgroups (the node's YARN makes
	// no container cgroups: Hadoop before 3.5 on cgroup v2), the
	// interference controller, memory relief, the memory evict trigger and
	// the allocatable evict. YARNMemoryCgroup is cgroup v1's only.
	AllGatesManifest = "enforce-all-gates.yaml"
	PodbinFile       = "podbin"
)

// isolationGates is the isolation component's gate list, which the adopt
// render extends.
const isolationGates = "-feature-gates=YARNCPUQoS=true,YARNMemoryQoS=true,YARNResctrlQoS=true,YARNBECPUSuppress=true"

// EnforceComponents are the components the enforcement render adds, in
// order (docs/deploy.md's way: the enforcement DaemonSet, then each
// capability): CPU and Memory QoS and suppress, then memory eviction with
// the NodeManager guard.
var EnforceComponents = []string{"enforcement", "isolation", "memory-eviction"}

// AllComponents are the all-gates render's components.
var AllComponents = []string{"enforcement", "isolation", "memory-eviction", "cpu-eviction", "qos-policy"}

// AllGatesExtra are the gates the all-gates render adds.
const AllGatesExtra = ",YARNContainerCgroups=true,YARNInterferenceControl=true,YARNMemoryRelief=true,YARNMemoryEvictTrigger=true,YARNAllocatableEvict=true"

// Prepare, on the host, renders deploy/koordlet as an operator does — a
// copy with image.yaml's registry set to the node's registry, nothing
// else, then the enforcement components added as kustomize edit add
// component would — with kustomize's own library (test/kustomize), and
// builds podbin, into dir.
func Prepare(top, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, r := range []struct {
		file       string
		components []string
		gates      string
	}{{ObserveManifest, nil, ""}, {EnforceManifest, EnforceComponents, ""}, {AllGatesManifest, AllComponents, AllGatesExtra}} {
		tree := filepath.Join(dir, "deploy-"+strings.TrimSuffix(r.file, ".yaml"), "koordlet")
		_ = os.RemoveAll(filepath.Dir(tree))
		if err := os.CopyFS(tree, os.DirFS(filepath.Join(top, "deploy/koordlet"))); err != nil {
			return fmt.Errorf("copy deploy/koordlet: %w", err)
		}
		overlay := filepath.Join(tree, "overlay")
		if err := edit(filepath.Join(overlay, "image.yaml"), "  # registry: registry.example.com/koordinator", "  registry: "+Registry+"/koordinator-sh"); err != nil {
			return err
		}
		if len(r.components) > 0 {
			list := "components:\n"
			for _, c := range r.components {
				list += "  - ../components/" + c + "\n"
			}
			if err := edit(filepath.Join(overlay, "kustomization.yaml"), "# components:\n", list); err != nil {
				return err
			}
		}
		if r.gates != "" {
			if err := edit(filepath.Join(tree, "components/isolation/kustomization.yaml"), isolationGates, isolationGates+r.gates); err != nil {
				return err
			}
		}
		cmd := exec.Command("go", "run", ".", overlay)
		cmd.Dir = filepath.Join(top, "test/kustomize")
		cmd.Env = append(os.Environ(), "GOWORK=off")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("render %s: %w: %s", overlay, err, stderr.String())
		}
		if err := os.WriteFile(filepath.Join(dir, r.file), out, 0o644); err != nil {
			return err
		}
	}
	b := exec.Command("go", "build", "-o", filepath.Join(dir, PodbinFile), "./test/kubeletnode/podbin")
	b.Dir = top
	b.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := b.CombinedOutput(); err != nil {
		return fmt.Errorf("build podbin: %w: %s", err, out)
	}
	return nil
}

// edit replaces the one occurrence of old in the file at path.
func edit(path, old, new string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if strings.Count(string(b), old) != 1 {
		return fmt.Errorf("%s no longer shows where to edit (%q)", path, old)
	}
	return os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644)
}
