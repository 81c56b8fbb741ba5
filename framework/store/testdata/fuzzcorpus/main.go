// Command fuzzcorpus writes the seed corpus of FuzzNMResponse
// (framework/store/testdata/fuzz/FuzzNMResponse, in Go's corpus format):
// the documented NM shapes, their null/empty/single-object variants,
// numbers as strings, unknown fields, RemoteException, invalid ids, bad
// numbers and hostile bodies. Run from the repository root:
//
//	go run ./framework/store/testdata/fuzzcorpus
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

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

// The store under fuzz knows these (see fuzzStore).
const (
	c1 = "container_e17_1700000000000_0042_01_000001"
	c2 = "container_e17_1700000000000_0042_01_000002"
	c3 = "container_e17_1700000000000_0042_01_000003"
	c4 = "container_e17_1700000000000_0042_01_000004"
	c5 = "container_e17_1700000000000_0042_01_000005"
)

func entry(id, state string, vcores, mb any) string {
	return fmt.Sprintf(`{"id":%q,"state":%q,"user":"alice","exitCode":-1000,"totalMemoryNeededMB":%v,"totalVCoresNeeded":%v,"executionType":"GUARANTEED"}`, id, state, mb, vcores)
}

func list(entries ...string) string {
	return `{"containers":{"container":[` + strings.Join(entries, ",") + `]}}`
}

func one(e string) string { return `{"containers":{"container":` + e + `}}` }

func repeat(prefix, e, suffix string, n int) string {
	var b strings.Builder
	b.WriteString(prefix)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(e)
	}
	b.WriteString(suffix)
	return b.String()
}

