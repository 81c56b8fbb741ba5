package yarnledger

import (
	"bytes"
	"encoding/json"
	"fmt"

	apiext "github.com/koordinator-sh/koordinator/apis/extension"
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
)

// Entry names the ledger's entry in thirdPartyAllocations.
const (
	EntryName     = "hadoop-yarn"
	EntryPriority = apiext.PriorityBatch
	// AnnotationKey is node.koordinator.sh/thirdPartyAllocations.
	AnnotationKey = slov1alpha1.NodeThirdPartyAllocationsAnnotationKey
	// AnnotationOrigin is node.koordinator.sh/originExtendedAllocatable.
	AnnotationOrigin = slov1alpha1.NodeOriginExtendedAllocatableAnnotationKey
)

// SetEntry returns the thirdPartyAllocations annotation value with the
// hadoop-yarn entry set to alloc, and whether that differs from current
// (present says whether the annotation exists). Every other entry and every
// other field is kept byte for byte (unknown fields included); entries are
// told apart by name only. A current value that is not a JSON object with an
// "allocations" array (or no allocations) is an error: it is never
// overwritten, so nothing another writer put there is lost.
func SetEntry(current string, present bool, alloc Batch) (value string, changed bool, err error) {
	doc := map[string]json.RawMessage{}
	var entries []json.RawMessage
	if present && len(bytes.TrimSpace([]byte(current))) > 0 {
		if err := json.Unmarshal([]byte(current), &doc); err != nil {
			return "", false, fmt.Errorf("annotation %s is not a JSON object, left as it is: %w", AnnotationKey, err)
		}
		if raw, ok := doc["allocations"]; ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			if err := json.Unmarshal(raw, &entries); err != nil {
				return "", false, fmt.Errorf("annotation %s: allocations is not an array, left as it is: %w", AnnotationKey, err)
			}
		}
		if doc == nil {
			doc = map[string]json.RawMessage{}
		}
	}
	ours, err := json.Marshal(slov1alpha1.ThirdPartyAllocation{Name: EntryName, Priority: EntryPriority, Resources: alloc.ResourceList()})
	if err != nil {
		return "", false, fmt.Errorf("encode the %s entry: %w", EntryName, err)
	}
	at := -1
	for i, raw := range entries {
		var head struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return "", false, fmt.Errorf("annotation %s: allocation %d is not an object, left as it is: %w", AnnotationKey, i, err)
		}
		if head.Name != EntryName {
			continue
		}
		if at >= 0 {
			return "", false, fmt.Errorf("annotation %s holds two %s entries, left as it is", AnnotationKey, EntryName)
		}
		at = i
	}
	switch {
	case at < 0:
		entries = append(entries, ours)
	case sameEntry(entries[at], alloc):
		return current, false, nil
	default:
		entries[at] = ours
	}
	list, err := json.Marshal(entries)
	if err != nil {
		return "", false, fmt.Errorf("encode allocations: %w", err)
	}
	doc["allocations"] = list
	out, err := json.Marshal(doc)
	if err != nil {
		return "", false, fmt.Errorf("encode annotation %s: %w", AnnotationKey, err)
	}
	return string(out), true, nil
}

// sameEntry reports whether raw is a hadoop-yarn koord-batch entry holding
// exactly alloc (whatever the quantities' spelling).
func sameEntry(raw json.RawMessage, alloc Batch) bool {
	var e slov1alpha1.ThirdPartyAllocation
	if err := json.Unmarshal(raw, &e); err != nil || e.Priority != EntryPriority || len(e.Resources) != 2 {
		return false
	}
	cpu, okCPU := e.Resources[apiext.BatchCPU]
	mem, okMem := e.Resources[apiext.BatchMemory]
	return okCPU && okMem && cpu.Value() == alloc.MilliCPU && mem.Value() == alloc.MemoryBytes
}

// Entry reads the hadoop-yarn entry of the annotation value; ok is false
// when there is none.
func Entry(current string) (Batch, bool, error) {
	if len(bytes.TrimSpace([]byte(current))) == 0 {
		return Batch{}, false, nil
	}
	a, err := slov1alpha1.GetThirdPartyAllocations(map[string]string{AnnotationKey: current})
	if err != nil {
		return Batch{}, false, fmt.Errorf("annotation %s: %w", AnnotationKey, err)
	}
	for _, e := range a.Allocations {
		if e.Name == EntryName {
			cpu, mem := e.Resources[apiext.BatchCPU], e.Resources[apiext.BatchMemory]
			return Batch{MilliCPU: cpu.Value(), MemoryBytes: mem.Value()}, true, nil
		}
	}
	return Batch{}, false, nil
}

// RemoveEntry returns the thirdPartyAllocations annotation value without
// the hadoop-yarn entry; drop is true when nothing else is left in it (no
// other entry, no other field), so the annotation itself can go. changed is
// false when there was no such entry. Every other entry and field is kept
// byte for byte; a malformed value is an error and is left as it is.
func RemoveEntry(current string) (value string, drop, changed bool, err error) {
	if len(bytes.TrimSpace([]byte(current))) == 0 {
		return current, false, false, nil
	}
	doc := map[string]json.RawMessage{}
	if err := json.Unmarshal([]byte(current), &doc); err != nil || doc == nil {
		return "", false, false, fmt.Errorf("annotation %s is not a JSON object, left as it is: %v", AnnotationKey, err)
	}
	var entries []json.RawMessage
	if raw, ok := doc["allocations"]; ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if err := json.Unmarshal(raw, &entries); err != nil {
			return "", false, false, fmt.Errorf("annotation %s: allocations is not an array, left as it is: %w", AnnotationKey, err)
		}
	}
	kept := make([]json.RawMessage, 0, len(entries))
	for i, raw := range entries {
		var head struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return "", false, false, fmt.Errorf("annotation %s: allocation %d is not an object, left as it is: %w", AnnotationKey, i, err)
		}
		if head.Name == EntryName {
			changed = true
			continue
		}
		kept = append(kept, raw)
	}
	if !changed {
		return current, false, false, nil
	}
	if len(kept) == 0 && len(doc) == 1 {
		return "", true, true, nil
	}
	list, err := json.Marshal(kept)
	if err != nil {
		return "", false, false, fmt.Errorf("encode allocations: %w", err)
	}
	doc["allocations"] = list
	out, err := json.Marshal(doc)
	if err != nil {
		return "", false, false, fmt.Errorf("encode annotation %s: %w", AnnotationKey, err)
	}
	return string(out), false, true, nil
}
