package deploy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	yamlutil "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/component-helpers/auth/rbac/validation"

	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/policy"
	"github.com/koordlet-yarn/koordlet-yarn/preflight"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

const (
	overlayDir    = "koordlet/overlay"
	koordletNS    = "koordinator-system"
	stockImage    = "registry.cn-beijing.aliyuncs.com/koordinator-sh/koordlet:v1.8.0"
	testRegistry  = "registry.example.com/koordinator"
	koordletImage = testRegistry + "/koordlet-yarn:v1.8.0-yarn"
	enforceLabel  = "koordlet-yarn.io/enforcement"
)

// operatorOverlay is the overlay as an operator applies it: a copy of
// deploy/koordlet (base, overlay, components, preflight) with image.yaml's
// registry set (when registry is not empty), the ResourceManagers set in
// the ledger component's rm.yaml, and the given components added in order,
// as kustomize edit add component would. It returns the copy's overlay.
func operatorOverlay(t *testing.T, registry string, components ...string) string {
	t.Helper()
	tree := filepath.Join(t.TempDir(), "koordlet")
	require.NoError(t, os.CopyFS(tree, os.DirFS("koordlet")))
	dir := filepath.Join(tree, "overlay")
	k, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	require.NoError(t, err)
	ks := string(k)
	require.Contains(t, ks, "# components:\n", "the overlay names its components, commented out")
	if len(components) > 0 {
		list := "components:\n"
		for _, c := range components {
			list += "  - ../components/" + c + "\n"
		}
		ks = strings.Replace(ks, "# components:\n", list, 1)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(ks), 0o644))
	if registry != "" {
		editFile(t, filepath.Join(dir, "image.yaml"), "  # registry: registry.example.com/koordinator", "  registry: "+registry)
	}
	editFile(t, filepath.Join(tree, "components", "ledger", "rm.yaml"), "  # endpoints: ", "  endpoints: ")
	return dir
}

// editFile replaces the one occurrence of old in the file at path.
func editFile(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(b), old), "%s shows where to edit: %q", path, old)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644))
}

// renders memoizes render by directory.
var renders sync.Map

// render builds a kustomization with kustomize's own library (what kubectl
// kustomize runs; test/kustomize, a module of its own) and returns its
// objects.
func render(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	abs, err := filepath.Abs(dir)
	require.NoError(t, err)
	if v, ok := renders.Load(abs); ok {
		return deepCopies(v.([]*unstructured.Unstructured))
	}
	out, err := kustomize(abs)
	require.NoError(t, err, "kustomize build %s", dir)
	objs := decodeObjects(t, out)
	require.NotEmpty(t, objs, "kustomize build %s rendered nothing", dir)
	renders.Store(abs, objs)
	return deepCopies(objs)
}

// decodeObjects decodes a YAML stream of objects (empty documents skipped).
func decodeObjects(t *testing.T, stream []byte) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	dec := yamlutil.NewYAMLOrJSONDecoder(bytes.NewReader(stream), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		if obj != nil {
			objs = append(objs, &unstructured.Unstructured{Object: obj})
		}
	}
	return objs
}

func deepCopies(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopy()
	}
	return out
}

var (
	kustomizeOnce sync.Once
	kustomizeBin  string
	kustomizeErr  error
)

// kustomizeCommand builds test/kustomize (kustomize's own library, what
// kubectl kustomize runs; a module of its own) once and returns the binary.
func kustomizeCommand() (string, error) {
	kustomizeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "koordlet-yarn-kustomize-")
		if err != nil {
			kustomizeErr = err
			return
		}
		kustomizeBin = filepath.Join(dir, "kustomize")
		cmd := exec.Command("go", "build", "-o", kustomizeBin, ".")
		cmd.Dir = filepath.Join("..", "test", "kustomize")
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			kustomizeErr = fmt.Errorf("build test/kustomize: %w: %s", err, out)
		}
	})
	return kustomizeBin, kustomizeErr
}

// kustomize renders the kustomization at abs; the error holds kustomize's
// message.
func kustomize(abs string) ([]byte, error) {
	bin, err := kustomizeCommand()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, abs)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, stderr.String())
	}
	return out, nil
}

// daemonSet returns the rendered koordlet DaemonSet.
func daemonSet(t *testing.T, objs []*unstructured.Unstructured) *appsv1.DaemonSet {
	return daemonSetNamed(t, objs, "koordlet")
}

