package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The rm episode's koordlet: the base's gates with the RM rung's, its RM
// endpoint replaced by the scheduler-emulating RM's, the RM sync's flags.
func TestRMArgs(t *testing.T) {
	base := []string{"--feature-gates=BEMemoryEvict=true,YARNMemoryRelief=true", "--yarn-rm-endpoints=http://old", "--yarn-qos-policy-file=p"}
	got := rmArgs(base, "http://rm")
	assert.Equal(t, "--feature-gates=BEMemoryEvict=true,YARNMemoryRelief=true,YARNBatchLedger=true,YARNRMNodeResourceSync=true,YARNRMPreemption=true", got[0])
	assert.Contains(t, got, "--yarn-qos-policy-file=p")
	assert.Contains(t, got, "--yarn-rm-endpoints=http://rm")
	assert.NotContains(t, got, "--yarn-rm-endpoints=http://old")
	assert.Contains(t, got, "--yarn-rm-preemption-timeout=3s")
	assert.Equal(t, []string{"--feature-gates=BEMemoryEvict=true,YARNMemoryRelief=true", "--yarn-rm-endpoints=http://old", "--yarn-qos-policy-file=p"}, base, "base unchanged")
}
