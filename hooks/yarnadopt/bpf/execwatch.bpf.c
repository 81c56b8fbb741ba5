// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// execwatch reports, through a ring buffer, every exec of a process that is
// in one of the watched cgroups (the NodeManager pod's cgroups, where YARN
// containers without cgroups of their own are launched). Everything else is
// filtered in the kernel: an exec elsewhere on the node never wakes user
// space.
//
// A watched cgroup is keyed, as in cgroupwatch, by its hierarchy id and its
// kernfs id (the directory's inode number). The process's cgroup is read in
// the default (v2) hierarchy (hierarchy id 0) and in the cpu controller's
// hierarchy (its v1 hierarchy on a v1 host): one of them matches on either
// kind of node.
//
// Events the ring buffer has no room for are counted in "lost" (per CPU);
// user space then falls back to its scan at once.

#include "yarn_cgroup.h"

struct linux_binprm;

struct exec_event {
	__u32 pid;
	__u32 hierarchy_id;
	__u64 cgroup_id;
	__u64 ktime_ns;
};

// Keep the types in the BTF for the generated Go types.
const struct exec_event *unused_exec_event __attribute__((unused));

// watched holds the watched cgroups.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct cgroup_key);
	__type(value, __u8);
} watched SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 18);
} execs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

static __always_inline int match(struct cgroup *cgrp, struct cgroup_key *key)
{
	if (!cgrp)
		return 0;
	cgroup_key_of(cgrp, key);
	return bpf_map_lookup_elem(&watched, key) != 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, int old_pid, struct linux_binprm *bprm)
{
	struct cgroup_key key = {};
	struct css_set *cset = BPF_CORE_READ(p, cgroups);

	if (!match(BPF_CORE_READ(cset, dfl_cgrp), &key) && !match(cpu_cgroup(cset), &key))
		return 0;
	struct exec_event *e = bpf_ringbuf_reserve(&execs, sizeof(*e), 0);
	if (!e) {
		__u32 zero = 0;
		__u64 *n = bpf_map_lookup_elem(&lost, &zero);

		if (n)
			__sync_fetch_and_add(n, 1);
		return 0;
	}
	e->pid = BPF_CORE_READ(p, tgid);
	e->hierarchy_id = key.hierarchy_id;
	e->cgroup_id = key.kn_id;
	e->ktime_ns = bpf_ktime_get_ns();
	bpf_ringbuf_submit(e, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
