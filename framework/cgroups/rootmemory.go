package cgroups

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"
)

// PriorMemoryHighXattr records the YARN root's own memory.high (cgroup
// v2) before koordlet's memory relief first lowers it; PriorSoftLimitXattr
// its own memory.soft_limit_in_bytes (cgroup v1) before koordlet sets it.
// Both are on the root's memory cgroup dir and removed once the own value
// is back (see RootFile).
const (
	PriorMemoryHighXattr = "trusted.koordlet-yarn.prior-memory-high"
	PriorSoftLimitXattr  = "trusted.koordlet-yarn.prior-memory-soft-limit"
)

// MemoryUnlimited is the value of a memory limit that is "max" (v2) or
// the kernel's page counter maximum (v1, 9223372036854771712 on 4 KiB
// pages): any value at or above 2^62 bytes.
const MemoryUnlimited = int64(math.MaxInt64)

// softLimitFile is the v1 memory soft limit; koordlet's registry has no
// resource for it.
const softLimitFile = "memory.soft_limit_in_bytes"

// softLimit is koordlet's resource for the v1 memory soft limit, made
// from koordlet's factory (the updater writes it like any cgroup file).
var softLimit = system.DefaultFactory.New(softLimitFile, system.CgroupMemDir).WithCheckSupported(system.SupportedIfFileExists)

// NewRootMemoryHigh returns the writer of the YARN root's memory.high on
// cgroup v2 (memory relief's throttle). koordlet has one, made by Install.
func NewRootMemoryHigh() *RootFile {
	return NewRootFile(RootFileSpec{
		Name: "memory.high",
		Resource: func() (system.Resource, error) {
			if system.GetCurrentCgroupVersion() != system.CgroupVersionV2 {
				return nil, fmt.Errorf("memory.high is a cgroup v2 file")
			}
			return system.GetCgroupResource(system.MemoryHighName)
		},
		Xattr:     PriorMemoryHighXattr,
		Read:      func(rel string) (int64, error) { return readMemoryValue(system.MemoryHighV2, rel) },
		Unlimited: MemoryUnlimited,
		Valid:     func(v int64) bool { return v > 0 },
	})
}

// NewRootSoftLimit returns the writer of the YARN root's
// memory.soft_limit_in_bytes on cgroup v1 (memory relief: global reclaim
// takes batch's memory first). koordlet has one, made by Install.
func NewRootSoftLimit() *RootFile {
	return NewRootFile(RootFileSpec{
		Name: "memory soft limit",
		Resource: func() (system.Resource, error) {
			if system.GetCurrentCgroupVersion() == system.CgroupVersionV2 {
				return nil, fmt.Errorf("%s is a cgroup v1 file", softLimitFile)
			}
			return softLimit, nil
		},
		Xattr:     PriorSoftLimitXattr,
		Read:      func(rel string) (int64, error) { return readMemoryValue(softLimit, rel) },
		Format:    formatV1Memory,
		Unlimited: MemoryUnlimited,
		Valid:     func(v int64) bool { return v >= 0 },
	})
}

// formatV1Memory writes no limit (any value at or above 2^62, as the
// kernel shows it or MemoryUnlimited) as -1, v1's "no limit".
func formatV1Memory(v int64) string {
	if v >= 1<<62 {
		return "-1"
	}
	return strconv.FormatInt(v, 10)
}

// readMemoryValue reads a memory limit file of rel: "max" and any value
// at or above 2^62 are MemoryUnlimited.
func readMemoryValue(r system.Resource, rel string) (int64, error) {
	b, err := os.ReadFile(r.Path(rel))
	if err != nil {
		return 0, err
	}
	return ParseMemoryValue(string(b))
}

// ParseMemoryValue parses a memory limit file's content ("max" and any
// value at or above 2^62 bytes are MemoryUnlimited).
func ParseMemoryValue(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "max" {
		return MemoryUnlimited, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse memory value %q: %w", s, err)
	}
	if v >= 1<<62 {
		return MemoryUnlimited, nil
	}
	return v, nil
}
