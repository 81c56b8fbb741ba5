//go:build tools

// Package tools pins the Kubernetes commands this module builds: the
// node-in-a-box's kube-apiserver (build.sh) and, for the real-kubelet guest
// (test/kubelet/build.sh), the kubelet, kube-controller-manager (its
// DaemonSet, service-account and root-CA controllers) and kube-scheduler.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
