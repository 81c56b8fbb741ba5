package cgroups

import (
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// The trusted xattrs koordlet-yarn's hooks set on the cgroup directories
// they make: the one record, surviving a koordlet restart, of which
// cgroups koordlet made (a directory without its marker is YARN's or
// someone else's, and is never removed or treated as koordlet's).
const (
	// ContainerCgroupMarker marks every cgroup directory the adopter
	// (YARNContainerCgroups) makes for a YARN container, and the YARN
	// hierarchy when koordlet made it.
	ContainerCgroupMarker = "trusted.koordlet-yarn.container-cgroup"
	// MemcgMarker marks every memory cgroup directory YARNMemoryCgroup
	// makes.
	MemcgMarker = "trusted.koordlet-yarn.memcg"
	// MemcgFromMarker records, on a leaf YARNMemoryCgroup made, the memory
	// cgroup (relative to the memory mount) its first process came from:
	// the NodeManager pod's.
	MemcgFromMarker = "trusted.koordlet-yarn.memcg-from"
	// MarkerValue is the value of ContainerCgroupMarker and MemcgMarker.
	MarkerValue = "1"
)

// MadeByKoordlet reports whether dir (absolute) carries the marker of one
// of the hooks that make cgroups (ContainerCgroupMarker, MemcgMarker).
func MadeByKoordlet(dir string) bool {
	for _, marker := range []string{ContainerCgroupMarker, MemcgMarker} {
		if m, err := Marked(dir, marker, MarkerValue); err == nil && m {
			return true
		}
	}
	return false
}

// RecordedOrigin returns the origin MemcgFromMarker records on leaf
// (absolute), when there is one.
func RecordedOrigin(leaf string) (string, bool) {
	buf := make([]byte, 4096)
	n, err := unix.Getxattr(leaf, MemcgFromMarker, buf)
	if err != nil || n == 0 {
		return "", false
	}
	return string(buf[:n]), true
}

// ValidOrigin reports whether from (a recorded origin) may take processes
// back, or bound what was left there: a clean relative path that is not
// inside the YARN hierarchy dir.
func ValidOrigin(from, hierarchy string) bool {
	c := filepath.Clean("/" + from)
	if c != "/"+strings.Trim(from, "/") || strings.Contains(from, "..") {
		return false
	}
	h := "/" + strings.Trim(filepath.Clean("/"+hierarchy), "/")
	return c != h && !strings.HasPrefix(c, h+"/")
}