// daemonSetNamed returns the rendered DaemonSet called name.
func daemonSetNamed(t *testing.T, objs []*unstructured.Unstructured, name string) *appsv1.DaemonSet {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "DaemonSet" && o.GetName() == name {
			var ds appsv1.DaemonSet
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, &ds, true))
			return &ds
		}
	}
	t.Fatalf("no DaemonSet %s rendered", name)
	return nil
}

// koordletHelp is what bin/koordlet --help says: its flags and the gates of
// its -feature-gates list.
type koordletHelp struct {
	flags, gates map[string]bool
}

var help struct {
	once sync.Once
	h    koordletHelp
	err  error
	out  []byte
}

var (
	flagLine = regexp.MustCompile(`^  -([A-Za-z0-9_.-]+)`)
	gateLine = regexp.MustCompile(`^\s+([A-Za-z0-9]+)=true\|false \(`)
)

// parseHelp reads the flag and gate names of a Go flag package's usage.
func parseHelp(out string) koordletHelp {
	h := koordletHelp{flags: map[string]bool{}, gates: map[string]bool{}}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if m := flagLine.FindStringSubmatch(sc.Text()); m != nil {
			h.flags[m[1]] = true
		} else if m := gateLine.FindStringSubmatch(sc.Text()); m != nil {
			h.gates[m[1]] = true
		}
	}
	return h
}

// builtHelp builds koordlet from this repository once and parses --help.
func builtHelp(t *testing.T) koordletHelp {
	t.Helper()
	help.once.Do(func() {
		dir, err := os.MkdirTemp("", "koordlet-help-")
		if err != nil {
			help.err = err
			return
		}
		defer os.RemoveAll(dir)
		bin := filepath.Join(dir, "koordlet")
		build := exec.Command("go", "build", "-o", bin, "./cmd/koordlet")
		build.Dir = ".."
		if help.out, help.err = build.CombinedOutput(); help.err != nil {
			return
		}
		var out []byte
		out, help.err = exec.Command(bin, "--help").CombinedOutput()
		help.h = parseHelp(string(out))
	})
	require.NoError(t, help.err, "%s", help.out)
	return help.h
}

func TestParseHelp(t *testing.T) {
	h := parseHelp("Usage of koordlet:\n  -addr string\n    \tport (default \":9316\")\n  -feature-gates value\n    \tA set of key=value pairs. Options are:\n    \tAllAlpha=true|false (ALPHA - default=false)\n    \tYARNCPUQoS=true|false (ALPHA - default=false)\n  -v value\n")
	assert.Equal(t, map[string]bool{"addr": true, "feature-gates": true, "v": true}, h.flags)
	assert.Equal(t, map[string]bool{"AllAlpha": true, "YARNCPUQoS": true}, h.gates)
}

// argName splits "-name=value" / "--name=value" / "--name".
func argName(arg string) (name, value string) {
	name, value, _ = strings.Cut(strings.TrimLeft(arg, "-"), "=")
	return name, value
}

// gatesOf reads the -feature-gates argument of c, checking every flag and
// gate against bin/koordlet --help.
func gatesOf(t *testing.T, c corev1.Container) map[string]bool {
	t.Helper()
	h := builtHelp(t)
	require.Contains(t, h.flags, "yarn-nm-endpoint", "--help lists the plugin set's flags")
	require.Contains(t, h.gates, "YARNContainerInformer", "--help lists the plugin set's gates")
	gates := map[string]bool{}
	for _, arg := range c.Args {
		name, value := argName(arg)
		assert.True(t, h.flags[name], "arg %q: koordlet has no flag %q", arg, name)
		if name != "feature-gates" {
			continue
		}
		for _, kv := range strings.Split(value, ",") {
			g, v, ok := strings.Cut(kv, "=")
			require.True(t, ok, "gate %q", kv)
			assert.True(t, h.gates[g], "koordlet has no gate %q", g)
			gates[g] = v == "true"
		}
	}
	return gates
}

