package koordletyarn

import (
	"net/http"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/yarnusage"
	"github.com/koordlet-yarn/koordlet-yarn/framework/policy"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/hooks/yarnadopt"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarninformer"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarninterference"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnpolicy"
)

// ContainersPath is the debug endpoint on koordlet's HTTP server that lists
// the container store.
const ContainersPath = "/yarn/containers"

// ContainersResponse is the body of GET /yarn/containers.
type ContainersResponse struct {
	Informer yarninformer.Status `json:"informer"`
	// Discovery is the event source in use: ebpf, inotify or polling.
	Discovery string `json:"discovery,omitempty"`
	// Accounting says whether koordlet counts YARN usage as BE (see docs/metrics.md).
	Accounting *yarnusage.Accounting `json:"accounting,omitempty"`
	// MemoryAccounting says how the containers' memory was measured at the
	// collector's last cycle and, for containers without a memory cgroup
	// (CPU-only YARN), which memory cgroup (the NodeManager pod's) their
	// memory is charged to; each container says its own in
	// "memoryAccounting" (cgroup, processes or none).
	MemoryAccounting *yarnusage.MemoryAccountingStatus `json:"memoryAccounting,omitempty"`
	// Policy is the YARN QoS policy in use (YARNQoSPolicy with a file).
	Policy *policy.Status `json:"policy,omitempty"`
	// QoS is each container's queue (from the ResourceManager), policy
	// rule and tier, and the priority it ranks with for eviction, by id.
	QoS        map[string]yarnpolicy.ContainerQoS `json:"qos,omitempty"`
	Containers []*store.Container                 `json:"containers"`
	// ContainerCgroups is, with YARNContainerCgroups, the node's layout
	// and, for each container YARN gave no cgroup, that koordlet made its
	// cgroup, when, and how much memory stayed charged to the NodeManager
	// pod.
	ContainerCgroups *yarnadopt.Status `json:"containerCgroups,omitempty"`
	// Interference is the interference controller's last step
	// (YARNInterferenceControl, YARNLSSLOControl): the signal that
	// decided it, what each signal proposed, the slack, the offset and the
	// threshold BE suppress computes with.
	Interference *yarninterference.Decision `json:"interference,omitempty"`
}

func (fw *Framework) containersHandler() http.HandlerFunc {
	return jsonGET(ContainersPath, func() ContainersResponse {
		resp := ContainersResponse{Informer: fw.Informer.Status(), Containers: fw.Store.Snapshot()}
		resp.Discovery = string(fw.Watch.Active())
		if acc, ok := fw.Usage.LastAccounting(); ok {
			resp.Accounting = &acc
		}
		if mem, ok := fw.Usage.LastMemoryAccounting(); ok {
			resp.MemoryAccounting = &mem
		}
		if h := fw.policy.Holder(); h != nil {
			st := h.Status()
			resp.Policy = &st
		}
		if fw.adopt.Enabled() {
			st := fw.adopt.Status()
			resp.ContainerCgroups = &st
		}
		if fw.interference != nil && fw.interference.Enabled() {
			if d := fw.interference.Last(); !d.At.IsZero() {
				resp.Interference = &d
			}
		}
		resp.QoS = yarnpolicy.Describe(fw.policy, resp.Containers, fw.Informer.NodeManagerPriority())
		return resp
	})
}
