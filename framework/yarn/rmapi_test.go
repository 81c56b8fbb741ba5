package yarn

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDecodeRMNodeResource(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       NodeResource
		err        string
	}{
		{"totalResource", `{"node":{"id":"h:1","totalResource":{"memory":8192,"vCores":4,"resourceInformations":{}},"usedMemoryMB":1024,"availMemoryMB":1}}`, NodeResource{MemoryMB: 8192, VCores: 4}, ""},
		{"used and available (before totalResource)", `{"node":{"id":"h:1","usedMemoryMB":1024,"availMemoryMB":3072,"usedVirtualCores":1,"availableVirtualCores":3}}`, NodeResource{MemoryMB: 4096, VCores: 4}, ""},
		{"no node", `{"nodes":{}}`, NodeResource{}, "no \"node\""},
		{"nothing usable", `{"node":{"id":"h:1","usedMemoryMB":1}}`, NodeResource{}, "neither"},
		{"negative", `{"node":{"totalResource":{"memory":-1,"vCores":4}}}`, NodeResource{}, "negative"},
		{"not JSON", `<html>standby</html>`, NodeResource{}, "decode"},
	} {
		got, err := DecodeRMNodeResource([]byte(tc.body))
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.name)
			continue
		}
		assert.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}
}

// TestRMAppAMContainerIDCanonical: the RM's AM container is read with the
// one id rule: a look-alike id (one more leading zero) names no container.
func TestRMAppAMContainerIDCanonical(t *testing.T) {
	for _, tc := range []struct {
		logs string
		want string
	}{
		{"http://nm:8042/node/containerlogs/container_e17_1700000000000_0042_01_000001/alice", "container_e17_1700000000000_0042_01_000001"},
		{"http://nm:8042/node/containerlogs/container_e17_1700000000000_0042_01_0000001/alice", ""},
		{"http://nm:8042/node/containerlogs/container_e017_1700000000000_0042_01_000001/alice", ""},
		{"", ""},
	} {
		app := RMApp{AMContainerLogs: tc.logs}
		id, ok := app.AMContainerID()
		assert.Equal(t, tc.want != "", ok, tc.logs)
		if ok {
			assert.Equal(t, tc.want, id.String())
		}
	}
}
