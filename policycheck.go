package koordletyarn

import (
	"flag"
	"fmt"
	"io"
	"sort"

	"github.com/koordlet-yarn/koordlet-yarn/framework/policy"
)

// PolicyCheckFlag validates a YARN QoS policy file offline and exits.
const PolicyCheckFlag = "yarn-qos-policy-check"

// initPolicyCheckFlag registers --yarn-qos-policy-check.
func (fw *Framework) initPolicyCheckFlag(fs *flag.FlagSet) {
	fs.StringVar(&fw.flags.policyCheck, PolicyCheckFlag, "",
		"Validate the YARN QoS policy FILE as koordlet would load it (--yarn-qos-policy-file), print its rules and tiers or what is wrong where, and exit: 0 valid, 1 not. Needs no node, cluster or gate.")
}

// PolicyCheckRequested reports whether --yarn-qos-policy-check was given.
func (fw *Framework) PolicyCheckRequested() bool { return fw.flags.policyCheck != "" }

// RunPolicyCheck validates the --yarn-qos-policy-check file, writes the
// outcome to w and returns the exit code.
func (fw *Framework) RunPolicyCheck(w io.Writer) int {
	return CheckPolicyFile(w, fw.flags.policyCheck)
}

// CheckPolicyFile validates the policy file at path, writes the outcome to
// w and returns the exit code (0 valid, 1 not).
func CheckPolicyFile(w io.Writer, path string) int {
	p, err := policy.ParseFile(path)
	if err != nil {
		fmt.Fprintf(w, "YARN QoS policy %s: INVALID: %v\n", path, err)
		return 1
	}
	fmt.Fprintf(w, "YARN QoS policy %s: valid, %d rules, %d tiers (the first rule that matches decides)\n", path, len(p.Rules), len(p.Tiers))
	for i, r := range p.Rules {
		prio := "default priority"
		if r.Priority != nil {
			prio = fmt.Sprintf("priority %d", *r.Priority)
		}
		tier := ""
		if r.Tier != "" {
			tier = ", tier " + r.Tier
		}
		fmt.Fprintf(w, "  %d. %s: %s%s\n", i+1, r.Name, prio, tier)
	}
	names := make([]string, 0, len(p.Tiers))
	for n := range p.Tiers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := p.Tiers[n]
		fmt.Fprintf(w, "  tier %s: evictBeforePods %v, cpuQoS override %v, memoryQoS override %v\n", n, t.EvictBeforePods, t.CPUQoS != nil, t.MemoryQoS != nil)
	}
	return 0
}
