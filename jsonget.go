package koordletyarn

import (
	"encoding/json"
	"net/http"

	"k8s.io/klog/v2"
)

// jsonGET is the handler of a read-only debug endpoint at path: GET and
// HEAD answer body()'s value as indented JSON; any other method is 405 with
// "Allow: GET, HEAD". body is called once per request.
func jsonGET[T any](path string, body func() T) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		resp := body()
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(resp); err != nil {
			klog.V(4).Infof("yarn: write %s response: %v", path, err)
		}
	}
}