func main() {
	dir := "framework/store/testdata/fuzz/FuzzNMResponse"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	// c1, then look-alikes of c1..c4 (more leading zeros) with another user's data.
	nonCanonical := list(entry(c1, "RUNNING", 2, 2048),
		`{"id":"container_e17_1700000000000_0042_01_0000001","state":"RUNNING","user":"mallory","totalVCoresNeeded":64,"totalMemoryNeededMB":65536,"executionType":"OPPORTUNISTIC"}`,
		`{"id":"container_e017_1700000000000_0042_01_000002","state":"RUNNING","user":"mallory","totalVCoresNeeded":64,"totalMemoryNeededMB":65536}`,
		`{"id":"container_e17_1700000000000_00042_01_000003","state":"RUNNING","user":"mallory"}`,
		`{"id":"container_e17_1700000000000_0042_001_000004","state":"RUNNING","user":"mallory"}`)
	seeds := map[string]string{
		"documented":                     documented,
		"list_of_one":                    list(entry(c1, "RUNNING", 2, 2048)),
		"single_object":                  one(entry(c5, "NEW", 1, 1024)),
		"body_null":                      `null`,
		"body_empty_string":              `""`,
		"body_empty_object":              `{}`,
		"body_empty":                     ``,
		"containers_null":                `{"containers":null}`,
		"containers_empty_string":        `{"containers":""}`,
		"containers_empty_object":        `{"containers":{ }}`,
		"container_null":                 `{"containers":{"container":null}}`,
		"container_empty_string":         `{"containers":{"container":""}}`,
		"container_empty_list":           `{"containers":{"container":[]}}`,
		"numbers_as_strings":             one(`{"id":"` + c5 + `","state":"RUNNING","exitCode":"-1000","totalMemoryNeededMB":"2048","totalVCoresNeeded":"2"}`),
		"unknown_fields":                 `{"extra":1,"containers":{"x":[1,2],"container":[{"id":"` + c1 + `","foo":{"bar":[]},"state":"RUNNING","containerLogFiles":["stdout"]}]},"tail":{"id":"x"}}`,
		"remote_exception":               `{"RemoteException":{"exception":"NotFoundException","message":"java.lang.Exception: not found","javaClassName":"org.apache.hadoop.yarn.webapp.NotFoundException"}}`,
		"remote_exception_and_list":      `{"containers":{"container":[` + entry(c1, "DONE", 1, 1) + `]},"RemoteException":{"exception":"WebApplicationException","message":"boom"}}`,
		"known_containers_move_on":       list(entry(c1, "EXITED_WITH_SUCCESS", 2, 2048), entry(c2, "RUNNING", 1, 1024), entry(c3, "DONE", 1, 1024), entry(c4, "RUNNING", 4, 4096), entry(c5, "LOCALIZING", 1, 512)),
		"event_container_nm_only":        list(entry(c4, "RUNNING", 1, 1024)),
		"duplicate_ids":                  list(entry(c5, "RUNNING", 1, 1024), entry(c5, "DONE", 2, 2048), entry(c5, "RUNNING", 3, 3072)),
		"invalid_ids":                    list(entry("container_../../etc/passwd", "RUNNING", 1, 1), entry("pod_1", "RUNNING", 1, 1), `{"state":"RUNNING"}`, entry("container_1700000000000_00042_001_0000005", "RUNNING", 1, 1), entry("container_e00_1700000000000_0042_01_000006", "NEW", 1, 1), entry("container_e17_1700000000000_0042_01_00007", "NEW", 1, 1), entry("container_1_0001_01_99999999999999999999", "NEW", 1, 1)),
		"non_canonical_ids":              nonCanonical,
		"escaped_id":                     one(`{"id":"container_\u0031700000000000_0042_01_000005","state":"RUNNING"}`),
		"negative_numbers":               list(entry(c5, "RUNNING", -1, -2048), entry(c1, "RUNNING", `"-4"`, `"-1"`), entry(c4, "RUNNING", -0.5, -1e3)),
		"nan_and_inf":                    list(entry(c5, "RUNNING", `"NaN"`, `"Inf"`), entry(c1, "RUNNING", `"-Infinity"`, `"nan"`), `{"id":"`+c4+`","state":"RUNNING","exitCode":"NaN"}`),
		"huge_numbers":                   list(entry(c5, "RUNNING", 1e30, `"1e30"`), entry(c1, "RUNNING", "1e400", `"-1e400"`), entry(c4, "RUNNING", "9223372036854775807", "9223372036854775807"), `{"id":"`+c3+`","state":"NEW","exitCode":1e30}`),
		"overflow_after_scaling":         list(entry(c5, "RUNNING", "9223372036854776", "8796093022208"), entry(c1, "RUNNING", 1048576, 67108864), entry(c4, "RUNNING", 1048577, 67108865)),
		"not_numbers":                    list(entry(c5, "RUNNING", `"many"`, `true`), entry(c1, "RUNNING", `[1]`, `{"v":1}`), entry(c4, "RUNNING", `"0x1p4"`, `" 12 "`)),
		"wrong_type_for_string":          one(`{"id":"` + c5 + `","state":5}`),
		"truncated":                      `{"containers":{"container":[{"id":"` + c1 + `"`,
		"html":                           `<html><body>Error 500</body></html>`,
		"top_level_list":                 `[]`,
		"containers_a_number":            `{"containers":5}`,
		"container_a_number":             `{"containers":{"container":5}}`,
		"whitespace":                     "\n\t{ \"containers\" :\r\n { \"container\" : [ \n" + entry(c5, "RUNNING", 1, 1024) + " \n ] } }\n",
		"deep_nesting":                   `{"containers":{"container":[{"id":"` + c5 + `","x":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}]}}`,
		"hostile_id_strings":             repeat(`{"containers":{"container":[`, `"id"`, `]}}`, 16384),
		"hostile_ids_in_entry":           repeat(`{"containers":{"container":[{"id":"`+c5+`","state":"RUNNING","x":[`, `"id"`, `]}]}}`, 16384),
		"hostile_nulls":                  repeat(`{"containers":{"container":[`, `null`, `]}}`, 4096),
		"hostile_empty_objects_over_cap": repeat(`{"containers":{"container":[`, `{}`, `]}}`, 16385), // yarn.MaxNMContainers+1
		"hostile_minimal_valid":          repeat(`{"containers":{"container":[`, `{"id":"container_1_0001_01_000001"}`, `]}}`, 2048),
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		panic(err)
	}
	for name, body := range seeds {
		data := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", body)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			panic(err)
		}
	}
	fmt.Println(len(seeds), "seeds")
}
