package yarnledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// ErrMalformed marks a thirdPartyAllocations value the writer refuses to
// edit (it is left as it is, so nothing is lost).
var ErrMalformed = errors.New("malformed thirdPartyAllocations")

// FieldManager names koordlet-yarn's writes in the Node's managed fields.
const FieldManager = "koordlet-yarn-ledger"

// AnnotationWritten records, next to thirdPartyAllocations, the hadoop-yarn
// entry koordlet-yarn last wrote ({"milliCPU":…,"memoryBytes":…}). The entry
// is koordlet-yarn's while it still holds that value (OwnedByUs): this
// proof survives what managed fields do not (the API server folds more than
// ten update managers into one "ancient-changes" entry).
const AnnotationWritten = "yarn.koordlet-yarn.io/ledger-written"

// writtenRecord encodes alloc for AnnotationWritten.
func writtenRecord(alloc Batch) string {
	return fmt.Sprintf(`{"milliCPU":%d,"memoryBytes":%d}`, alloc.MilliCPU, alloc.MemoryBytes)
}

// OwnedByUs reports whether the Node's hadoop-yarn entry is koordlet-yarn's:
// it holds the value AnnotationWritten records, or, for an entry written
// by a version without that record, the managed fields name this ledger
// (LastWrittenByUs).
func OwnedByUs(node *corev1.Node) bool {
	if node == nil {
		return false
	}
	if rec, ok := node.Annotations[AnnotationWritten]; ok {
		var w struct {
			MilliCPU    *int64 `json:"milliCPU"`
			MemoryBytes *int64 `json:"memoryBytes"`
		}
		if err := json.Unmarshal([]byte(rec), &w); err != nil || w.MilliCPU == nil || w.MemoryBytes == nil {
			return false
		}
		cur, present, err := Entry(node.Annotations[AnnotationKey])
		return err == nil && present && cur == Batch{MilliCPU: *w.MilliCPU, MemoryBytes: *w.MemoryBytes}
	}
	return LastWrittenByUs(node)
}

// NodeWriter keeps the hadoop-yarn entry of one Node's
// thirdPartyAllocations annotation.
type NodeWriter struct {
	Client   kubernetes.Interface
	NodeName string
}

// Write sets the entry to alloc. It reads the Node, edits only the entry
// (SetEntry) and sends a JSON merge patch of that one annotation carrying
// the Node's resourceVersion, so the API server refuses it (409) if anyone
// changed the Node since the read; it then reads again and retries
// (client-go's RetryOnConflict). patched is false when the entry already
// held alloc.
func (w *NodeWriter) Write(ctx context.Context, alloc Batch) (patched bool, err error) {
	nodes := w.Client.CoreV1().Nodes()
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		patched = false
		node, err := nodes.Get(ctx, w.NodeName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get node %s: %w", w.NodeName, err)
		}
		current, present := node.Annotations[AnnotationKey]
		value, changed, err := SetEntry(current, present, alloc)
		if err != nil {
			return fmt.Errorf("node %s: %w: %w", w.NodeName, ErrMalformed, err)
		}
		record := writtenRecord(alloc)
		if !changed && node.Annotations[AnnotationWritten] == record {
			return nil
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": node.ResourceVersion,
			"annotations":     map[string]string{AnnotationKey: value, AnnotationWritten: record},
		}})
		if err != nil {
			return fmt.Errorf("encode node patch: %w", err)
		}
		if _, err := nodes.Patch(ctx, w.NodeName, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
			// Wrapped with %w: RetryOnConflict still sees the conflict.
			return fmt.Errorf("patch node %s annotation %s: %w", w.NodeName, AnnotationKey, err)
		}
		patched = true
		return nil
	})
	return patched, err
}

// WriteFrom is Write starting from cached, the Node as an informer shows
// it: the patch carries the cached resourceVersion, so no read precedes it;
// when the cache was behind, the API server refuses it (409) and Write
// reads the Node and retries. A nil cached is Write.
func (w *NodeWriter) WriteFrom(ctx context.Context, cached *corev1.Node, alloc Batch) (patched bool, err error) {
	if cached == nil {
		return w.Write(ctx, alloc)
	}
	current, present := cached.Annotations[AnnotationKey]
	value, changed, err := SetEntry(current, present, alloc)
	if err != nil {
		return false, fmt.Errorf("node %s: %w: %w", w.NodeName, ErrMalformed, err)
	}
	record := writtenRecord(alloc)
	if !changed && cached.Annotations[AnnotationWritten] == record {
		return false, nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": cached.ResourceVersion,
		"annotations":     map[string]string{AnnotationKey: value, AnnotationWritten: record},
	}})
	if err != nil {
		return false, fmt.Errorf("encode node patch: %w", err)
	}
	_, err = w.Client.CoreV1().Nodes().Patch(ctx, w.NodeName, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsConflict(err):
		return w.Write(ctx, alloc) // the cache was behind: read, then patch
	}
	return false, fmt.Errorf("patch node %s annotation %s: %w", w.NodeName, AnnotationKey, err)
}

// LastWrittenByUs reports whether the Node's managed fields name this
// ledger (FieldManager) as the owner of the thirdPartyAllocations
// annotation: the API server moves a field's ownership to whoever writes
// it next, so ours means that no other writer (koord-yarn-operator, a
// person) has set the annotation since koordlet-yarn did.
func LastWrittenByUs(node *corev1.Node) bool {
	for _, mf := range node.ManagedFields {
		if mf.Manager != FieldManager || mf.FieldsV1 == nil {
			continue
		}
		var fields map[string]map[string]map[string]json.RawMessage
		if err := json.Unmarshal(mf.FieldsV1.Raw, &fields); err != nil {
			continue
		}
		if _, ok := fields["f:metadata"]["f:annotations"]["f:"+AnnotationKey]; ok {
			return true
		}
	}
	return false
}

// RemoveOurs removes the hadoop-yarn entry from the Node's
// thirdPartyAllocations (and AnnotationWritten) when the entry is
// koordlet-yarn's (OwnedByUs), keeping every other entry; the annotation goes when
// nothing else is in it. Like Write it patches with the Node's
// resourceVersion and retries on conflict. removed is false when there was
// nothing of ours to remove; kept says why when an entry is there but is
// not ours to remove.
func (w *NodeWriter) RemoveOurs(ctx context.Context) (removed bool, kept string, err error) {
	nodes := w.Client.CoreV1().Nodes()
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		removed, kept = false, ""
		node, err := nodes.Get(ctx, w.NodeName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get node %s: %w", w.NodeName, err)
		}
		current, present := node.Annotations[AnnotationKey]
		if !present {
			return nil
		}
		value, drop, changed, err := RemoveEntry(current)
		if err != nil {
			return fmt.Errorf("node %s: %w: %w", w.NodeName, ErrMalformed, err)
		}
		if !changed {
			return nil
		}
		if !OwnedByUs(node) {
			kept = "another writer set the entry after koordlet-yarn (or koordlet-yarn never did)"
			return nil
		}
		var annotation any = value
		if drop {
			annotation = nil // JSON merge patch: remove the annotation
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": node.ResourceVersion,
			"annotations":     map[string]any{AnnotationKey: annotation, AnnotationWritten: nil},
		}})
		if err != nil {
			return fmt.Errorf("encode node patch: %w", err)
		}
		if _, err := nodes.Patch(ctx, w.NodeName, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("patch node %s annotation %s: %w", w.NodeName, AnnotationKey, err)
		}
		removed = true
		return nil
	})
	return removed, kept, err
}
