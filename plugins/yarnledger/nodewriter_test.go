package yarnledger

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

const otherEntry = `{"name":"spark-operator","priority":"koord-batch","resources":{"kubernetes.io/batch-cpu":"2k"}}`

func testNode(annotations map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "1", Annotations: annotations}}
}

func TestNodeWriterRetriesOnConflict(t *testing.T) {
	client := fake.NewClientset(testNode(map[string]string{"keep": "me"}))
	var patches atomic.Int32
	client.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if patches.Add(1) > 1 {
			return false, nil, nil
		}
		// A concurrent writer adds its entry between our read and patch.
		n, err := client.Tracker().Get(schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, "", "n1")
		require.NoError(t, err)
		node := n.(*corev1.Node).DeepCopy()
		node.Annotations[AnnotationKey] = `{"allocations":[` + otherEntry + `]}`
		node.ResourceVersion = "2"
		require.NoError(t, client.Tracker().Update(schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, node, ""))
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "n1", nil)
	})
	w := &NodeWriter{Client: client, NodeName: "n1"}
	patched, err := w.Write(context.Background(), Batch{MilliCPU: 1000, MemoryBytes: 1 << 30})
	require.NoError(t, err)
	assert.True(t, patched)
	assert.EqualValues(t, 2, patches.Load())
	node, err := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "me", node.Annotations["keep"])
	assert.Contains(t, node.Annotations[AnnotationKey], `"spark-operator"`, "the concurrent writer's entry survives")
	got, ok, err := Entry(node.Annotations[AnnotationKey])
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, Batch{MilliCPU: 1000, MemoryBytes: 1 << 30}, got)

	// The patch sent carries the resourceVersion it was based on and only our annotations.
	var last k8stesting.PatchAction
	for _, a := range client.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok {
			last = p
		}
	}
	require.NotNil(t, last)
	assert.JSONEq(t, `{"metadata":{"resourceVersion":"2","annotations":{"`+AnnotationKey+`":`+quote(node.Annotations[AnnotationKey])+
		`,"`+AnnotationWritten+`":`+quote(`{"milliCPU":1000,"memoryBytes":1073741824}`)+`}}}`, string(last.GetPatch()))
	assert.True(t, OwnedByUs(node))

	// Unchanged: no patch.
	before := patches.Load()
	patched, err = w.Write(context.Background(), Batch{MilliCPU: 1000, MemoryBytes: 1 << 30})
	require.NoError(t, err)
	assert.False(t, patched)
	assert.Equal(t, before, patches.Load())
}

