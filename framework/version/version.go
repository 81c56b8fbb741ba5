// Package version says which koordlet-yarn this binary is: the version
// stamped at build (make build: git describe), the Koordinator it is built
// on, and the Go toolchain.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is set at build time:
//
//	go build -ldflags "-X github.com/koordlet-yarn/koordlet-yarn/framework/version.version=v0.1.0"
//
// Empty (a plain go build): the module version and VCS revision Go embeds.
var version string

// koordinatorModule is the module path of the Koordinator this is built on.
const koordinatorModule = "github.com/koordinator-sh/koordinator"

// Info is what a build is.
type Info struct {
	// Version is koordlet-yarn's version: the stamped one, else the
	// module's (devel) with the VCS revision, "-dirty" when modified.
	Version string `json:"version"`
	// Koordinator is the version of github.com/koordinator-sh/koordinator
	// linked in (its replacement's, if replaced).
	Koordinator string `json:"koordinator"`
	// Go is the toolchain that built the binary.
	Go string `json:"go"`
}

// Get returns this binary's build information.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return info(version, bi)
}

// info derives Info from the stamped version and Go's build information
// (nil when the binary has none).
func info(stamped string, bi *debug.BuildInfo) Info {
	i := Info{Version: stamped, Koordinator: "unknown", Go: runtime.Version()}
	if bi == nil {
		if i.Version == "" {
			i.Version = "unknown"
		}
		return i
	}
	if bi.GoVersion != "" {
		i.Go = bi.GoVersion
	}
	for _, d := range bi.Deps {
		if d.Path != koordinatorModule {
			continue
		}
		i.Koordinator = d.Version
		if d.Replace != nil && d.Replace.Version != "" {
			i.Koordinator = d.Replace.Version
		}
	}
	if i.Version != "" {
		return i
	}
	i.Version = bi.Main.Version
	if i.Version != "" && i.Version != "(devel)" {
		return i // Go stamped it from VCS already (v0.0.0-<time>-<rev>[+dirty])
	}
	i.Version = "(devel)"
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		i.Version += "+" + rev
		if modified == "true" {
			i.Version += "-dirty"
		}
	}
	return i
}

// String is the --version line.
func (i Info) String() string {
	return fmt.Sprintf("koordlet-yarn %s (Koordinator %s, %s)", i.Version, i.Koordinator, i.Go)
}