// assertGatesPaired: with the gates a DaemonSet sets (the others at their
// defaults, as koordlet does) and the ResourceManagers its arguments name,
// the preflight's gate rule blocks nothing: every YARN gate has the
// upstream gate (or the ResourceManager) it works through.
func assertGatesPaired(t *testing.T, gates map[string]bool, args ...string) {
	t.Helper()
	var rms []string
	for _, a := range args {
		if n, v := argName(a); n == "yarn-rm-endpoints" && v != "" {
			rms = append(rms, v)
		}
	}
	withDefaults := map[string]bool{"BECPUSuppress": true, "RdtResctrl": true, "YARNContainerInformer": true, "YARNMetricsCollector": true, "YARNEBPFDiscovery": true}
	for g, v := range gates {
		withDefaults[g] = v
	}
	for _, f := range preflight.Evaluate(preflight.Facts{Gates: withDefaults, RMEndpoints: rms}).Findings {
		if f.Check == "feature gates" {
			assert.Less(t, f.Severity, preflight.Block, "the gates: %s", f.Detail)
		}
	}
}

// nodeAffinityOn returns the operator of the DaemonSet's required node
// affinity on the enforcement label ("" without one).
func nodeAffinityOn(ds *appsv1.DaemonSet) string {
	a := ds.Spec.Template.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			if e.Key == enforceLabel && len(e.Values) == 1 && e.Values[0] == "true" {
				return string(e.Operator)
			}
		}
	}
	return ""
}

// TestOverlay renders the overlay as an operator applies it (the registry
// set) and checks it against the code: our image, only flags and gates
// bin/koordlet --help knows, observe-only (no gate that acts, by
// features.Acts: this fails the build if one is turned on here), the
// chart's gates, host access and mounts kept, off the nodes labelled for
// enforcement, and the chart's RBAC enough for what the plugin set calls.
func TestOverlay(t *testing.T) {
	objs := render(t, operatorOverlay(t, testRegistry))
	kinds := map[string]bool{}
	for _, o := range objs {
		kinds[o.GetKind()+"/"+o.GetName()] = true
	}
	assert.Equal(t, map[string]bool{"DaemonSet/koordlet": true, "ServiceAccount/koordlet": true,
		"ClusterRole/koordlet-role": true, "ClusterRoleBinding/koordlet-rolebinding": true}, kinds,
		"the image source (local-config) is not applied")

	ds := daemonSet(t, objs)
	base := daemonSet(t, render(t, "koordlet/chart-v1.8.0"))
	require.Len(t, ds.Spec.Template.Spec.Containers, 1)
	c := ds.Spec.Template.Spec.Containers[0]
	assert.Equal(t, koordletImage, c.Image)
	assert.Equal(t, stockImage, base.Spec.Template.Spec.Containers[0].Image)
	assert.Equal(t, []string{"/koordlet"}, c.Command)

	gates := gatesOf(t, c)
	for _, g := range []string{"BECPUEvict", "BEMemoryEvict", "CgroupReconcile", "Accelerators"} {
		assert.True(t, gates[g], "the chart's gate %s is kept", g)
	}
	for g := range features.Acts {
		assert.False(t, gates[string(g)], "the default overlay is observe-only: %s (%s) belongs in the enforcement component", g, features.Acts[g])
	}
	for g, spec := range features.Specs {
		if _, acts := features.Acts[g]; !acts {
			on, set := gates[string(g)]
			assert.True(t, !set && spec.Default || on, "%s observes: on", g)
		}
	}
	assertGatesPaired(t, gates)
	assert.Equal(t, "NotIn", nodeAffinityOn(ds), "off the nodes labelled for enforcement")

	// Applied over a chart-installed koordlet: the DaemonSet's selector is
	// immutable, so it must not change.
	assert.Equal(t, base.Spec.Selector, ds.Spec.Selector)
	assert.Equal(t, base.Namespace, ds.Namespace)

	// The chart's host access and mounts are kept.
	spec := ds.Spec.Template.Spec
	assert.True(t, spec.HostPID, "hostPID: /proc of every host process")
	assert.True(t, spec.HostNetwork, "hostNetwork: the NodeManager's host or pod IP")
	require.NotNil(t, c.SecurityContext)
	assert.True(t, *c.SecurityContext.Privileged)
	assert.Equal(t, base.Spec.Template.Spec.Volumes, spec.Volumes, "no volume added or removed")
	assert.Equal(t, base.Spec.Template.Spec.Containers[0].VolumeMounts, c.VolumeMounts)
	assert.Contains(t, c.Args, "-cgroup-root-dir=/host-cgroup/")

	// RBAC: the chart's role covers what the plugin set calls.
	var role rbacv1.ClusterRole
	for _, o := range objs {
		if o.GetKind() == "ClusterRole" {
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role))
		}
	}
	needed := []rbacv1.PolicyRule{
		// The batch ledger patches the Node's thirdPartyAllocations.
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "patch"}},
		// The preflight finds the NodeManager pod; the evict strategies evict BE pods.
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}},
		// YARNContainerEvicted / YARNContainerEvictFailed on the NodeManager pod.
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		{APIGroups: []string{"slo.koordinator.sh"}, Resources: []string{"nodeslos", "nodemetrics"}, Verbs: []string{"get", "list", "watch"}},
	}
	covered, missing := validation.Covers(role.Rules, needed)
	assert.True(t, covered, "the chart's koordlet-role lacks %v", missing)
}

