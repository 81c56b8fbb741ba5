package nodebox

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	koordclient "github.com/koordinator-sh/koordinator/pkg/client/clientset/versioned"

	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// TestSharedAPIServerCleared: what a box and its test leave on a shared
// control plane — a bound pod (no kubelet confirms its end), an object
// with a finalizer, a NodeSLO, a CRD the next box does not ask for, a node
// — is gone when the next box clears it; the server's own objects stay.
func TestSharedAPIServerCleared(t *testing.T) {
	top, err := filepath.Abs("../..")
	require.NoError(t, err)
	if err := APIServerPrerequisites(top); err != nil {
		kerneltest.Skip(t, err.Error())
	}
	api, err := StartAPIServer(top)
	require.NoError(t, err)
	t.Cleanup(api.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	crdDir, err := koordinatorCRDDir()
	require.NoError(t, err)
	crds, err := readCRDs(crdDir, append(append([]string(nil), crdFiles...), "scheduling.sigs.k8s.io_elasticquotas.yaml"))
	require.NoError(t, err)
	keepBase := map[string]bool{}
	for _, crd := range crds[:len(crdFiles)] {
		keepBase[crd.Name] = true
	}

	// The first box: only the server's own objects, which stay.
	require.NoError(t, api.clear(ctx, keepBase))
	own, err := api.Kube.SchedulingV1().PriorityClasses().Get(ctx, "system-node-critical", metav1.GetOptions{})
	require.NoError(t, err)

	// What a box and its test make.
	require.NoError(t, applyCRDs(ctx, api.Config, crds))
	require.NoError(t, createNode(ctx, api.Kube, NodeName))
	koord, err := koordclient.NewForConfig(api.Config)
	require.NoError(t, err)
	require.NoError(t, createNodeSLO(ctx, koord, NodeName, slov1alpha1.NodeSLOSpec{}))
	pod, err := createPod(ctx, api.Kube, LayoutCgroupfs, NodeName, PodSpec{Namespace: "yarn", Name: "nodemanager"}, "10.244.0.10")
	require.NoError(t, err)
	_, err = api.Kube.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "held", Finalizers: []string{"e2e.koordlet-yarn/held"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	// Deleted gracefully, as a test would: the pod bound to the node
	// waits for a kubelet, the config map for its finalizer.
	require.NoError(t, api.Kube.CoreV1().Pods("yarn").Delete(ctx, pod.pod.Name, metav1.DeleteOptions{}))
	require.NoError(t, api.Kube.CoreV1().ConfigMaps("default").Delete(ctx, "held", metav1.DeleteOptions{}))

	// The next box, which asks only for the base CRDs.
	require.NoError(t, api.clear(ctx, keepBase))
	_, err = api.Kube.CoreV1().Pods("yarn").Get(ctx, "nodemanager", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the pod: %v", err)
	_, err = api.Kube.CoreV1().ConfigMaps("default").Get(ctx, "held", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the config map with a finalizer: %v", err)
	_, err = api.Kube.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the node: %v", err)
	slos, err := koord.SloV1alpha1().NodeSLOs().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, slos.Items, "NodeSLOs")
	ext, err := apiextensionsclient.NewForConfig(api.Config)
	require.NoError(t, err)
	list, err := ext.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var names []string
	for _, crd := range list.Items {
		names = append(names, crd.Name)
	}
	require.ElementsMatch(t, []string{crds[0].Name, crds[1].Name, crds[2].Name, crds[3].Name}, names,
		"the base CRDs stay (the next box need not wait for them), the extra one is gone")
	still, err := api.Kube.SchedulingV1().PriorityClasses().Get(ctx, "system-node-critical", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, own.UID, still.UID, "the server's own objects stay")

	// And the next box makes its objects again.
	require.NoError(t, applyCRDs(ctx, api.Config, crds[:len(crdFiles)]))
	require.NoError(t, createNode(ctx, api.Kube, NodeName))
	require.NoError(t, createNodeSLO(ctx, koord, NodeName, slov1alpha1.NodeSLOSpec{}))
}
