package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// example is the README's example policy.
const example = `
tiers:
  transcode:
    evictBeforePods: true
    cpuQoS: {enable: true, groupIdentity: -1}
    memoryQoS: {enable: true, minLimitPercent: 0, lowLimitPercent: 0, throttlingPercent: 60}
  protected:
    memoryQoS: {enable: true, minLimitPercent: 50, lowLimitPercent: 80}
rules:
- name: transcode-first
  match: {queue: root.transcode}
  priority: 5100
  tier: transcode
- name: streaming-protected
  match: {applicationTypes: [SPARK], tags: [streaming]}
  priority: 5990
  tier: protected
- name: flink-protected
  match: {applicationTypes: [Apache Flink]}
  priority: 5990
  tier: protected
- name: opportunistic-last
  match: {executionTypes: [OPPORTUNISTIC]}
  priority: 5000
`

func TestParseExample(t *testing.T) {
	p, err := Parse([]byte(example))
	require.NoError(t, err)
	require.Len(t, p.Rules, 4)
	assert.True(t, p.Tiers["transcode"].EvictBeforePods)
}

func TestParseRejects(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"empty", "  \n", "policy is empty"},
		{"not YAML", "rules: [", "parse policy"},
		{"unknown field", "rules:\n- name: a\n  priority: 1\n  match: {queues: x}\n", `unknown field "queues"`},
		{"unknown tier", "rules:\n- name: a\n  tier: gold\n", `rule 1 ("a"): unknown tier "gold"`},
		{"no name", "rules:\n- priority: 5\n", "rule 1: no name"},
		{"duplicate", "rules:\n- {name: a, priority: 1}\n- {name: a, priority: 2}\n", `rule 2 ("a"): duplicate name`},
		{"priority range", "rules:\n- {name: a, priority: 20000}\n", "priority 20000 out of [0, 9999]"},
		{"does nothing", "rules:\n- {name: a}\n", "gives neither a priority nor a tier"},
		{"execution type", "rules:\n- {name: a, priority: 1, match: {executionTypes: [guaranteed]}}\n", `execution type "guaranteed"`},
		{"queue path", "rules:\n- {name: a, priority: 1, match: {queue: root.}}\n", `queue "root." is not a queue path`},
		{"percent", "tiers: {t: {memoryQoS: {lowLimitPercent: 120}}}\nrules:\n- {name: a, tier: t}\n", `tier "t": memoryQoS.lowLimitPercent 120 is not a percent`},
		{"group identity", "tiers: {t: {cpuQoS: {groupIdentity: 5}}}\nrules:\n- {name: a, tier: t}\n", "groupIdentity 5"},
		{"too large", string(make([]byte, MaxFileBytes+1)), "more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestResolve(t *testing.T) {
	p, err := Parse([]byte(example))
	require.NoError(t, err)
	app := func(queue, typ string, tags ...string) Subject {
		return Subject{AppKnown: true, Queue: queue, ApplicationType: typ, Tags: tags, ExecutionType: "GUARANTEED", User: "u"}
	}
	tests := []struct {
		name     string
		s        Subject
		rule     string
		priority int64 // 0: none
	}{
		{"the queue", app("root.transcode", "MAPREDUCE"), "transcode-first", 5100},
		{"a queue below it", app("root.transcode.hd", "MAPREDUCE"), "transcode-first", 5100},
		{"not a queue sharing the prefix", app("root.transcoder", "MAPREDUCE"), "", 0},
		{"type and tag, any case", app("root.default", "spark", "Streaming"), "streaming-protected", 5990},
		{"type without the tag", app("root.default", "SPARK", "batch"), "", 0},
		{"Flink", app("root.default", "Apache Flink"), "flink-protected", 5990},
		{"first match wins", app("root.transcode", "Apache Flink"), "transcode-first", 5100},
		{"unknown application: app rules do not match", Subject{ExecutionType: "GUARANTEED"}, "", 0},
		{"unknown application: NM rules still do", Subject{ExecutionType: "OPPORTUNISTIC"}, "opportunistic-last", 5000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := p.Resolve(tt.s)
			assert.Equal(t, tt.rule, e.Rule)
			if tt.priority == 0 {
				assert.Nil(t, e.Priority)
			} else {
				require.NotNil(t, e.Priority)
				assert.Equal(t, tt.priority, *e.Priority)
			}
		})
	}
	e := p.Resolve(app("root.transcode", ""))
	assert.True(t, e.EvictBeforePods)
	assert.Equal(t, "transcode", e.Tier)
	require.NotNil(t, e.MemoryQoS)
	assert.Equal(t, int64(60), *e.MemoryQoS.ThrottlingPercent)

	var none *Policy
	assert.Equal(t, Effective{}, none.Resolve(app("root.transcode", "")), "no policy: today's behaviour")
}

func TestResolveUsers(t *testing.T) {
	p, err := Parse([]byte("rules:\n- {name: etl, priority: 5200, match: {users: [etl]}}\n"))
	require.NoError(t, err)
	assert.Equal(t, "etl", p.Resolve(Subject{User: "etl"}).Rule, "the NodeManager's user")
	assert.Equal(t, "etl", p.Resolve(Subject{AppUser: "etl", AppKnown: true}).Rule, "else the application's")
	assert.Equal(t, "", p.Resolve(Subject{User: "other", AppUser: "etl"}).Rule, "the container's user first")
}

func TestQueueMatches(t *testing.T) {
	for _, tc := range []struct {
		rule, queue string
		want        bool
	}{
		{"root.etl", "root.etl", true},
		{"root.transcode", "root.transcode.hd", true},
		{"root.transcode", "root.transcoder", false},
		{"root.etl", "root.other", false},
		// The CapacityScheduler before Hadoop 3.4 reports the leaf name.
		{"root.etl", "etl", true},
		{"root.a.etl", "etl", true},
		{"root.etl", "et", false},
		{"root.etl", "root", false},
		{"etl", "etl", true},
		{"etl", "root.etl", false},
	} {
		assert.Equal(t, tc.want, queueMatches(tc.rule, tc.queue), "rule %q, application queue %q", tc.rule, tc.queue)
	}
}
