package yarnadopt

// The BPF object and its Go bindings are generated and committed, so that
// building needs no clang. Regenerate (needs clang, libbpf-dev and the
// kernel UAPI headers of linux-libc-dev) with:
//
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go@v0.17.3 -cc clang -target bpfel -type exec_event -type cgroup_key execwatch bpf/execwatch.bpf.c -- -O2 -g -Wall -I/usr/include/x86_64-linux-gnu
