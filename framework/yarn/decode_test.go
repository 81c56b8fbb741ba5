package yarn

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
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
		"a flood of fields":   `{` + strings.Repeat(`"x":1,`, maxStructureKeys) + `"containers":null}`,
		"data after":          `{"containers":null} {}`,
		"remote exception":    `{"RemoteException":{"exception":"NotFoundException","message":"java.lang.Exception: not found","javaClassName":"org.apache.hadoop.yarn.webapp.NotFoundException"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeContainers(strings.NewReader(body))
			assert.Error(t, err)
		})
	}
}

// TestDecodeInvalidNumbers: a number field that is not a finite number in
// range keeps the container with that field unknown (0 for requests, -1000
// for the exit code); other fields are kept.
func TestDecodeInvalidNumbers(t *testing.T) {
	const id = "container_1700000000000_0042_01_000001"
	tests := []struct {
		name   string
		fields string
		vcores int64
		memMB  int64
		exit   int
	}{
		{"valid", `"totalVCoresNeeded":2,"totalMemoryNeededMB":2048,"exitCode":143`, 2, 2048, 143},
		{"valid as strings", `"totalVCoresNeeded":"2","totalMemoryNeededMB":"2048","exitCode":"-1000"`, 2, 2048, -1000},
		{"absent", ``, 0, 0, 0},
		{"null and empty", `"totalVCoresNeeded":null,"totalMemoryNeededMB":"","exitCode":null`, 0, 0, 0},
		{"negative vcores", `"totalVCoresNeeded":-1,"totalMemoryNeededMB":2048`, 0, 2048, 0},
		{"negative memory as string", `"totalVCoresNeeded":2,"totalMemoryNeededMB":"-2048"`, 2, 0, 0},
		{"negative float", `"totalVCoresNeeded":-0.5,"totalMemoryNeededMB":-1e3`, 0, 0, 0},
		{"NaN as string", `"totalVCoresNeeded":"NaN","totalMemoryNeededMB":"nan","exitCode":"NaN"`, 0, 0, -1000},
		{"infinities as strings", `"totalVCoresNeeded":"Inf","totalMemoryNeededMB":"-Infinity","exitCode":"+Inf"`, 0, 0, -1000},
		{"1e30", `"totalVCoresNeeded":1e30,"totalMemoryNeededMB":"1e30","exitCode":1e30`, 0, 0, -1000},
		{"beyond float64", `"totalVCoresNeeded":1e400,"totalMemoryNeededMB":"-1e400"`, 0, 0, 0},
		{"beyond int64", `"totalVCoresNeeded":9223372036854775808,"totalMemoryNeededMB":"-9223372036854775809"`, 0, 0, 0},
		{"max int64", `"totalVCoresNeeded":9223372036854775807,"totalMemoryNeededMB":9223372036854775807,"exitCode":9223372036854775807`, 0, 0, -1000},
		{"overflow of milli-CPU and bytes", `"totalVCoresNeeded":9223372036854776,"totalMemoryNeededMB":8796093022208`, 0, 0, 0},
		{"at the caps", `"totalVCoresNeeded":1048576,"totalMemoryNeededMB":67108864`, 1 << 20, 1 << 26, 0},
		{"above the caps", `"totalVCoresNeeded":1048577,"totalMemoryNeededMB":67108865`, 0, 0, 0},
		{"fraction truncated", `"totalVCoresNeeded":2.9,"totalMemoryNeededMB":"1024.5"`, 2, 1024, 0},
		{"not numbers", `"totalVCoresNeeded":"many","totalMemoryNeededMB":true,"exitCode":{}`, 0, 0, -1000},
		{"lists and objects", `"totalVCoresNeeded":[1],"totalMemoryNeededMB":{"v":1}`, 0, 0, 0},
		{"int32 exit code bounds", `"exitCode":-2147483648`, 0, 0, -2147483648},
		{"exit code beyond int32", `"exitCode":2147483648`, 0, 0, -1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"containers":{"container":[{"id":"` + id + `","state":"RUNNING","user":"u"`
			if tt.fields != "" {
				body += "," + tt.fields
			}
			body += `}]}}`
			got, err := DecodeContainers(strings.NewReader(body))
			require.NoError(t, err)
			require.Len(t, got, 1, "the container keeps its identity")
			assert.Equal(t, id, got[0].ID.String())
			assert.Equal(t, StateRunning, got[0].State)
			assert.Equal(t, "u", got[0].User)
			assert.Equal(t, tt.vcores, got[0].TotalVCoresNeeded, "vcores")
			assert.Equal(t, tt.memMB, got[0].TotalMemoryNeededMB, "memory")
			assert.Equal(t, tt.exit, got[0].ExitCode, "exit code")
		})
	}
}

