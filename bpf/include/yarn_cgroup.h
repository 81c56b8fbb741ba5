// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// yarn_cgroup.h: what the plugin set's BPF programs (cgroupwatch, lswait,
// execwatch) share: the few kernel types they read, declared with CO-RE
// relocations instead of a generated vmlinux.h, and the key naming a cgroup
// on the node. Each struct holds the union of the fields the programs read;
// CO-RE relocates only the fields a program reads, so a field one program
// does not use costs it nothing. Types only one program reads stay in it.

#ifndef YARN_CGROUP_H
#define YARN_CGROUP_H

#include <linux/types.h>
#include <linux/bpf.h>
typedef _Bool bool;
#define true 1
#define false 0

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

struct kernfs_node {
	const char *name;
	__u64 id;
} __attribute__((preserve_access_index));

// kernfs_node's parent was renamed __parent in Linux 6.15.
struct kernfs_node___new {
	struct kernfs_node *__parent;
} __attribute__((preserve_access_index));

struct kernfs_node___old {
	struct kernfs_node *parent;
} __attribute__((preserve_access_index));

struct cgroup_root {
	int hierarchy_id;
} __attribute__((preserve_access_index));

struct cgroup {
	struct kernfs_node *kn;
	struct cgroup_root *root;
} __attribute__((preserve_access_index));

struct cgroup_subsys_state {
	struct cgroup *cgroup;
} __attribute__((preserve_access_index));

enum cgroup_subsys_id {
	cpu_cgrp_id = 0,
};

struct css_set {
	struct cgroup_subsys_state *subsys[0];
	struct cgroup *dfl_cgrp;
} __attribute__((preserve_access_index));

struct task_struct {
	int pid;
	int tgid;
	unsigned int __state;
	struct css_set *cgroups;
} __attribute__((preserve_access_index));

// cgroup_key names a cgroup on the node: its hierarchy id (0 for the
// default, v2, hierarchy) and its kernfs id (the directory's inode number).
// On cgroup v1 every hierarchy numbers its kernfs nodes on its own, so a
// kernfs id alone names one cgroup in each hierarchy. User space's
// cgroups.Key has this layout.
struct cgroup_key {
	__u32 hierarchy_id;
	__u32 pad;
	__u64 kn_id;
};

// cgroup_key_of fills key with cgrp's hierarchy and kernfs ids.
static __always_inline void cgroup_key_of(struct cgroup *cgrp, struct cgroup_key *key)
{
	key->hierarchy_id = BPF_CORE_READ(cgrp, root, hierarchy_id);
	key->pad = 0;
	key->kn_id = BPF_CORE_READ(cgrp, kn, id);
}

// kn_parent returns kn's parent, under either name of the field.
static __always_inline struct kernfs_node *kn_parent(struct kernfs_node *kn)
{
	if (bpf_core_field_exists(((struct kernfs_node___new *)0)->__parent))
		return BPF_CORE_READ((struct kernfs_node___new *)kn, __parent);
	return BPF_CORE_READ((struct kernfs_node___old *)kn, parent);
}

// cpu_cgroup returns the cgroup of cset in the cpu controller's hierarchy
// (its v1 hierarchy on a v1 host), or 0.
static __always_inline struct cgroup *cpu_cgroup(struct css_set *cset)
{
	struct cgroup_subsys_state *css = 0;
	int cpu = bpf_core_enum_value(enum cgroup_subsys_id, cpu_cgrp_id);

	bpf_core_read(&css, sizeof(css), &cset->subsys[cpu]);
	if (!css)
		return 0;
	return BPF_CORE_READ(css, cgroup);
}

#endif // YARN_CGROUP_H
