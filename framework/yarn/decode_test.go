package yarn

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// documented is the example of GET /ws/v1/node/containers from the Hadoop
// NodeManager REST API documentation (with executionType from Hadoop 3).
const documented = `{
   "containers" : {
      "container" : [
         {
            "nodeId" : "host.domain.com:8041",
            "totalMemoryNeededMB" : 2048,
            "totalVCoresNeeded" : 1,
            "state" : "RUNNING",
            "diagnostics" : "",
            "containerLogsLink" : "http://host.domain.com:8042/node/containerlogs/container_1326121700862_0006_01_000001/user1",
            "user" : "user1",
            "id" : "container_1326121700862_0006_01_000001",
            "exitCode" : -1000,
            "executionType" : "GUARANTEED",
            "containerLogFiles" : ["stdout", "stderr", "syslog"]
         },
         {
            "nodeId" : "host.domain.com:8041",
            "totalMemoryNeededMB" : 2048,
            "totalVCoresNeeded" : 2,
            "state" : "RUNNING",
            "diagnostics" : "",
            "containerLogsLink" : "http://host.domain.com:8042/node/containerlogs/container_1326121700862_0006_01_000003/user1",
            "user" : "user1",
            "id" : "container_1326121700862_0006_01_000003",
            "exitCode" : -1000,
            "executionType" : "OPPORTUNISTIC"
         }
      ]
   }
}`

func TestDecodeDocumented(t *testing.T) {
	got, err := DecodeContainers(strings.NewReader(documented))
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, NMContainer{
		ID:    ContainerID{ClusterTimestamp: 1326121700862, AppID: 6, AttemptID: 1, Sequence: 1},
		State: StateRunning, User: "user1", ExitCode: -1000,
		TotalMemoryNeededMB: 2048, TotalVCoresNeeded: 1, ExecutionType: ExecutionGuaranteed,
	}, got[0])
	assert.Equal(t, int64(2), got[1].TotalVCoresNeeded)
	assert.Equal(t, ExecutionOpportunistic, got[1].ExecutionType)
}

func TestDecodeShapes(t *testing.T) {
	one := `{"id":"container_e17_1700000000000_0042_01_000007","state":"NEW","user":"u","totalMemoryNeededMB":1024,"totalVCoresNeeded":1}`
	tests := []struct {
		name string
		body string
		want int
	}{
		{"containers null", `{"containers":null}`, 0},
		{"containers empty string", `{"containers":""}`, 0},
		{"containers empty object", `{"containers":{}}`, 0},
		{"containers empty object with space", `{"containers":{ }}`, 0},
		{"container null", `{"containers":{"container":null}}`, 0},
		{"container empty string", `{"containers":{"container":""}}`, 0},
		{"container empty list", `{"containers":{"container":[]}}`, 0},
		{"no containers key", `{}`, 0},
		{"single object", `{"containers":{"container":` + one + `}}`, 1},
		{"list of one", `{"containers":{"container":[` + one + `]}}`, 1},
		{"unknown fields", `{"extra":1,"containers":{"x":[1,2],"container":[{"id":"container_1700000000000_0042_01_000001","foo":{"bar":[]},"state":"RUNNING"}]}}`, 1},
		{"numbers as strings", `{"containers":{"container":{"id":"container_1700000000000_0042_01_000001","exitCode":"-1000","totalMemoryNeededMB":"2048","totalVCoresNeeded":"2"}}}`, 1},
		{"invalid id dropped", `{"containers":{"container":[` + one + `,{"id":"container_../../etc/passwd","state":"RUNNING"},{"id":"pod_1","state":"RUNNING"},{"state":"RUNNING"}]}}`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeContainers(strings.NewReader(tt.body))
			require.NoError(t, err)
			assert.Len(t, got, tt.want)
		})
	}
}

func TestDecodeNumbersAsStrings(t *testing.T) {
	got, err := DecodeContainers(strings.NewReader(`{"containers":{"container":{"id":"container_1700000000000_0042_01_000001","exitCode":"-1000","totalMemoryNeededMB":"2048","totalVCoresNeeded":"2"}}}`))
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, -1000, got[0].ExitCode)
	assert.Equal(t, int64(2048), got[0].TotalMemoryNeededMB)
	assert.Equal(t, int64(2), got[0].TotalVCoresNeeded)
}

func TestDecodeMalformed(t *testing.T) {
	for name, body := range map[string]string{
		"empty body":          ``,
		"html":                `<html><body>Error 500</body></html>`,
		"truncated":           `{"containers":{"container":[{"id":"container_1700000000000_0042_01_000001"`,
		"top-level list":      `[]`,
		"containers a number": `{"containers":5}`,
		"container a number":  `{"containers":{"container":5}}`,
		"bad number":          `{"containers":{"container":{"id":"container_1700000000000_0042_01_000001","totalVCoresNeeded":"many"}}}`,
		"remote exception":    `{"RemoteException":{"exception":"NotFoundException","message":"java.lang.Exception: not found","javaClassName":"org.apache.hadoop.yarn.webapp.NotFoundException"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeContainers(strings.NewReader(body))
			assert.Error(t, err)
		})
	}
}

func TestIsTerminalState(t *testing.T) {
	for _, s := range []string{StateDone, StateExitedWithFailure, StateExitedWithSuccess, StateLocalizationFailed, StateContainerCleanedupAfterKill} {
		assert.True(t, IsTerminalState(s), s)
	}
	for _, s := range []string{StateNew, StateLocalizing, StateLocalized, StateRunning, StateKilling, StateContainerResourcesCleaningUp} {
		assert.False(t, IsTerminalState(s), s)
	}
}
