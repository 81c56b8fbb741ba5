// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// cgroupwatch reports, through a ring buffer, the creation and removal of
// cgroups directly below the watched parents (the YARN hierarchy roots, one
// per cgroup v1 hierarchy or the unified one) and the processes attached to
// them. Everything else is filtered in the kernel: unrelated cgroups (pods)
// never wake user space.
//
// A parent is keyed by its hierarchy id and its kernfs id: on cgroup v1
// every hierarchy numbers its kernfs nodes on its own, so a kernfs id alone
// names one cgroup in each hierarchy. The default (v2) hierarchy's id is 0.
//
// Events the ring buffer has no room for are counted in "lost" (per CPU);
// user space reads it and resyncs when it grows.
//
// The kernel types and the key are those of yarn_cgroup.h.

#include "yarn_cgroup.h"

enum event_type {
	EVENT_MKDIR = 1,
	EVENT_ATTACH = 2,
	EVENT_RMDIR = 3,
};

struct event {
	__u32 type;
	__u32 pid;
	__u32 hierarchy_id;
	__u32 pad;
	__u64 cgroup_id;
	__u64 parent_id;
	char name[64];
};

// Keep the types in the BTF for the generated Go types.
const struct event *unused_event __attribute__((unused));

// parents holds the watched parents.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct cgroup_key);
	__type(value, __u8);
} parents SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} events SEC(".maps");

// lost counts, per CPU, the events of watched parents dropped because the
// ring buffer was full.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

static __always_inline int emit(__u32 type, struct cgroup *cgrp, __u32 pid)
{
	struct kernfs_node *kn = BPF_CORE_READ(cgrp, kn);
	struct kernfs_node *parent = kn_parent(kn);
	struct cgroup_key key = {};

	key.hierarchy_id = BPF_CORE_READ(cgrp, root, hierarchy_id);
	key.kn_id = BPF_CORE_READ(parent, id);
	if (!bpf_map_lookup_elem(&parents, &key))
		return 0;
	struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__u32 zero = 0;
		__u64 *n = bpf_map_lookup_elem(&lost, &zero);

		if (n)
			__sync_fetch_and_add(n, 1);
		return 0;
	}
	e->type = type;
	e->pid = pid;
	e->hierarchy_id = key.hierarchy_id;
	e->pad = 0;
	e->cgroup_id = BPF_CORE_READ(kn, id);
	e->parent_id = key.kn_id;
	bpf_probe_read_kernel_str(e->name, sizeof(e->name), BPF_CORE_READ(kn, name));
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("tp_btf/cgroup_mkdir")
int BPF_PROG(on_mkdir, struct cgroup *cgrp, const char *path)
{
	return emit(EVENT_MKDIR, cgrp, 0);
}

SEC("tp_btf/cgroup_rmdir")
int BPF_PROG(on_rmdir, struct cgroup *cgrp, const char *path)
{
	return emit(EVENT_RMDIR, cgrp, 0);
}

SEC("tp_btf/cgroup_attach_task")
int BPF_PROG(on_attach, struct cgroup *dst, const char *path, struct task_struct *task, bool threadgroup)
{
	return emit(EVENT_ATTACH, dst, BPF_CORE_READ(task, tgid));
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
