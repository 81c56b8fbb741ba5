package koordletyarn

import (
	"net/http"

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
	return jsonGET(EvictionsPath, func() EvictionsResponse {
		records, total := fw.kill.audit.Recent()
		resp := EvictionsResponse{File: fw.kill.audit.Path(), Total: total, Records: records}
		if resp.Records == nil {
			resp.Records = []kill.AuditRecord{}
		}
		return resp
	})
}
