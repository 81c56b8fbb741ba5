package koordletyarn

import (
	"encoding/json"
	"net/http"

	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/kill"
)

// EvictionsPath is the debug endpoint of the eviction audit.
const EvictionsPath = "/yarn/evictions"

// EvictionsResponse is the body of GET /yarn/evictions.
type EvictionsResponse struct {
	// File is the audit file (--yarn-evict-audit-file; "" when none).
	File string `json:"file,omitempty"`
	// Total counts the records kept since koordlet started; Records are
	// the last ones kept in memory, oldest first: each container's
	// eviction (kind eviction) and, with YARNMemoryRelief, each memory
	// pressure episode's decision (kind relief: which rung relieved it).
	Total   int                `json:"total"`
	Records []kill.AuditRecord `json:"records"`
}

func (fw *Framework) evictionsHandler() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		records, total := fw.audit.Recent()
		resp := EvictionsResponse{File: fw.audit.Path(), Total: total, Records: records}
		if resp.Records == nil {
			resp.Records = []kill.AuditRecord{}
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(resp); err != nil {
			klog.V(4).Infof("yarn: write %s response: %v", EvictionsPath, err)
		}
	}
}
