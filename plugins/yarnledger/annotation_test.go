package yarnledger

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	apiext "github.com/koordinator-sh/koordinator/apis/extension"
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
)

func TestSetEntry(t *testing.T) {
	alloc := Batch{MilliCPU: 3000, MemoryBytes: 6 << 30}
	const ours = `{"name":"hadoop-yarn","priority":"koord-batch","resources":{"kubernetes.io/batch-cpu":"3k","kubernetes.io/batch-memory":"6Gi"}}`
	const other = `{"name":"flink-session","priority":"koord-batch","resources":{"kubernetes.io/batch-cpu":"1k"},"extra":{"kept":true}}`
	cases := []struct {
		name    string
		current string
		present bool
		want    string
		changed bool
		wantErr bool
	}{
		{name: "absent", want: `{"allocations":[` + ours + `]}`, changed: true},
		{name: "empty value", current: " ", present: true, want: `{"allocations":[` + ours + `]}`, changed: true},
		{name: "other entries kept byte for byte", current: `{"allocations":[` + other + `],"note":"x"}`, present: true,
			want: `{"allocations":[` + other + `,` + ours + `],"note":"x"}`, changed: true},
		{name: "ours replaced in place", current: `{"allocations":[{"name":"hadoop-yarn","priority":"koord-batch","resources":{"kubernetes.io/batch-cpu":"1"}},` + other + `]}`, present: true,
			want: `{"allocations":[` + ours + `,` + other + `]}`, changed: true},
		{name: "unchanged value, other spelling", current: `{"allocations":[` + other + `,{"name":"hadoop-yarn","priority":"koord-batch","resources":{"kubernetes.io/batch-cpu":"3000","kubernetes.io/batch-memory":"6442450944"}}]}`, present: true, changed: false},
		{name: "priority differs", current: `{"allocations":[{"name":"hadoop-yarn","priority":"koord-mid","resources":{"kubernetes.io/batch-cpu":"3k","kubernetes.io/batch-memory":"6Gi"}}]}`, present: true,
			want: `{"allocations":[` + ours + `]}`, changed: true},
		{name: "null allocations", current: `{"allocations":null}`, present: true, want: `{"allocations":[` + ours + `]}`, changed: true},
		{name: "not JSON", current: `{bad`, present: true, wantErr: true},
		{name: "array", current: `[1]`, present: true, wantErr: true},
		{name: "allocations not an array", current: `{"allocations":{"name":"x"}}`, present: true, wantErr: true},
		{name: "entry not an object", current: `{"allocations":[1]}`, present: true, wantErr: true},
		{name: "two of ours", current: `{"allocations":[` + ours + `,` + ours + `]}`, present: true, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, changed, err := SetEntry(tc.current, tc.present, alloc)
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.changed, changed)
			if !tc.changed {
				assert.Equal(t, tc.current, got)
				return
			}
			assert.JSONEq(t, tc.want, got)
			// koord-manager's reader sees our entry, and only the koord-batch ones count.
			res, err := slov1alpha1.GetThirdPartyAllocatedResByPriority(map[string]string{AnnotationKey: got}, apiext.PriorityBatch)
			require.NoError(t, err)
			cpu := res[apiext.BatchCPU]
			mem := res[apiext.BatchMemory]
			assert.GreaterOrEqual(t, cpu.Value(), int64(3000))
			assert.Equal(t, int64(6<<30), mem.Value())
			e, ok, err := Entry(got)
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, alloc, e)
			var generic map[string]any
			require.NoError(t, json.Unmarshal([]byte(got), &generic))
		})
	}
}

func TestRemoveEntry(t *testing.T) {
	const ours = `{"name":"hadoop-yarn","priority":"koord-batch","resources":{"kubernetes.io/batch-cpu":"3k"}}`
	const other = `{"name":"flink-session","priority":"koord-batch","resources":{"kubernetes.io/batch-cpu":"1k"},"extra":{"kept":true}}`
	cases := []struct {
		name          string
		current, want string
		drop, changed bool
		wantErr       bool
	}{
		{name: "empty", current: ""},
		{name: "no entry of ours", current: `{"allocations":[` + other + `]}`, want: `{"allocations":[` + other + `]}`},
		{name: "ours alone: the annotation goes", current: `{"allocations":[` + ours + `]}`, drop: true, changed: true},
		{name: "others kept byte for byte", current: `{"allocations":[` + other + `,` + ours + `],"note":"x"}`,
			want: `{"allocations":[` + other + `],"note":"x"}`, changed: true},
		{name: "ours alone beside another field: kept with no allocations", current: `{"allocations":[` + ours + `],"note":"x"}`,
			want: `{"allocations":[],"note":"x"}`, changed: true},
		{name: "not JSON", current: `hadoop-yarn`, wantErr: true},
		{name: "allocations not an array", current: `{"allocations":{}}`, wantErr: true},
		{name: "an allocation not an object", current: `{"allocations":[1]}`, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, drop, changed, err := RemoveEntry(tc.current)
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.drop, drop)
			assert.Equal(t, tc.changed, changed)
			if tc.changed && !tc.drop {
				assert.Equal(t, tc.want, got)
			}
		})
	}
}
