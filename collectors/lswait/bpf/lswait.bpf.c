// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// lswait measures how long the tasks of latency-sensitive (LS) pods wait
// for a CPU: from the moment a task becomes runnable (woken up, or
// preempted while still runnable) until the scheduler switches it in. The
// waits are aggregated in the kernel, per pod ("slot"), into a log-linear
// histogram (four buckets per power of two of microseconds) and a sum;
// user space reads and differences them each interval. Nothing is sent per
// event.
//
// A watched cgroup is keyed, as in cgroupwatch and execwatch, by its
// hierarchy id and kernfs id; the task's cgroup is read in the default (v2)
// hierarchy and in the cpu controller's hierarchy (v1), so one of them
// matches on either kind of node. User space lists every cgroup of an LS
// pod (the pod's and its containers') with the pod's slot, and the roots of
// batch work: the YARN hierarchy and the BE pods' cgroups. A wait counts as
// interference only when the CPU was last held by a task below one of those
// roots: the waits behind kernel threads, kubelet, the runtime, the
// NodeManager or DaemonSets are not what throttling YARN can shorten.
//
// Older kernels (5.10–5.15): the start of a wait is kept in a preallocated
// hash by thread id, not in task storage (5.10 has none for tracing
// programs, and allocating it under the run-queue lock of sched_wakeup can
// wake kswapd and deadlock before the kernels that allocate it from
// bpf_mem_alloc); whether prev is still runnable is read from its state
// field (__state since 5.14, state before), not from sched_switch's
// prev_state argument (5.18+).

#include "yarn_cgroup.h"

// Before 5.14 the state was a long named state.
struct task_struct___old {
	long state;
} __attribute__((preserve_access_index));

#define NBUCKETS 128
#define MAX_SLOTS 256
// MAX_DEPTH is how many cgroups up from a task's own a batch root is
// looked for (the task's cgroup included).
#define MAX_DEPTH 8
// MAX_WAITING bounds the LS threads waiting for a CPU at once (a wait that
// finds the table full is not timed).
#define MAX_WAITING 16384

// hist is one pod's waits: buckets[0] counts waits under 1 µs; a wait of
// v µs (v ≥ 1, l = floor(log2 v)) is in bucket 1 + 4l + the two bits of v
// after its leading one. sum_ns is the total wait. others and others_sum_ns
// count the same waits as the interference of batch work: a wait whose CPU
// was last held by a task below a batch root (YARN, BE pods) as it was,
// every other wait (behind LS tasks, daemons, kernel threads, the idle
// task) as zero.
struct hist {
	__u64 buckets[NBUCKETS];
	__u64 sum_ns;
	__u64 others[NBUCKETS];
	__u64 others_sum_ns;
};

struct start {
	__u64 ts;
	__u32 slot;
	__u32 pad;
};

// Keep the types in the BTF for the generated Go types.
const struct hist *unused_hist __attribute__((unused));

// hierarchies says where a task's cgroup is looked up: 1 the default (v2)
// hierarchy only, 2 the cpu controller's (v1) only, 3 both. Set by the
// loader: one hash lookup per event instead of two.
volatile const __u32 hierarchies = 3;

// watched maps an LS cgroup to its pod's slot.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct cgroup_key);
	__type(value, __u32);
} watched SEC(".maps");

// batch holds the roots of batch work (value unused).
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct cgroup_key);
	__type(value, __u8);
} batch SEC(".maps");

// starts holds a runnable LS thread's start of wait by thread id, deleted
// when it gets the CPU. Preallocated: no allocation under the run-queue
// lock.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_WAITING);
	__type(key, __u32);
	__type(value, struct start);
} starts SEC(".maps");

// hists is one shared array (atomic adds), not per CPU: its size
// (MAX_SLOTS × 2 KiB) does not grow with the node's CPUs.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_SLOTS);
	__type(key, __u32);
	__type(value, struct hist);
} hists SEC(".maps");

static __always_inline __u32 *lookup(struct cgroup *cgrp)
{
	struct cgroup_key key = {};

	if (!cgrp)
		return 0;
	cgroup_key_of(cgrp, &key);
	return bpf_map_lookup_elem(&watched, &key);
}

static __always_inline __u32 *slot_of(struct task_struct *p)
{
	struct css_set *cset = BPF_CORE_READ(p, cgroups);
	__u32 *slot;

	if (hierarchies & 1) {
		slot = lookup(BPF_CORE_READ(cset, dfl_cgrp));
		if (slot || !(hierarchies & 2))
			return slot;
	}
	return lookup(cpu_cgroup(cset));
}

