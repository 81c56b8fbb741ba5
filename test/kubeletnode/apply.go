package kubeletnode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"
)

// fieldManager is the field manager of the test's applies.
const fieldManager = "koordlet-yarn-e2e"

// ApplyFile applies every object of a YAML stream (a rendered
// kustomization) as kubectl apply --server-side does, creating the
// namespaces the objects name first. It returns the objects applied.
func (n *Node) ApplyFile(ctx context.Context, path string) ([]*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("decode %s: %w", path, err)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	dyn, err := dynamic.NewForConfig(n.cp.RestConfig())
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(n.Client.Discovery()))
	for _, o := range objs {
		if ns := o.GetNamespace(); ns != "" {
			if err := n.ensureNamespace(ctx, dyn, ns); err != nil {
				return nil, err
			}
		}
	}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", gvk.Kind, o.GetName(), err)
		}
		data, err := o.MarshalJSON()
		if err != nil {
			return nil, err
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if o.GetNamespace() != "" {
			ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		if _, err := ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: fieldManager, Force: ptr.To(true)}); err != nil {
			return nil, fmt.Errorf("apply %s %s/%s: %w", gvk.Kind, o.GetNamespace(), o.GetName(), err)
		}
	}
	return objs, nil
}

// ensureNamespace applies a namespace.
func (n *Node) ensureNamespace(ctx context.Context, dyn dynamic.Interface, name string) error {
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
	data, err := ns.MarshalJSON()
	if err != nil {
		return err
	}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	_, err = dyn.Resource(gvr).Patch(ctx, name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: fieldManager, Force: ptr.To(true)})
	if err != nil {
		return fmt.Errorf("apply namespace %s: %w", name, err)
	}
	return nil
}
