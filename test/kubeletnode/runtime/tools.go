//go:build tools

// Package tools pins the container runtime the real-kubelet guest runs:
// containerd v2 (its daemon, its runc shim and ctr, which imports the
// test's images) and runc, built by build.sh.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
	_ "github.com/opencontainers/runc"
)
