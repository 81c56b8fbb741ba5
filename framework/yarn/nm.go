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

// Ranges of the NM's request fields. A value outside them is not a
// request any node can hold, and decoding treats it as unknown (0).
//
//   - MaxVCores (2^20) is far above any node's vcores, also with
//     yarn.nodemanager.resource.pcores-vcores-multiplier; in milli-CPU it is
//     about 10^9, and over MaxNMContainers containers about 7*10^13.
//   - MaxMemoryMB (2^26 MiB = 64 TiB) is above the memory of the largest
//     single machines (48 TB); in bytes it is 2^46, so one container's
//     bytes (MB<<20) and the sum over MaxNMContainers containers (2^62) fit
//     in an int64.
const (
	MaxVCores   = 1 << 20
	MaxMemoryMB = 1 << 26
)

// ExitCodeInvalid is YARN's ContainerExitStatus.INVALID: no exit code (the
// NM's value for a container that has not exited). Decoding also uses it
// for an exit code that is not an int32.
const ExitCodeInvalid = -1000

// NMContainer is one container as reported by the NodeManager's
// GET /ws/v1/node/containers. Containers from DecodeContainers always have
// a valid ID and requests in [0, MaxVCores] and [0, MaxMemoryMB]; 0 means
// not reported (or reported invalid).
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
