#!/usr/bin/env bash
# Builds kube-apiserver (v1.35.4), etcd (v3.6.5) and koord-manager (v1.8.0)
# for the node-in-a-box tests into $OUT (default build/bin at the repository top), from this
# module's pinned versions. A stamp of go.mod/go.sum/this script skips the
# (cold: ~5 min on 2 cores) build when the binaries are current.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
top="$(cd "$here/../../.." && pwd)"
out="${OUT:-$top/build/bin}"
mkdir -p "$out"
stamp="$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" "$here/etcd/main.go" | sha256sum | cut -c1-16)"
# koord-manager (Koordinator's central manager, for the batch ledger's e2e
# test) from its own module next to this one, with its own stamp.
km="$here/../koordmanager"
kmstamp="$(cat "$km/go.mod" "$km/go.sum" "$here/build.sh" | sha256sum | cut -c1-16)"
if [[ ! -x "$out/koord-manager" || "$(cat "$out/.koord-manager-stamp" 2>/dev/null)" != "$kmstamp" ]]; then
	echo "building koord-manager into $out"
	(cd "$km" && GOFLAGS=-mod=mod go build -o "$out/koord-manager" github.com/koordinator-sh/koordinator/cmd/koord-manager)
	echo "$kmstamp" > "$out/.koord-manager-stamp"
fi
if [[ -x "$out/kube-apiserver" && -x "$out/etcd" && "$(cat "$out/.e2e-tools-stamp" 2>/dev/null)" == "$stamp" ]]; then
	echo "e2e tools are current in $out"
	exit 0
fi
cd "$here"
export GOFLAGS=-mod=mod
echo "building etcd into $out"
go build -o "$out/etcd" ./etcd
echo "building kube-apiserver v1.35.4 into $out (cold build takes minutes)"
go build -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=v1.35.4 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=35" \
	-o "$out/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
echo "$stamp" > "$out/.e2e-tools-stamp"
