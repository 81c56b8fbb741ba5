package nodebox

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// A control plane shared by the boxes of one process (Options.APIServer):
// under the v2 guest's emulated CPU kube-apiserver takes ~50 s to be ready
// and the CRDs ~13 s more, against ~10 s for the rest of a box, so a test
// binary that starts a dozen boxes spends most of its time there. A box on a
// shared server first empties it — every object that was not there when the
// server became ready (its own bootstrap objects), in every resource the
// server lists, and every CRD the box does not ask for — so that each box
// starts, as with a server of its own, on an empty cluster.

// baseline records the objects the server made itself (bootstrap RBAC,
// priority classes, flow control, its namespaces and leases): clear keeps
// them.
func (a *APIServer) baseline(ctx context.Context) error {
	objs, err := a.objects(ctx)
	if err != nil {
		return fmt.Errorf("the shared API server's own objects: %w", err)
	}
	a.own = map[types.UID]bool{}
	for _, o := range objs {
		a.own[o.uid] = true
	}
	return nil
}

// object is one object of the server.
type object struct {
	gvr             schema.GroupVersionResource
	namespace, name string
	uid             types.UID
	finalizers      bool
}

func (o object) String() string {
	if o.namespace == "" {
		return o.gvr.Resource + "/" + o.name
	}
	return o.gvr.Resource + " " + o.namespace + "/" + o.name
}

// kept are the resources clear never empties: namespaces (deleting one
// needs kube-controller-manager's namespace controller, which the box does
// not run; an empty namespace is harmless), CRDs (clearCRDs keeps those
// the box asks for, so that it does not wait for them to be established
// again) and APIServices (the server registers one per CRD group itself).
var kept = map[string]bool{"namespaces": true, "customresourcedefinitions": true, "apiservices": true}

// quiet is a's config without the server's deprecation warnings (listing
// every resource meets v1 Endpoints and the like).
func (a *APIServer) quiet() *rest.Config {
	cfg := rest.CopyConfig(a.Config)
	cfg.WarningHandler = rest.NoWarnings{}
	return cfg
}

// objects lists every object of every resource the server can list and
// delete (discovery, read afresh: the previous box's CRDs come and go).
func (a *APIServer) objects(ctx context.Context) ([]object, error) {
	disco, err := discovery.NewDiscoveryClientForConfig(a.quiet())
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(a.quiet())
	if err != nil {
		return nil, err
	}
	lists, err := disco.ServerPreferredResources()
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	var gvrs []schema.GroupVersionResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			return nil, err
		}
		for _, r := range l.APIResources {
			if !strings.Contains(r.Name, "/") && !kept[r.Name] && hasVerbs(r.Verbs, "list", "delete") {
				gvrs = append(gvrs, gv.WithResource(r.Name))
			}
		}
	}
	// Some fifty lists: in parallel (one after another they took ~10 s in
	// the v2 guest).
	found := make([][]object, len(gvrs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, gvr := range gvrs {
		g.Go(func() error {
			items, err := dyn.Resource(gvr).List(gctx, metav1.ListOptions{})
			if apierrors.IsNotFound(err) {
				return nil // a CRD deleted since discovery
			}
			if err != nil {
				return fmt.Errorf("list %s: %w", gvr, err)
			}
			for _, it := range items.Items {
				found[i] = append(found[i], object{gvr: gvr, namespace: it.GetNamespace(), name: it.GetName(), uid: it.GetUID(),
					finalizers: len(it.GetFinalizers()) > 0})
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var out []object
	for _, objs := range found {
		out = append(out, objs...)
	}
	return out, nil
}

// hasVerbs reports whether verbs has every one of want.
func hasVerbs(verbs metav1.Verbs, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(verbs, w) {
			return false
		}
	}
	return true
}

// clear deletes every object the server did not make itself (at once: no
// kubelet confirms a pod's end here) and every CRD not in keepCRDs, and
// waits until they are gone.
func (a *APIServer) clear(ctx context.Context, keepCRDs map[string]bool) error {
	if a.own == nil {
		// The first box: nothing but the server's own objects yet.
		if err := a.baseline(ctx); err != nil {
			return err
		}
	}
	dyn, err := dynamic.NewForConfig(a.quiet())
	if err != nil {
		return err
	}
	objs, err := a.objects(ctx)
	if err != nil {
		return fmt.Errorf("clear the shared API server: %w", err)
	}
	now := int64(0)
	background := metav1.DeletePropagationBackground
	var left []object
	for _, o := range objs {
		if !a.own[o.uid] {
			left = append(left, o)
		}
	}
	// Delete each, then look again at those deleted until each is gone
	// (or is another object of that name: the server renews its own
	// leases) rather than list everything again.
	for round := 0; len(left) > 0; round++ {
		if round == 50 {
			names := make([]string, 0, len(left))
			for _, o := range left {
				names = append(names, o.String())
			}
			sort.Strings(names)
			return fmt.Errorf("clear the shared API server: still there after %d rounds: %s", round, strings.Join(names, ", "))
		}
		if round > 0 {
			time.Sleep(100 * time.Millisecond)
		}
		var still []object
		for _, o := range left {
			r := dyn.Resource(o.gvr).Namespace(o.namespace)
			if round > 0 {
				cur, err := r.Get(ctx, o.name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) || (err == nil && cur.GetUID() != o.uid) {
					continue
				}
				if err != nil {
					return fmt.Errorf("clear the shared API server: get %s: %w", o, err)
				}
				o.finalizers = len(cur.GetFinalizers()) > 0
			}
			still = append(still, o)
			if o.finalizers {
				// Nothing here runs the controllers that would remove
				// them (a test's own finalizer, an owner's foreground
				// deletion).
				_, _ = r.Patch(ctx, o.name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			}
			err := r.Delete(ctx, o.name, metav1.DeleteOptions{GracePeriodSeconds: &now, PropagationPolicy: &background})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("clear the shared API server: delete %s: %w", o, err)
			}
		}
		left = still
	}
	return a.clearCRDs(ctx, keepCRDs)
}

// clearCRDs deletes the CRDs not in keep (by name) and waits until the
// server has removed them and their objects.
func (a *APIServer) clearCRDs(ctx context.Context, keep map[string]bool) error {
	client, err := apiextensionsclient.NewForConfig(a.Config)
	if err != nil {
		return err
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	var gone []string
	list, err := crds.List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list CRDs: %w", err)
	}
	for _, crd := range list.Items {
		if keep[crd.Name] || a.own[crd.UID] {
			continue
		}
		if err := crds.Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete CRD %s: %w", crd.Name, err)
		}
		gone = append(gone, crd.Name)
	}
	for _, name := range gone {
		if err := waitFor(time.Minute, "CRD "+name+" removed", func() bool {
			_, err := crds.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}); err != nil {
			return err
		}
	}
	return nil
}