// syncBuffer is a bytes.Buffer safe for klog's writer.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// captureKlog sends klog's output to the returned buffer until the test ends.
func captureKlog(t *testing.T) *syncBuffer {
	t.Helper()
	buf := &syncBuffer{}
	klog.LogToStderr(false)
	klog.SetOutput(buf)
	t.Cleanup(func() {
		klog.SetOutput(os.Stderr)
		klog.LogToStderr(true)
	})
	return buf
}

// logLines returns the lines klog wrote; a warning is written to the
// WARNING and the INFO output, both the buffer here, so each line comes
// twice in a row and is counted once.
func logLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" && (len(out) == 0 || out[len(out)-1] != l) {
			out = append(out, l)
		}
	}
	return out
}

func TestDecodeInvalidNumbersLogOncePerContainer(t *testing.T) {
	logs := captureKlog(t)
	body := `{"containers":{"container":[
		{"id":"container_1700000000000_0042_01_000001","totalVCoresNeeded":-1,"totalMemoryNeededMB":"NaN"},
		{"id":"container_1700000000000_0042_01_000002","totalVCoresNeeded":1,"totalMemoryNeededMB":1024},
		{"id":"container_1700000000000_0042_01_000003","exitCode":1e30}]}}`
	got, err := DecodeContainers(strings.NewReader(body))
	require.NoError(t, err)
	require.Len(t, got, 3)
	lines := logLines(logs.String())
	require.Len(t, lines, 2, "one line per container with invalid fields: %q", lines)
	assert.Contains(t, lines[0], "container_1700000000000_0042_01_000001")
	assert.Contains(t, lines[0], "totalVCoresNeeded -1")
	assert.Contains(t, lines[0], "totalMemoryNeededMB NaN")
	assert.Contains(t, lines[1], "container_1700000000000_0042_01_000003")
	assert.Contains(t, lines[1], "exitCode 1e+30")
}

func TestDecodeLogsBounded(t *testing.T) {
	logs := captureKlog(t)
	var b strings.Builder
	b.WriteString(`{"containers":{"container":[`)
	for i := 0; i < 1000; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		if i%2 == 0 {
			fmt.Fprintf(&b, `{"id":"container_1700000000000_0042_01_%06d","totalVCoresNeeded":-1}`, i+1)
		} else {
			b.WriteString(`{"id":"bogus"}`)
		}
	}
	b.WriteString(`]}}`)
	got, err := DecodeContainers(strings.NewReader(b.String()))
	require.NoError(t, err)
	assert.Len(t, got, 500)
	lines := logLines(logs.String())
	assert.LessOrEqual(t, len(lines), 20, "log lines of one document are bounded")
	assert.Contains(t, lines[len(lines)-1], "more NM container entries")
}

// hostile returns a 32 MiB (the NM client's default cap) containers document
// whose list repeats entry.
func hostile(prefix, entry, suffix string) []byte {
	const size = 32 << 20
	n := (size - len(prefix) - len(suffix)) / (len(entry) + 1)
	b := make([]byte, 0, size)
	b = append(b, prefix...)
	for i := 0; i < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, entry...)
	}
	return append(b, suffix...)
}

