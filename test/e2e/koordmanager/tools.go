//go:build tools

// Package koordmanager pins koord-manager (Koordinator's central manager,
// v1.8.0, the version go.mod of the repository top requires) for the e2e
// test that runs its noderesource controller against the node in a box:
// build.sh builds it into build/bin.
package koordmanager

import _ "github.com/koordinator-sh/koordinator/cmd/koord-manager"
