// Package lswait measures how long the tasks of the node's latency-sensitive
// (LS) pods wait for a CPU — the interference batch work causes them — and
// exports it as a metric and as the signal of the YARN interference
// controller. The source is an eBPF program on the scheduler's wake-up and
// switch events, aggregated per pod in the kernel; without eBPF, the
// run-queue wait in /proc/<tid>/schedstat of the pods' threads.
package lswait

// The BPF object and its Go bindings are generated and committed, so that
// building needs no clang. Regenerate (needs clang, libbpf-dev and the
// kernel UAPI headers of linux-libc-dev; the kernel types and the cgroup
// key are in the shared bpf/include/yarn_cgroup.h) with:
//
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go@v0.17.3 -cc clang -target bpfel -type hist lswait bpf/lswait.bpf.c -- -O2 -g -Wall -I../../bpf/include -I/usr/include/x86_64-linux-gnu