// TestDecodeHostileBodyAllocationBounded: what a body can make the decoder
// allocate is bounded by what it holds, not by how many "id" it spells:
// lists of junk entries stop at MaxNMContainers, a value longer than
// MaxNMValueBytes (an unknown field full of "id") fails the answer before
// it is buffered.
func TestDecodeHostileBodyAllocationBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes 32 MiB bodies")
	}
	const list = `{"containers":{"container":[`
	tests := []struct {
		name string
		body []byte
		err  error
	}{
		{"id strings", hostile(list, `"id"`, `]}}`), nil},
		{"empty objects", hostile(list, `{}`, `]}}`), ErrTooManyContainers},
		{"nulls", hostile(list, `null`, `]}}`), ErrTooManyContainers},
		{"minimal valid containers", hostile(list, `{"id":"container_1_0001_01_000001"}`, `]}}`), ErrTooManyContainers},
		{"ids in one entry's unknown field", hostile(`{"containers":{"container":[{"id":"container_1_0001_01_000001","x":[`, `"id"`, `]}]}}`), ErrResponseTooLarge},
		{"ids in the single object's unknown fields", hostile(`{"containers":{"container":{"id":"container_1_0001_01_000001",`, `"x":1`, `}}}`), nil},
		{"ids in unknown fields of the document", hostile(`{"x":[`, `"id"`, `],"containers":{"container":{"id":"container_1_0001_01_000001"}}}`), ErrResponseTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			got, err := DecodeContainers(bytes.NewReader(tt.body))
			runtime.ReadMemStats(&after)
			require.Error(t, err)
			if tt.err != nil {
				assert.ErrorIs(t, err, tt.err)
			}
			assert.Nil(t, got)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d MiB body: %d MiB allocated, err %v", len(tt.body)>>20, alloc>>20, err)
			assert.LessOrEqual(t, alloc, uint64(len(tt.body)), "allocation bounded by the body")
		})
	}
}

// TestDecodeFullListAllocation: the longest list accepted, each entry a
// valid container, costs what its containers need; one entry more fails
// the document.
func TestDecodeFullListAllocation(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"containers":{"container":[`)
	for i := 0; i < MaxNMContainers; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":"container_1_0001_01_%06d","totalVCoresNeeded":1,"totalMemoryNeededMB":1024}`, i+1)
	}
	b.WriteString(`]}}`)
	body := []byte(b.String())
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got, err := DecodeContainers(bytes.NewReader(body))
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	assert.Len(t, got, MaxNMContainers)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d KiB body, %d containers: %d MiB allocated", len(body)>>10, len(got), alloc>>20)
	// Token streaming allocates each token it reads (about 1.4 KiB per
	// such entry in all); what it holds is the containers.
	assert.LessOrEqual(t, alloc, uint64(MaxNMContainers*2<<10))

	got, err = DecodeContainers(strings.NewReader(strings.Replace(b.String(), "]}}", `,{"id":"container_1_0001_01_999999"}]}}`, 1)))
	assert.ErrorIs(t, err, ErrTooManyContainers)
	assert.ErrorContains(t, err, fmt.Sprintf("more than %d", MaxNMContainers))
	assert.Nil(t, got)
}

func TestIsTerminalState(t *testing.T) {
	for _, s := range []string{StateDone, StateExitedWithFailure, StateExitedWithSuccess, StateLocalizationFailed, StateContainerCleanedupAfterKill} {
		assert.True(t, IsTerminalState(s), s)
	}
	for _, s := range []string{StateNew, StateLocalizing, StateLocalized, StateRunning, StateKilling, StateContainerResourcesCleaningUp} {
		assert.False(t, IsTerminalState(s), s)
	}
}

// nonCanonicalBody lists exec 2 and then exec 2's id with one more leading
// zero, carrying another user's data.
const nonCanonicalBody = `{"containers":{"container":[
	{"id":"container_1700000000000_0001_01_000002","state":"RUNNING","user":"alice","totalVCoresNeeded":1,"totalMemoryNeededMB":2048,"executionType":"GUARANTEED"},
	{"id":"container_1700000000000_0001_01_0000002","state":"RUNNING","user":"mallory","totalVCoresNeeded":64,"totalMemoryNeededMB":65536,"executionType":"OPPORTUNISTIC"}]}}`

// TestDecodeRejectsNonCanonicalID: an id that is not the canonical form of
// the container it parses to is not that container; its entry is dropped
// (one log line naming it) and cannot overwrite the real container's data.
func TestDecodeRejectsNonCanonicalID(t *testing.T) {
	logs := captureKlog(t)
	got, err := DecodeContainers(strings.NewReader(nonCanonicalBody))
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "container_1700000000000_0001_01_000002", got[0].ID.String())
	assert.Equal(t, "alice", got[0].User)
	assert.Equal(t, int64(1), got[0].TotalVCoresNeeded)
	assert.Equal(t, int64(2048), got[0].TotalMemoryNeededMB)
	assert.Equal(t, ExecutionGuaranteed, got[0].ExecutionType)
	lines := logLines(logs.String())
	require.Len(t, lines, 1, "%q", lines)
	assert.Contains(t, lines[0], "container_1700000000000_0001_01_0000002")
	assert.Contains(t, lines[0], "not canonical")
}
