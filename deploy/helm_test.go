package deploy

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
)

const chartDir = "helm/testdata/koordinator-v1.8.0"

// helmTemplate renders the chart at dir with the values files through
// helm's own engine (test/helm, a module of its own) and returns the objects.
func helmTemplate(t *testing.T, dir string, values ...string) []*unstructured.Unstructured {
	t.Helper()
	args := []string{"run", "."}
	for _, p := range append([]string{dir}, values...) {
		abs, err := filepath.Abs(p)
		require.NoError(t, err)
		args = append(args, abs)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = filepath.Join("..", "test", "helm")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "helm template: %s", stderr.String())
	objs := decodeObjects(t, out)
	require.NotEmpty(t, objs)
	return objs
}

// TestChartBaseIsHelmsRender: the overlay's base (rendered by hand from the
// chart) is what helm's engine renders from the chart's v1.8.0 templates
// with their default values.
func TestChartBaseIsHelmsRender(t *testing.T) {
	helm := daemonSet(t, helmTemplate(t, chartDir))
	base := daemonSet(t, render(t, "koordlet/chart-v1.8.0"))
	assert.Equal(t, helm, base)
}

// postRender runs deploy/helm/post-render as helm would (the rendered
// release on its standard input) with the given environment and the
// tests' kustomize.
func postRender(t *testing.T, release []byte, env ...string) ([]byte, error) {
	t.Helper()
	bin, err := kustomizeCommand()
	require.NoError(t, err)
	cmd := exec.Command("helm/post-render")
	cmd.Env = append(append(os.Environ(), "KUSTOMIZE="+bin, "KOORDLET_YARN_REGISTRY=", "KOORDLET_YARN_COMPONENTS=", "KOORDLET_YARN_RM_ENDPOINTS="), env...)
	cmd.Stdin = bytes.NewReader(release)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%w: %s", err, stderr.String())
	}
	return out, nil
}

// helmRelease renders the chart's templates as helm does for the release.
func helmRelease(t *testing.T, values ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, o := range helmTemplate(t, chartDir, values...) {
		j, err := o.MarshalJSON()
		require.NoError(t, err)
		b.WriteString("---\n")
		b.Write(j)
		b.WriteString("\n")
	}
	return b.Bytes()
}

// TestHelmPostRenderNeedsRegistry: the helm route fails, and renders
// nothing, until the registry of koordlet-yarn's image is set (the chart
// pulls Always: an image under Koordinator's registry, where ours is not,
// would leave the nodes without a koordlet).
func TestHelmPostRenderNeedsRegistry(t *testing.T) {
	out, err := postRender(t, helmRelease(t))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "KOORDLET_YARN_REGISTRY is not set")
	assert.Empty(t, out)
	_, err = postRender(t, helmRelease(t), "KOORDLET_YARN_REGISTRY="+testRegistry, "KOORDLET_YARN_COMPONENTS=enforcement,../overlay")
	assert.ErrorContains(t, err, "no component ../overlay")
	_, err = postRender(t, helmRelease(t), "KOORDLET_YARN_REGISTRY="+testRegistry, "KOORDLET_YARN_COMPONENTS=memory-eviction")
	assert.ErrorContains(t, err, "koordlet-enforce", "a capability without enforcement")
}

// TestHelmPostRender: helm's render of the release (with values of the
// operator's own) through the post-renderer: koordlet's DaemonSet gets our
// image (the chart's other images untouched), keeps the release's
// arguments, observes only, has the larger memory limit and stays off the
// enforcement nodes, as the kustomize overlay's; every other object of the
// release is unchanged; with the components the enforcement DaemonSet is
// the overlay's too.
func TestHelmPostRender(t *testing.T) {
	values := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(values, []byte("koordlet:\n  log:\n    level: \"2\"\n"), 0o644))
	release := helmRelease(t, values)
	rel := helmTemplate(t, chartDir, values)
	out, err := postRender(t, release, "KOORDLET_YARN_REGISTRY="+testRegistry)
	require.NoError(t, err)
	objs := decodeObjects(t, out)
	ds := daemonSet(t, objs)
	c := ds.Spec.Template.Spec.Containers[0]
	assert.Equal(t, koordletImage, c.Image, "our image, under the operator's registry")
	relArgs := daemonSet(t, rel).Spec.Template.Spec.Containers[0].Args
	assert.Equal(t, relArgs, c.Args[:len(relArgs)], "the release's arguments kept")
	gates := gatesOf(t, c)
	for g := range features.Acts {
		assert.False(t, gates[string(g)], "observe-only: %s", g)
	}
	assert.True(t, c.Resources.Limits.Memory().Equal(resource.MustParse("512Mi")))
	assert.Equal(t, "NotIn", nodeAffinityOn(ds))
	// The kustomize overlay's DaemonSet, but for the release's arguments.
	overlay := daemonSet(t, render(t, operatorOverlay(t, testRegistry))).Spec.Template.Spec.Containers[0]
	assert.Equal(t, overlay.Resources, c.Resources)
	assert.Equal(t, fmt.Sprint(gatesOf(t, overlay)), fmt.Sprint(gates))
	// Every other object of the release, unchanged.
	others := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		others[o.GetKind()+"/"+o.GetName()] = o
	}
	for _, o := range rel {
		if o.GetKind() == "DaemonSet" {
			continue
		}
		got, ok := others[o.GetKind()+"/"+o.GetName()]
		if assert.True(t, ok, "%s %s kept", o.GetKind(), o.GetName()) {
			assert.Equal(t, o.Object, got.Object, "%s %s unchanged", o.GetKind(), o.GetName())
		}
	}
	assert.Len(t, objs, len(rel), "nothing added observe-only")

	out, err = postRender(t, release, "KOORDLET_YARN_REGISTRY="+testRegistry, "KOORDLET_YARN_COMPONENTS=enforcement,memory-eviction,ledger",
		"KOORDLET_YARN_RM_ENDPOINTS=http://rm1:8088,http://rm2:8088")
	require.NoError(t, err)
	objs = decodeObjects(t, out)
	enforce := daemonSetNamed(t, objs, "koordlet-enforce")
	ec := enforce.Spec.Template.Spec.Containers[0]
	assert.Equal(t, relArgs, ec.Args[:len(relArgs)])
	eg := gatesOf(t, ec)
	assert.True(t, eg["YARNBEMemoryEvict"] && eg["YARNNodeManagerGuard"] && eg["YARNRMNodeResourceSync"])
	assert.False(t, eg["YARNBECPUEvict"])
	assertGatesPaired(t, eg, ec.Args...)
	assert.Equal(t, "In", nodeAffinityOn(enforce))
	assert.Contains(t, fmt.Sprint(ec.Env), "http://rm1:8088,http://rm2:8088")
}