// TestOverlayNeedsRegistry: the overlay as shipped does not build: the
// registry of the image must be set (the chart pulls Always, so an image no
// registry serves would leave the nodes without a koordlet).
func TestOverlayNeedsRegistry(t *testing.T) {
	_, err := kustomize(operatorOverlay(t, ""))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "data.registry")
	abs, err := filepath.Abs(overlayDir)
	require.NoError(t, err)
	_, err = kustomize(abs)
	assert.ErrorContains(t, err, "data.registry", "the overlay in the repository, unedited")
}

// componentGates are the gates each capability component turns on in the
// enforcement DaemonSet (deploy/koordlet/components).
var componentGates = map[string][]string{
	"isolation":       {"YARNCPUQoS", "YARNMemoryQoS", "YARNResctrlQoS", "YARNBECPUSuppress"},
	"memory-eviction": {"YARNBEMemoryEvict", "YARNNodeManagerGuard"},
	"cpu-eviction":    {"YARNBECPUEvict"},
	"ledger":          {"YARNBatchLedger", "YARNRMNodeResourceSync"},
	"qos-policy":      {"YARNQoSPolicy"},
}

// capabilities are the components taken after enforcement, in the order
// the docs give.
var capabilities = []string{"isolation", "memory-eviction", "cpu-eviction", "ledger", "qos-policy"}

// enabled returns the gates a gate map turns on.
func enabled(gates map[string]bool) []string {
	var on []string
	for g, v := range gates {
		if v {
			on = append(on, g)
		}
	}
	sort.Strings(on)
	return on
}

// TestEnforcementComponent: with the component added, a second DaemonSet
// runs on the labelled nodes only, from the same base, image, flags and
// service account, with no gate that acts of its own; the observe-only
// DaemonSet is unchanged and keeps off those nodes.
func TestEnforcementComponent(t *testing.T) {
	objs := render(t, operatorOverlay(t, testRegistry, "enforcement"))
	observe, enforce := daemonSet(t, objs), daemonSetNamed(t, objs, "koordlet-enforce")
	alone := daemonSet(t, render(t, operatorOverlay(t, testRegistry)))
	assert.Equal(t, alone, observe, "the observe-only DaemonSet is the overlay's")

	assert.Equal(t, "In", nodeAffinityOn(enforce), "only on the nodes labelled %s=true", enforceLabel)
	assert.Equal(t, observe.Namespace, enforce.Namespace)
	assert.Equal(t, "enforce", enforce.Spec.Selector.MatchLabels["koordlet-yarn.io/mode"], "a selector of its own")
	sel, err := metav1.LabelSelectorAsSelector(enforce.Spec.Selector)
	require.NoError(t, err)
	assert.True(t, sel.Matches(labelsOf(enforce.Spec.Template.Labels)))
	assert.False(t, sel.Matches(labelsOf(observe.Spec.Template.Labels)), "the enforcement selector does not take the observe pods")

	oc, ec := observe.Spec.Template.Spec.Containers[0], enforce.Spec.Template.Spec.Containers[0]
	assert.Equal(t, oc.Image, ec.Image)
	assert.Equal(t, oc.Resources, ec.Resources)
	assert.Equal(t, observe.Spec.Template.Spec.ServiceAccountName, enforce.Spec.Template.Spec.ServiceAccountName)
	assert.Equal(t, observe.Spec.Template.Spec.Volumes, enforce.Spec.Template.Spec.Volumes)
	assert.Equal(t, oc.Args, ec.Args, "on its own the enforcement DaemonSet acts no more than the observe one")
}

