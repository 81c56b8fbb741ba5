#!/bin/sh
# Builds the koordlet-yarn image (the Dockerfile at the repository top) with
# whichever image builder this machine has, and pushes it with PUSH=1.
#
#   IMAGE=registry.example.com/koordlet-yarn:dev [PUSH=1] [BUILDER=podman] deploy/image.sh
#
# Extra build arguments (KOORDLET_IMAGE, KOORDINATOR_VERSION, GO_IMAGE,
# BUILD_BASE, VERSION) are passed through when set in the environment;
# VERSION (the version stamped into the binary) defaults to git describe.
set -eu
top=$(cd "${0%/*}/.." && pwd)
image=${IMAGE:-koordlet-yarn:dev}

# A builder counts only when it can build here: docker and nerdctl need
# their daemon (a CLI without one is reported), podman and buildah run
# without one.
usable() {
	"$1" info >/dev/null 2>&1
}
builder=${BUILDER:-}
unusable=""
if [ -z "$builder" ]; then
	for b in docker podman buildah nerdctl; do
		command -v "$b" >/dev/null 2>&1 || continue
		if usable "$b"; then
			builder=$b
			break
		fi
		unusable="$unusable $b"
	done
elif ! command -v "$builder" >/dev/null 2>&1; then
	echo "make image: BUILDER=$builder is not in PATH" >&2
	exit 1
fi
if [ -z "$builder" ]; then
	echo "make image: no usable container image builder on this machine (looked for docker, podman, buildah and nerdctl in PATH)." >&2
	for b in $unusable; do
		msg=$("$b" info 2>&1 || true)
		msg=${msg##*"
"}
		echo "make image: $b is installed but '$b info' fails (is its daemon running?): $msg" >&2
	done
	echo "make image: install or start one of them, or build elsewhere from this repository: docker build -t $image ." >&2
	exit 1
fi

if [ -z "${VERSION:-}" ]; then
	VERSION=$(git -C "$top" describe --tags --always --dirty 2>/dev/null || true)
fi
args=""
for a in KOORDLET_IMAGE KOORDINATOR_VERSION GO_IMAGE BUILD_BASE VERSION; do
	eval "v=\${$a:-}"
	if [ -n "$v" ]; then
		args="$args --build-arg $a=$v"
	fi
done

echo "make image: building $image with $builder"
case $builder in
buildah)
	# shellcheck disable=SC2086
	buildah bud --layers -f "$top/Dockerfile" -t "$image" $args "$top"
	;;
*)
	# shellcheck disable=SC2086
	"$builder" build -f "$top/Dockerfile" -t "$image" $args "$top"
	;;
esac
if [ "${PUSH:-0}" = 1 ]; then
	echo "make image: pushing $image"
	"$builder" push "$image"
fi
