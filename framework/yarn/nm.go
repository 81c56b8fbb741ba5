package yarn

// NodeManager container states, as rendered by the NM REST API.
const (
	StateNew                          = "NEW"
	StateLocalizing                   = "LOCALIZING"
	StateLocalizationFailed           = "LOCALIZATION_FAILED"
	StateLocalized                    = "LOCALIZED"
	StateRunning                      = "RUNNING"
	StateExitedWithSuccess            = "EXITED_WITH_SUCCESS"
	StateExitedWithFailure            = "EXITED_WITH_FAILURE"
	StateKilling                      = "KILLING"
	StateContainerCleanedupAfterKill  = "CONTAINER_CLEANEDUP_AFTER_KILL"
	StateContainerResourcesCleaningUp = "CONTAINER_RESOURCES_CLEANINGUP"
	StateDone                         = "DONE"
)

// Execution types of a YARN container.
const (
	ExecutionGuaranteed    = "GUARANTEED"
	ExecutionOpportunistic = "OPPORTUNISTIC"
)

// IsTerminalState reports whether a container in this NM state has finished
// and will never run a process again.
func IsTerminalState(state string) bool {
	switch state {
	case StateLocalizationFailed, StateExitedWithSuccess, StateExitedWithFailure,
		StateContainerCleanedupAfterKill, StateDone:
		return true
	}
	return false
}

// NMContainer is one container as reported by the NodeManager's
// GET /ws/v1/node/containers.
type NMContainer struct {
	ID                  ContainerID
	State               string
	User                string
	ExitCode            int
	Diagnostics         string
	TotalMemoryNeededMB int64
	TotalVCoresNeeded   int64
	ExecutionType       string
}
