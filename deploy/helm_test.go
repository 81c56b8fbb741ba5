package deploy

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// TestHelmValues: the helm route, the chart's own koordlet.* values, renders
// with the chart's templates into our image under the chart's registry, the
// chart's gates and no gate that acts, the larger memory limit, and only
// arguments bin/koordlet knows.
func TestHelmValues(t *testing.T) {
	ds := daemonSet(t, helmTemplate(t, chartDir, "helm/values-koordlet-yarn.yaml"))
	c := ds.Spec.Template.Spec.Containers[0]
	assert.Equal(t, "registry.cn-beijing.aliyuncs.com/koordinator-sh/koordlet-yarn:v1.8.0-yarn", c.Image, "our image, under the chart's imageRepositoryHost")
	gates := gatesOf(t, c)
	for _, g := range []string{"BECPUEvict", "BEMemoryEvict", "CgroupReconcile", "Accelerators"} {
		assert.True(t, gates[g], "the chart's gate %s", g)
	}
	for g := range features.Acts {
		assert.False(t, gates[string(g)], "observe-only: %s", g)
	}
	assert.True(t, c.Resources.Limits.Memory().Equal(resource.MustParse("512Mi")))

	// The same gates and limit as the kustomize overlay's observe-only
	// DaemonSet.
	overlay := daemonSet(t, render(t, operatorOverlay(t, testRegistry))).Spec.Template.Spec.Containers[0]
	assert.Equal(t, fmt.Sprint(gatesOf(t, overlay)), fmt.Sprint(gates))
	assert.Equal(t, overlay.Resources, c.Resources)
	assert.True(t, strings.HasSuffix(overlay.Image, "/koordlet-yarn:v1.8.0-yarn"))
}
