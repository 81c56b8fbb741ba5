package yarninterference

import "time"

// Decision is one step of the controller as the debug endpoint shows it:
// who decided, from what, and the threshold that came out.
type Decision struct {
	At time.Time `json:"at"`
	// Signal decided the step (slo, cpu-wait, static) with Action.
	Signal string `json:"signal"`
	Action Action `json:"action"`
	// Why the threshold is the NodeSLO's (Action release).
	Why string `json:"why,omitempty"`
	// OffsetPoints is the threshold's offset from the NodeSLO's.
	OffsetPoints            float64 `json:"offsetPoints"`
	ThresholdPercent        int64   `json:"thresholdPercent"`
	NodeSLOThresholdPercent int64   `json:"nodeSLOThresholdPercent"`
	// BudgetPercent is the BE budget in force (percent of the node; -1:
	// unlimited or unknown).
	BudgetPercent float64 `json:"budgetPercent"`
	// The LS CPU wait and its target (YARNInterferenceControl).
	CPUWaitSeconds       float64 `json:"cpuWaitSeconds,omitempty"`
	CPUWaitTargetSeconds float64 `json:"cpuWaitTargetSeconds,omitempty"`
	// The declared SLOs (YARNLSSLOControl): how many pods declare, how
	// many are unknown and quiet; the worst known pod, its quantile's
	// latency, target and slack; the LS load (-1: unknown).
	SLOPods        int      `json:"sloPods,omitempty"`
	SLOUnknown     int      `json:"sloUnknown,omitempty"`
	SLOQuiet       int      `json:"sloQuiet,omitempty"`
	Pod            string   `json:"pod,omitempty"`
	Quantile       float64  `json:"quantile,omitempty"`
	LatencySeconds float64  `json:"latencySeconds,omitempty"`
	TargetSeconds  float64  `json:"targetSeconds,omitempty"`
	Slack          *float64 `json:"slack,omitempty"`
	LSLoad         float64  `json:"lsLoad"`
	// UnmetAtFloorSeconds is how long the declared SLO has been violated
	// with the budget at the floor, once that lasted the pod's window.
	UnmetAtFloorSeconds float64 `json:"unmetAtFloorSeconds,omitempty"`
	// Proposals are every signal's proposal, the winner among them.
	Proposals []Proposal `json:"proposals,omitempty"`
}

// Last is the last step's decision (zero before the first step that got
// past the NodeSLO's checks).
func (c *Controller) Last() Decision {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}
