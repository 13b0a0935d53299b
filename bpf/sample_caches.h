/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/* Per-CPU caches in front of a sample's fixed-cost lookups (included by profile.bpf.c after
 * its maps): who the sampled thread is (seen_pids, thread_names) and which stacks are stored. */
#ifndef ROOTTRACE_SAMPLE_CACHES_H
#define ROOTTRACE_SAMPLE_CACHES_H

/* A sample looked its pid up in seen_pids and its tid in thread_names: two cold LRU buckets
 * (~2.5 us with the comm), although the answer is nearly always "known, same name". The last
 * answer for a tid is kept per CPU, direct-mapped by tid, and trusted while:
 * - the pid's proc_maps_seq is unchanged (an exec, a forget by user space and note_pid's
 *   exec/reuse path advance it after changing seen_pids), and the process start time is the
 *   same (a reused pid);
 * - the tid's thread_name_seq is unchanged (advanced after each thread_names write, so a
 *   CPU's copy of a name another CPU replaced is not trusted), and the comm is the same;
 * - fewer than SAMPLE_IDS_RECHECK hits were served since the LRUs were last looked at: the
 *   lookups are what keep a live thread's entries recent in the LRUs, and one evicted anyway
 *   (more threads than PROFILE_MAX_THREADS) is written again within that many samples. */
#define SAMPLE_IDS_SLOTS 1024
#define SAMPLE_IDS_RECHECK 64

volatile __u32 thread_name_seq[SAMPLE_IDS_SLOTS];

struct sample_ids_cached {
	__u32 tid;
	__u32 pid;
	__u32 pid_seq;	/* proc_maps_seq[pid slot] read before the lookups */
	__u32 name_seq; /* thread_name_seq[tid slot] read before the lookups */
	__u64 start_ns; /* the thread group leader's start time */
	__u64 comm[2];
	__u32 image; /* note_pid's answer */
	__u32 hits;  /* served since the LRUs were looked at */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct sample_ids_cached);
	__uint(max_entries, SAMPLE_IDS_SLOTS);
} sample_ids_cache SEC(".maps");

/* What a sample is checked against, read once: the sequences before any lookup, so a change
 * made meanwhile leaves what is filled from the lookups stale. */
struct sample_ids {
	struct sample_ids_cached *c;
	__u32 pid_seq;
	__u32 name_seq;
	__u64 start_ns;
	__u64 comm[2];
};

/* True when the cached answer for (pid, tid) holds: *ret_image is set, no lookup is needed. */
static __always_inline bool sample_ids__hit(struct sample_ids *ids, __u32 pid, __u32 tid,
					    __u32 *ret_image)
{
	__u32 slot = tid & (SAMPLE_IDS_SLOTS - 1);
	struct sample_ids_cached *c;

	ids->pid_seq = proc_maps_seq[pid & (PROC_MAPS_CACHE_SLOTS - 1)];
	ids->name_seq = thread_name_seq[slot];
	ids->start_ns = bpf_get_current_task_btf()->group_leader->start_time;
	ids->comm[0] = ids->comm[1] = 0;
	bpf_get_current_comm(ids->comm, sizeof(ids->comm));
	c = bpf_map_lookup_elem(&sample_ids_cache, &slot);
	ids->c = c;
	if (!c || c->tid != tid || c->pid != pid || c->pid_seq != ids->pid_seq ||
	    c->name_seq != ids->name_seq || c->start_ns != ids->start_ns ||
	    c->comm[0] != ids->comm[0] || c->comm[1] != ids->comm[1] ||
	    c->hits >= SAMPLE_IDS_RECHECK)
		return false;
	c->hits++;
	*ret_image = c->image;
	return true;
}

/* After the lookups: their answer, under the sequences read before them. */
static __always_inline void sample_ids__fill(const struct sample_ids *ids, __u32 pid, __u32 tid,
					     __u32 image)
{
	struct sample_ids_cached *c = ids->c;

	if (!c)
		return;
	c->tid = tid;
	c->pid = pid;
	c->pid_seq = ids->pid_seq;
	c->name_seq = ids->name_seq;
	c->start_ns = ids->start_ns;
	c->comm[0] = ids->comm[0];
	c->comm[1] = ids->comm[1];
	c->image = image;
	c->hits = 0;
}

/* After a write of thread_names[tid]: other CPUs' cached names of tid are stale. */
static __always_inline void thread_name_changed(__u32 tid)
{
	__sync_fetch_and_add(&thread_name_seq[tid & (SAMPLE_IDS_SLOTS - 1)], 1);
}

/* A stored stack's hash, per CPU, direct-mapped by hash: a stack seen again (most samples of
 * a steady workload) needs no lookup of the generation's stacks map, a cold bucket and entry.
 * An entry says "hash is in the stacks map of generation gen": user space advances
 * `generation` at each drain (the map is gen & 1) and deletes from that map only after the
 * flip and after every program run that read the old value has ended, so an entry is good
 * while `generation` still reads gen. The map a caller writes was chosen from a `generation`
 * read earlier: an entry is only trusted or written when both reads agree on the map. */
#define STACK_KNOWN_SLOTS 1024

struct stack_known {
	__u64 hash;
	__u32 gen;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct stack_known);
	__uint(max_entries, STACK_KNOWN_SLOTS);
} stack_known_cache SEC(".maps");

/* The slot of hash h, or NULL when the generation moved on since stacks was chosen. */
static __always_inline struct stack_known *stack_known__slot(const void *stacks, __u64 h,
							     __u32 *ret_gen)
{
	__u32 gen = generation, slot = (__u32)(h ^ (h >> 32)) & (STACK_KNOWN_SLOTS - 1);

	if ((gen & 1) != (stacks == (const void *)&stacks1))
		return NULL;
	*ret_gen = gen;
	return bpf_map_lookup_elem(&stack_known_cache, &slot);
}

/* True when stacks holds h for certain (it was stored or found there this generation). */
static __always_inline bool stack_known__has(const void *stacks, __u64 h)
{
	__u32 gen = 0;
	struct stack_known *k = stack_known__slot(stacks, h, &gen);

	return k && k->hash == h && k->gen == gen;
}

/* After h was found in stacks or stored there. */
static __always_inline void stack_known__note(const void *stacks, __u64 h)
{
	__u32 gen = 0;
	struct stack_known *k = stack_known__slot(stacks, h, &gen);

	if (k) {
		k->hash = h;
		k->gen = gen;
	}
}

#endif