// under_batch says whether cgrp or one of its ancestors is a batch root.
static __always_inline bool under_batch(struct cgroup *cgrp)
{
	struct cgroup_key key = {};
	struct kernfs_node *kn;

	if (!cgrp)
		return false;
	key.hierarchy_id = BPF_CORE_READ(cgrp, root, hierarchy_id);
	kn = BPF_CORE_READ(cgrp, kn);
	for (int i = 0; i < MAX_DEPTH; i++) {
		if (!kn)
			return false;
		key.kn_id = BPF_CORE_READ(kn, id);
		if (bpf_map_lookup_elem(&batch, &key))
			return true;
		kn = kn_parent(kn);
	}
	return false;
}

static __always_inline bool is_batch(struct task_struct *p)
{
	struct css_set *cset = BPF_CORE_READ(p, cgroups);

	if ((hierarchies & 1) && under_batch(BPF_CORE_READ(cset, dfl_cgrp)))
		return true;
	return (hierarchies & 2) && under_batch(cpu_cgroup(cset));
}

// runnable says whether a task switched out is still runnable (state 0).
static __always_inline bool runnable(struct task_struct *p)
{
	if (bpf_core_field_exists(p->__state))
		return BPF_CORE_READ(p, __state) == 0;
	return BPF_CORE_READ((struct task_struct___old *)p, state) == 0;
}

static __always_inline void enqueue(struct task_struct *p)
{
	if (!p)
		return;
	__u32 tid = BPF_CORE_READ(p, pid);
	if (tid == 0)
		return;
	__u32 *slot = slot_of(p);
	if (!slot)
		return;
	struct start s = {.ts = bpf_ktime_get_ns(), .slot = *slot};
	bpf_map_update_elem(&starts, &tid, &s, BPF_ANY);
}

static __always_inline __u32 log2_u32(__u32 v)
{
	__u32 r, shift;

	r = (v > 0xFFFF) << 4; v >>= r;
	shift = (v > 0xFF) << 3; v >>= shift; r |= shift;
	shift = (v > 0xF) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}

static __always_inline __u32 bucket(__u64 ns)
{
	__u64 us = ns / 1000;

	if (us == 0)
		return 0;
	if (us > 0xFFFFFFFF)
		return NBUCKETS - 1;
	__u32 v = us;
	__u32 l = log2_u32(v);
	__u32 sub = l >= 2 ? (v >> (l - 2)) & 3 : (v << (2 - l)) & 3;
	__u32 b = 1 + 4 * l + sub;
	return b < NBUCKETS ? b : NBUCKETS - 1;
}

// idx masks a bucket to the array in an instruction the compiler cannot
// drop (it knows bucket() is in range; older verifiers, 6.1's, do not), so
// that every verifier sees the access bounded. NBUCKETS is a power of two.
static __always_inline __u64 idx(__u32 b)
{
	__u64 i = b;

	asm volatile("%[i] &= 127" : [i] "+r"(i));
	return i;
}

#define IDX(b) idx(b)

static __always_inline void dequeue(struct task_struct *p, struct task_struct *prev)
{
	if (!p)
		return;
	__u32 tid = BPF_CORE_READ(p, pid);
	if (tid == 0)
		return;
	struct start *s = bpf_map_lookup_elem(&starts, &tid);
	if (!s)
		return;
	__u64 now = bpf_ktime_get_ns();
	__u64 d = now > s->ts ? now - s->ts : 0;
	__u32 slot = s->slot;
	bpf_map_delete_elem(&starts, &tid);
	struct hist *h = bpf_map_lookup_elem(&hists, &slot);
	if (!h)
		return;
	__u32 b = bucket(d);
	__sync_fetch_and_add(&h->buckets[IDX(b)], 1);
	__sync_fetch_and_add(&h->sum_ns, d);
	// Behind whom: the task this CPU ran before it, if batch.
	if (prev && BPF_CORE_READ(prev, pid) != 0 && !slot_of(prev) && is_batch(prev)) {
		__sync_fetch_and_add(&h->others[IDX(b)], 1);
		__sync_fetch_and_add(&h->others_sum_ns, d);
	} else {
		__sync_fetch_and_add(&h->others[0], 1);
	}
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_wakeup, struct task_struct *p)
{
	enqueue(p);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(on_wakeup_new, struct task_struct *p)
{
	enqueue(p);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	// A task switched out while still runnable (preempted, or yielding)
	// waits again from now. Its state, not the prev_state argument (only
	// 5.18+ has it): a wake-up racing with the switch shows TASK_WAKING
	// there, and its sched_wakeup starts the wait.
	if (preempt || runnable(prev))
		enqueue(prev);
	dequeue(next, prev);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
