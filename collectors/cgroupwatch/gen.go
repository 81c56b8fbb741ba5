// Package cgroupwatch tells the container store within milliseconds when a
// YARN container cgroup is created, gets a process or is removed: eBPF
// programs on the kernel's cgroup tracepoints (filtered in the kernel to the
// YARN hierarchy), with inotify and polling as fallbacks.
package cgroupwatch

// The BPF object and its Go bindings are generated and committed, so that
// building needs no clang. Regenerate (needs clang, libbpf-dev and the
// kernel UAPI headers of linux-libc-dev; the kernel types and the cgroup
// key are in the shared bpf/include/yarn_cgroup.h) with:
//
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go@v0.17.3 -cc clang -target bpfel -type event cgroupwatch bpf/cgroupwatch.bpf.c -- -O2 -g -Wall -I../../bpf/include -I/usr/include/x86_64-linux-gnu
