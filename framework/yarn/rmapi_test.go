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