func TestNodeWriterLeavesMalformedAlone(t *testing.T) {
	client := fake.NewClientset(testNode(map[string]string{AnnotationKey: "{not json"}))
	w := &NodeWriter{Client: client, NodeName: "n1"}
	_, err := w.Write(context.Background(), Batch{MilliCPU: 1})
	require.ErrorIs(t, err, ErrMalformed)
	node, err := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "{not json", node.Annotations[AnnotationKey])
	for _, a := range client.Actions() {
		assert.NotEqual(t, "patch", a.GetVerb())
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestLastWrittenByUs(t *testing.T) {
	fields := func(key string) *metav1.FieldsV1 {
		return &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{"f:` + key + `":{}}}}`)}
	}
	cases := []struct {
		name    string
		managed []metav1.ManagedFieldsEntry
		want    bool
	}{
		{"none", nil, false},
		{"ours", []metav1.ManagedFieldsEntry{{Manager: FieldManager, FieldsV1: fields(AnnotationKey)}}, true},
		{"ours on another annotation only", []metav1.ManagedFieldsEntry{{Manager: FieldManager, FieldsV1: fields("example.com/x")},
			{Manager: "koord-yarn-operator", FieldsV1: fields(AnnotationKey)}}, false},
		{"another writer's", []metav1.ManagedFieldsEntry{{Manager: "kubectl-edit", FieldsV1: fields(AnnotationKey)}}, false},
		{"garbage fields", []metav1.ManagedFieldsEntry{{Manager: FieldManager, FieldsV1: &metav1.FieldsV1{Raw: []byte(`[`)}}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := testNode(nil)
			n.ManagedFields = tc.managed
			assert.Equal(t, tc.want, LastWrittenByUs(n))
		})
	}
}

// TestOwnedByUs: the written record decides; managed fields only for an
// entry written without one. A Node whose managed fields the API server
// folded ("ancient-changes", more than ten update managers) still proves
// ownership by the record: the managed-fields check alone missed it.
func TestOwnedByUs(t *testing.T) {
	const ours = `{"name":"hadoop-yarn","priority":"koord-batch","resources":{"kubernetes.io/batch-cpu":"3k","kubernetes.io/batch-memory":"1Gi"}}`
	value := `{"allocations":[` + otherEntry + `,` + ours + `]}`
	rec := `{"milliCPU":3000,"memoryBytes":1073741824}`
	folded := []metav1.ManagedFieldsEntry{{Manager: "ancient-changes", Operation: metav1.ManagedFieldsOperationUpdate,
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{"f:` + AnnotationKey + `":{},"f:` + AnnotationWritten + `":{}}}}`)}}}
	for _, tc := range []struct {
		name    string
		ann     map[string]string
		managed []metav1.ManagedFieldsEntry
		want    bool
	}{
		{"record matches, managed fields folded", map[string]string{AnnotationKey: value, AnnotationWritten: rec}, folded, true},
		{"record matches", map[string]string{AnnotationKey: value, AnnotationWritten: rec}, nil, true},
		{"another writer changed the entry", map[string]string{AnnotationKey: value, AnnotationWritten: `{"milliCPU":2000,"memoryBytes":1073741824}`}, nil, false},
		{"record malformed", map[string]string{AnnotationKey: value, AnnotationWritten: `{`}, nil, false},
		{"no entry", map[string]string{AnnotationKey: `{"allocations":[` + otherEntry + `]}`, AnnotationWritten: rec}, nil, false},
		{"no record, managed fields ours (older version)", map[string]string{AnnotationKey: value},
			[]metav1.ManagedFieldsEntry{{Manager: FieldManager, FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{"f:` + AnnotationKey + `":{}}}}`)}}}, true},
		{"no record, folded", map[string]string{AnnotationKey: value}, folded, false},
	} {
		n := testNode(tc.ann)
		n.ManagedFields = tc.managed
		assert.Equal(t, tc.want, OwnedByUs(n), tc.name)
	}
}

func TestRemoveOurs(t *testing.T) {
	const ours = `{"name":"hadoop-yarn","priority":"koord-batch","resources":{"kubernetes.io/batch-cpu":"3k"}}`
	value := `{"allocations":[` + otherEntry + `,` + ours + `]}`
	for _, tc := range []struct {
		name        string
		manager     string
		wantRemoved bool
	}{
		{"written last by koordlet-yarn", FieldManager, true},
		{"written last by someone else", "koord-yarn-operator", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := testNode(map[string]string{AnnotationKey: value, "keep": "me"})
			n.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: tc.manager,
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{"f:` + AnnotationKey + `":{}}}}`)}}}
			client := fake.NewClientset(n)
			removed, kept, err := (&NodeWriter{Client: client, NodeName: "n1"}).RemoveOurs(context.Background())
			require.NoError(t, err)
			assert.Equal(t, tc.wantRemoved, removed)
			assert.Equal(t, !tc.wantRemoved, kept != "")
			got, err := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, "me", got.Annotations["keep"])
			if tc.wantRemoved {
				assert.Equal(t, `{"allocations":[`+otherEntry+`]}`, got.Annotations[AnnotationKey])
			} else {
				assert.Equal(t, value, got.Annotations[AnnotationKey])
			}
		})
	}
}
