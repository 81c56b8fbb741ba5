package jobrun

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// launches counts the containers the NodeManager launched: the distinct
// container ids of the container-executor's LAUNCH_CONTAINER calls
// ("<runAs> <user> 1 <appId> <containerId> …") in its call log.
func launches(callLog string) (int, error) {
	f, err := os.Open(callLog)
	if err != nil {
		return 0, fmt.Errorf("the container-executor's call log: %w", err)
	}
	defer f.Close()
	ids := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		_, call, ok := strings.Cut(sc.Text(), "call: ")
		if !ok {
			continue
		}
		if f := strings.Fields(call); len(f) >= 5 && f[2] == "1" && strings.HasPrefix(f[4], "container_") {
			ids[f[4]] = true
		}
	}
	return len(ids), sc.Err()
}

// Capacity is what the RM holds for the node (-1: not read).
type Capacity struct {
	VCores, MemoryMB int
}

func (c Capacity) String() string {
	if c.VCores < 0 {
		return "unknown"
	}
	return fmt.Sprintf("%d vcores %d MB", c.VCores, c.MemoryMB)
}

// rmCapacity reads the node's capacity from the RM's REST
// (GET /ws/v1/cluster/nodes: used + available).
func rmCapacity(ctx context.Context, rmWeb string) Capacity {
	var body struct {
		Nodes struct {
			Node []struct {
				State                                   string
				UsedVirtualCores, AvailableVirtualCores int
				UsedMemoryMB                            int `json:"usedMemoryMB"`
				AvailMemoryMB                           int `json:"availMemoryMB"`
			} `json:"node"`
		} `json:"nodes"`
	}
	if err := getJSON(ctx, "http://"+rmWeb+"/ws/v1/cluster/nodes", &body); err != nil {
		return Capacity{-1, -1}
	}
	for _, n := range body.Nodes.Node {
		if n.State == "RUNNING" {
			return Capacity{n.UsedVirtualCores + n.AvailableVirtualCores, n.UsedMemoryMB + n.AvailMemoryMB}
		}
	}
	return Capacity{-1, -1}
}

// getJSON decodes a GET of url (JSON, at most 16 MiB, 3 s) into v.
func getJSON(ctx context.Context, url string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(v)
}
