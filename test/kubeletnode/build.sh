#!/usr/bin/env bash
# Builds the real node of make test-kubelet into $OUT (default build/bin at
# the repository top): the kubelet, kube-controller-manager and
# kube-scheduler v1.35.4 from the node-in-a-box's tools module
# (test/e2e/tools, the module kube-apiserver is built from), and containerd
# v2.4.2 (the daemon, its runc shim, ctr) with runc v1.4.3 from
# test/kubeletnode/runtime. A stamp of both modules and this script skips the
# build when the binaries are current (cold: minutes on 2 cores; the
# kube-apiserver build of make e2e-tools shares most of the compile cache).
#
# Why these: kubelet 1.35 is the line kube-apiserver is; containerd 2 is
# where the kubelet is going (1.36 drops containerd 1.x) and resolves from
# the Go module proxy (Debian's is 1.6.20); runc 1.4 is what containerd 2.4.2 requires.
# runc is built with seccomp (libseccomp-dev, installed here when missing,
# linked statically): containerd gives every unprivileged pod's sandbox the
# runtime's default profile.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
top="$(cd "$here/../.." && pwd)"
out="${OUT:-$top/build/bin}"
tools="$top/test/e2e/tools"
rt="$here/runtime"
mkdir -p "$out"
stamp="$(cat "$tools/go.mod" "$tools/go.sum" "$rt/go.mod" "$rt/go.sum" "$here/build.sh" | sha256sum | cut -c1-16)"
bins=(kubelet kube-controller-manager kube-scheduler containerd containerd-shim-runc-v2 ctr runc)
current=1
for b in "${bins[@]}"; do [[ -x "$out/$b" ]] || current=0; done
if [[ $current == 1 && "$(cat "$out/.kubelet-tools-stamp" 2>/dev/null)" == "$stamp" ]]; then
	echo "kubelet tools are current in $out"
	exit 0
fi
export GOFLAGS=-mod=mod
k8sver=v1.35.4
echo "building kubelet, kube-controller-manager, kube-scheduler $k8sver into $out"
(cd "$tools" && CGO_ENABLED=0 go build -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$k8sver -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=35" \
	-o "$out/" k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler)
ctrver=$(cd "$rt" && go list -m -f '{{.Version}}' github.com/containerd/containerd/v2)
echo "building containerd $ctrver (containerd, containerd-shim-runc-v2, ctr) into $out"
(cd "$rt" && CGO_ENABLED=0 go build -tags "no_btrfs no_zfs no_devmapper" \
	-ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$ctrver" \
	-o "$out/" github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 github.com/containerd/containerd/v2/cmd/ctr)
runcver=$(cd "$rt" && go list -m -f '{{.Version}}' github.com/opencontainers/runc)
if [[ ! -f /usr/include/seccomp.h ]]; then
	echo "installing libseccomp-dev (runc's seccomp)"
	if [[ $(id -u) == 0 ]]; then SUDO=""; else SUDO="sudo"; fi
	$SUDO apt-get update -qq && $SUDO apt-get install -y -qq libseccomp-dev
fi
echo "building runc $runcver into $out"
# cgo: runc's nsenter is C; static so that the guest's runc needs no
# library the host may lack.
(cd "$rt" && CGO_ENABLED=1 go build -tags "seccomp netgo osusergo" -ldflags "-s -w -X main.version=${runcver#v} -extldflags -static" \
	-o "$out/runc" github.com/opencontainers/runc)
echo "$stamp" > "$out/.kubelet-tools-stamp"
