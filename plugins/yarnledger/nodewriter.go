package yarnledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
		if !changed {
			return nil
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": node.ResourceVersion,
			"annotations":     map[string]string{AnnotationKey: value},
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
