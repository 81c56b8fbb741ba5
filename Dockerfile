# syntax=docker/dockerfile:1
#
# koordlet with the koordlet-yarn plugin set: Koordinator's own koordlet
# image of the pinned version with /koordlet replaced by this repository's
# build. Everything else of the stock image (its libpfm, lvm2, iptables and
# pciutils, its working directory and its ENTRYPOINT ["/koordlet"]) stays as
# it is, so the chart's DaemonSet runs it unchanged.
#
#   make image IMAGE=registry.example.com/koordlet-yarn:dev
#
# KOORDLET_IMAGE and KOORDINATOR_VERSION name the stock image; the version
# must be the one go.mod pins (a test checks the default).
ARG KOORDLET_IMAGE=registry.cn-beijing.aliyuncs.com/koordinator-sh/koordlet
ARG KOORDINATOR_VERSION=v1.8.0
ARG GO_IMAGE=golang:1.26
# The stock image is Ubuntu 22.04 (nvidia/cuda:11.8.0-base-ubuntu22.04):
# the binary is built on the same release so that it links against the C
# library it runs with (a newer builder's glibc could need symbols 22.04
# lacks).
ARG BUILD_BASE=ubuntu:22.04

FROM ${GO_IMAGE} AS go

FROM ${BUILD_BASE} AS builder
# cgo: koordlet's perf code links libpfm4 (the stock image ships
# libpfm.so.4 in /usr/lib).
RUN apt-get update && apt-get install -y --no-install-recommends \
        build-essential ca-certificates git libpfm4-dev && \
    rm -rf /var/lib/apt/lists/*
COPY --from=go /usr/local/go /usr/local/go
ENV PATH=/usr/local/go/bin:$PATH CGO_ENABLED=1 GOTOOLCHAIN=local
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/root/go/pkg/mod go mod download
COPY . .
# The version stamped into the binary (--version, koordlet_yarn_build_info);
# make image passes git describe.
ARG VERSION=unknown
RUN --mount=type=cache,target=/root/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags "-X github.com/koordlet-yarn/koordlet-yarn/framework/version.version=${VERSION}" \
        -o /out/koordlet ./cmd/koordlet

FROM ${KOORDLET_IMAGE}:${KOORDINATOR_VERSION}
COPY --from=builder /out/koordlet /koordlet