// TestCapabilityComponents: each capability, added after enforcement,
// turns on its own gates in the enforcement DaemonSet only, paired with
// their upstream gates; without the enforcement component before it the
// build fails and says why.
func TestCapabilityComponents(t *testing.T) {
	for _, c := range capabilities {
		t.Run(c, func(t *testing.T) {
			objs := render(t, operatorOverlay(t, testRegistry, "enforcement", c))
			observe, enforce := daemonSet(t, objs), daemonSetNamed(t, objs, "koordlet-enforce")
			gates := gatesOf(t, enforce.Spec.Template.Spec.Containers[0])
			args := enforce.Spec.Template.Spec.Containers[0].Args
			base := gatesOf(t, daemonSet(t, render(t, "koordlet/chart-v1.8.0")).Spec.Template.Spec.Containers[0])
			want := append(enabled(base), componentGates[c]...)
			sort.Strings(want)
			assert.Equal(t, want, enabled(gates), "the base's gates and %s's", c)
			assertGatesPaired(t, gates, args...)
			for g := range features.Acts {
				assert.False(t, gatesOf(t, observe.Spec.Template.Spec.Containers[0])[string(g)], "observe-only: %s", g)
			}

			_, err := kustomize(operatorOverlay(t, testRegistry, c))
			assert.ErrorContains(t, err, "koordlet-enforce", "%s without the enforcement component", c)
			_, err = kustomize(operatorOverlay(t, testRegistry, c, "enforcement"))
			assert.ErrorContains(t, err, "koordlet-enforce", "%s before the enforcement component", c)
		})
	}
}

// TestLedgerComponentNeedsResourceManagers: the ledger component, as
// shipped, does not build: the ResourceManagers must be named; the
// endpoints reach koordlet through its -yarn-rm-endpoints flag.
func TestLedgerComponentNeedsResourceManagers(t *testing.T) {
	dir := operatorOverlay(t, testRegistry, "enforcement", "ledger")
	ds := daemonSetNamed(t, render(t, dir), "koordlet-enforce")
	c := ds.Spec.Template.Spec.Containers[0]
	assert.Contains(t, c.Args, "-yarn-rm-endpoints=$(KOORDLET_YARN_RM_ENDPOINTS)")
	var env string
	for _, e := range c.Env {
		if e.Name == "KOORDLET_YARN_RM_ENDPOINTS" {
			env = e.Value
		}
	}
	assert.Equal(t, "http://rm1.example.com:8088,http://rm2.example.com:8088", env, "the kubelet expands it in the arguments")

	editFile(t, filepath.Join(filepath.Dir(dir), "components", "ledger", "rm.yaml"), "  endpoints: ", "  # endpoints: ")
	_, err := kustomize(dir)
	assert.ErrorContains(t, err, "data.endpoints")
}

// subsets returns every subset of items, each in the items' order.
func subsets(items []string) [][]string {
	out := [][]string{nil}
	for _, it := range items {
		n := len(out)
		for i := 0; i < n; i++ {
			out = append(out, append(append([]string{}, out[i]...), it))
		}
	}
	return out
}

