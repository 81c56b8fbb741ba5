//go:build tools

// Package tools pins the kube-apiserver command this module builds.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
