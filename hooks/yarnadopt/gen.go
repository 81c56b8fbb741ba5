package yarnadopt

// The BPF object and its Go bindings are generated and committed, so that
// building needs no clang. Regenerate (needs clang, libbpf-dev and the
// kernel UAPI headers of linux-libc-dev; the kernel types and the cgroup
// key are in the shared bpf/include/yarn_cgroup.h) with:
//
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go@v0.17.3 -cc clang -target bpfel -type exec_event execwatch bpf/execwatch.bpf.c -- -O2 -g -Wall -I../../bpf/include -I/usr/include/x86_64-linux-gnu