// TestEveryOverlayAndComponent renders every combination an operator can
// reach — observe-only, enforcement alone, enforcement with any set of the
// capabilities — with both preflights: the observe one (whose pod is the
// observe DaemonSet's) and, with enforcement, the enforcement one (whose
// pod carries the enforcement gates). The enforcement preflight without
// the component fails and says why.
func TestEveryOverlayAndComponent(t *testing.T) {
	combos := [][]string{nil}
	for _, s := range subsets(capabilities) {
		combos = append(combos, append([]string{"enforcement"}, s...))
	}
	for _, combo := range combos {
		name := strings.Join(combo, "+")
		if name == "" {
			name = "observe-only"
		}
		t.Run(name, func(t *testing.T) {
			overlay := operatorOverlay(t, testRegistry, combo...)
			tree := filepath.Dir(overlay)
			objs := render(t, overlay)
			observe := daemonSet(t, objs).Spec.Template.Spec.Containers[0]
			for g := range features.Acts {
				assert.False(t, gatesOf(t, observe)[string(g)], "observe-only: %s", g)
			}
			job := preflightJob(t, filepath.Join(tree, "preflight"))
			assert.Equal(t, append(append([]string{}, observe.Args...), "-yarn-preflight", "-yarn-preflight-output=json", "--v=0"), job.Spec.Template.Spec.Containers[0].Args)

			_, err := kustomize(filepath.Join(tree, "preflight", "enforce"))
			if len(combo) == 0 {
				assert.ErrorContains(t, err, "koordlet-enforce", "the enforcement preflight needs the component")
				return
			}
			require.NoError(t, err)
			enforce := daemonSetNamed(t, objs, "koordlet-enforce").Spec.Template.Spec.Containers[0]
			gates := gatesOf(t, enforce)
			want := map[string]bool{}
			for _, c := range combo[1:] {
				for _, g := range componentGates[c] {
					want[g] = true
				}
			}
			for g := range features.Acts {
				assert.Equal(t, want[string(g)], gates[string(g)], "%s in the enforcement DaemonSet", g)
			}
			assertGatesPaired(t, gates, enforce.Args...)
			ejob := preflightJob(t, filepath.Join(tree, "preflight", "enforce"))
			assert.Equal(t, "koordlet-yarn-preflight-enforce", ejob.Name, "beside the observe mode's Job")
			c := ejob.Spec.Template.Spec.Containers[0]
			assert.Equal(t, append(append([]string{}, enforce.Args...), "-yarn-preflight", "-yarn-preflight-output=json", "--v=0"), c.Args)
			assert.Equal(t, enforce.Env, c.Env)
			assert.Equal(t, gates, gatesOf(t, c), "the enforcement preflight checks the enforcement gates")
		})
	}
}

// preflightJob renders a preflight kustomization: one Job, nothing else.
func preflightJob(t *testing.T, dir string) *batchv1.Job {
	t.Helper()
	objs := render(t, dir)
	require.Len(t, objs, 1, "only the Job is applied")
	require.Equal(t, "Job", objs[0].GetKind())
	var job batchv1.Job
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(objs[0].Object, &job, true))
	return &job
}

// TestCustomisedRelease: the overlay built on an operator's own release
// (helm get manifest of a release with values of its own: other gates, log
// level, pull secrets, and the chart's other objects) keeps the release's
// arguments in both DaemonSets, adds ours, and applies nothing else of the
// release.
func TestCustomisedRelease(t *testing.T) {
	values := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(values, []byte(`koordlet:
  features: BECPUEvict=false,BEMemoryEvict=true,CgroupReconcile=true,CPUBurst=false
  log:
    level: "2"
imagePullSecrets:
  - name: operator-pull-secret
`), 0o644))
	release := helmTemplate(t, chartDir, values)
	var manifest bytes.Buffer
	for _, o := range release {
		b, err := o.MarshalJSON()
		require.NoError(t, err)
		manifest.WriteString("---\n")
		manifest.Write(b)
		manifest.WriteString("\n")
	}
	// What else a whole release's manifest holds.
	manifest.WriteString(`---
apiVersion: apps/v1
kind: Deployment
metadata: {name: koord-manager, namespace: koordinator-system, labels: {koord-app: koord-manager}}
spec:
  selector: {matchLabels: {koord-app: koord-manager}}
  template:
    metadata: {labels: {koord-app: koord-manager}}
    spec: {containers: [{name: manager, image: m}]}
---
apiVersion: v1
kind: Service
metadata: {name: koordlet, namespace: koordinator-system, labels: {koord-app: koordlet}}
spec: {ports: [{port: 9316}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: slo-controller-config, namespace: koordinator-system}
data: {colocation-config: "{}"}
`)
	overlay := operatorOverlay(t, testRegistry, "enforcement", "memory-eviction")
	tree := filepath.Dir(overlay)
	require.NoError(t, os.WriteFile(filepath.Join(tree, "base", "daemonset", "release.yaml"), manifest.Bytes(), 0o644))
	editFile(t, filepath.Join(tree, "base", "daemonset", "kustomization.yaml"), "  - ../../chart-v1.8.0/daemonset\n", "  - release.yaml\n")

	objs := render(t, overlay)
	kinds := map[string]bool{}
	for _, o := range objs {
		kinds[o.GetKind()+"/"+o.GetName()] = true
	}
	assert.Equal(t, map[string]bool{"DaemonSet/koordlet": true, "DaemonSet/koordlet-enforce": true, "ServiceAccount/koordlet": true,
		"ClusterRole/koordlet-role": true, "ClusterRoleBinding/koordlet-rolebinding": true}, kinds, "nothing else of the release")
	relArgs := daemonSet(t, release).Spec.Template.Spec.Containers[0].Args
	require.Contains(t, relArgs, "--v=2")
	for _, name := range []string{"koordlet", "koordlet-enforce"} {
		ds := daemonSetNamed(t, objs, name)
		c := ds.Spec.Template.Spec.Containers[0]
		assert.Equal(t, relArgs, c.Args[:len(relArgs)], "%s keeps the release's arguments first", name)
		assert.Equal(t, koordletImage, c.Image)
		assert.Equal(t, []corev1.LocalObjectReference{{Name: "operator-pull-secret"}}, ds.Spec.Template.Spec.ImagePullSecrets, name)
		gates := gatesOf(t, c)
		assert.False(t, gates["BECPUEvict"], "%s: the release's BECPUEvict=false", name)
		assert.Equal(t, name == "koordlet-enforce", gates["YARNBEMemoryEvict"], name)
	}
	job := preflightJob(t, filepath.Join(tree, "preflight", "enforce"))
	assert.Contains(t, job.Spec.Template.Spec.Containers[0].Args, "--v=2")
}

// TestQoSPolicyComponent: the example policy ConfigMap validates as
// koordlet would load it, is mounted into both DaemonSets and named by
// --yarn-qos-policy-file; its gate is on only where enforcement runs.
func TestQoSPolicyComponent(t *testing.T) {
	objs := render(t, operatorOverlay(t, testRegistry, "enforcement", "qos-policy"))
	var cm *corev1.ConfigMap
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" {
			cm = &corev1.ConfigMap{}
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, cm))
		}
	}
	require.NotNil(t, cm, "the policy ConfigMap is rendered")
	assert.Equal(t, "koordlet-yarn-qos-policy", cm.Name, "no content hash: koordlet reloads it in place")
	assert.Equal(t, koordletNS, cm.Namespace)
	p, err := policy.Parse([]byte(cm.Data["policy.yaml"]))
	require.NoError(t, err, "the example policy validates")
	assert.NotEmpty(t, p.Rules)

	for _, name := range []string{"koordlet", "koordlet-enforce"} {
		ds := daemonSetNamed(t, objs, name)
		c := ds.Spec.Template.Spec.Containers[0]
		var mounted string
		for _, m := range c.VolumeMounts {
			if m.Name == "koordlet-yarn-qos-policy" {
				mounted = m.MountPath
			}
		}
		assert.Equal(t, "/etc/koordlet-yarn/qos-policy/", mounted, name)
		assert.Contains(t, c.Args, "-yarn-qos-policy-file=/etc/koordlet-yarn/qos-policy/policy.yaml", name)
		gates := gatesOf(t, c)
		assert.Equal(t, name == "koordlet-enforce", gates["YARNQoSPolicy"], "%s: YARNQoSPolicy only where enforced", name)
	}
}

// copyTree copies deploy/koordlet to a temporary directory with the
// registry set in the overlay's image.yaml and the given components added,
// as an operator's checkout.
func copyTree(t *testing.T, components ...string) string {
	t.Helper()
	return filepath.Dir(operatorOverlay(t, testRegistry, components...))
}

// TestPreflightJob: deploy/koordlet/preflight renders one Job whose pod is
// the DaemonSet's (image, arguments, host access, mounts, service account)
// plus the preflight flags, one pod per node labelled for it, never
// restarted.
func TestPreflightJob(t *testing.T) {
	tree := copyTree(t)
	job := *preflightJob(t, filepath.Join(tree, "preflight"))
	ds := daemonSet(t, render(t, filepath.Join(tree, "overlay")))
	pod, dsPod := job.Spec.Template.Spec, ds.Spec.Template.Spec
	c, dc := pod.Containers[0], dsPod.Containers[0]
	assert.Equal(t, dc.Image, c.Image)
	assert.Equal(t, append(append([]string{}, dc.Args...), "-yarn-preflight", "-yarn-preflight-output=json", "--v=0"), c.Args)
	require.NotNil(t, job.Spec.CompletionMode)
	assert.Equal(t, batchv1.IndexedCompletion, *job.Spec.CompletionMode, "a blocking node fails its own index only")
	require.NotNil(t, job.Spec.BackoffLimitPerIndex)
	assert.Equal(t, int32(0), *job.Spec.BackoffLimitPerIndex)
	assert.Equal(t, dc.VolumeMounts, c.VolumeMounts)
	assert.Equal(t, dsPod.Volumes, pod.Volumes)
	assert.Equal(t, dsPod.ServiceAccountName, pod.ServiceAccountName)
	assert.True(t, pod.HostPID)
	assert.Equal(t, corev1.RestartPolicyNever, pod.RestartPolicy)
	require.NotNil(t, pod.Affinity)
	assert.Equal(t, "koordlet-yarn.io/preflight", pod.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Key)
	require.NotNil(t, pod.Affinity.PodAntiAffinity, "one pod per node")
	gatesOf(t, c) // every flag known to bin/koordlet
}

// labelsOf makes a label set of a map.
func labelsOf(m map[string]string) labels.Set { return labels.Set(m) }

// TestOverlayServerSideDryRun applies the rendered overlay to a real
// kube-apiserver (the node in a box's) with server-side apply and dry run:
// the API server's own validation and defaulting accept every object.
func TestOverlayServerSideDryRun(t *testing.T) {
	top, err := filepath.Abs("..")
	require.NoError(t, err)
	if err := nodebox.APIServerPrerequisites(top); err != nil {
		kerneltest.Skip(t, err.Error())
	}
	api, err := nodebox.StartAPIServer(top)
	require.NoError(t, err)
	t.Cleanup(api.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// A dry-run of a namespaced object needs its namespace.
	_, err = api.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: koordletNS}}, metav1.CreateOptions{})
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(api.Config)
	require.NoError(t, err)

	objs := render(t, operatorOverlay(t, testRegistry, "enforcement", "qos-policy"))
	objs = append(objs, render(t, filepath.Join(copyTree(t), "preflight"))...)
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		mapping, err := resourceOf(gvk)
		require.NoError(t, err)
		var ri dynamic.ResourceInterface = dyn.Resource(mapping)
		if o.GetNamespace() != "" {
			ri = dyn.Resource(mapping).Namespace(o.GetNamespace())
		}
		got, err := ri.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: "koordlet-yarn-deploy-test", DryRun: []string{metav1.DryRunAll}, Force: true})
		require.NoError(t, err, "server-side dry-run apply of %s %s", gvk.Kind, o.GetName())
		assert.Equal(t, o.GetName(), got.GetName())
		// Dry run: nothing was stored.
		_, err = ri.Get(ctx, o.GetName(), metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "%s %s was stored: %v", gvk.Kind, o.GetName(), err)
	}

	// The API server refuses what it must: the test can fail.
	bad := daemonSet(t, objs).DeepCopy()
	bad.Spec.Template.Spec.Containers[0].VolumeMounts = append(bad.Spec.Template.Spec.Containers[0].VolumeMounts,
		corev1.VolumeMount{Name: "no-such-volume", MountPath: "/x"})
	badObj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(bad)
	require.NoError(t, err)
	u := &unstructured.Unstructured{Object: badObj}
	u.SetAPIVersion("apps/v1")
	u.SetKind("DaemonSet")
	_, err = dyn.Resource(appsv1.SchemeGroupVersion.WithResource("daemonsets")).Namespace(koordletNS).Apply(ctx, "koordlet", u,
		metav1.ApplyOptions{FieldManager: "koordlet-yarn-deploy-test", DryRun: []string{metav1.DryRunAll}, Force: true})
	assert.True(t, apierrors.IsInvalid(err), "a mount of a missing volume is refused: %v", err)
}

// resourceOf maps the kinds the overlay renders to their resources.
func resourceOf(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	resources := map[string]string{"DaemonSet": "daemonsets", "ServiceAccount": "serviceaccounts", "ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings", "ConfigMap": "configmaps", "Job": "jobs"}
	r, ok := resources[gvk.Kind]
	if !ok {
		return schema.GroupVersionResource{}, &unknownKindError{gvk}
	}
	return gvk.GroupVersion().WithResource(r), nil
}

type unknownKindError struct{ gvk schema.GroupVersionKind }

func (e *unknownKindError) Error() string {
	return "the test does not know the resource of " + e.gvk.String()
}

// TestMain removes the kustomize binary the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if kustomizeBin != "" {
		os.RemoveAll(filepath.Dir(kustomizeBin))
	}
	os.Exit(code)
}
