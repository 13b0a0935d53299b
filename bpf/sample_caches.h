/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/* Per-CPU caches in front of a sample's fixed-cost lookups (included by profile.bpf.c after
 * its maps): who the sampled thread is (seen_pids, thread_names) and which stacks are stored. */
#ifndef ROOTTRACE_SAMPLE_CACHES_H
#define ROOTTRACE_SAMPLE_CACHES_H

/* A sample looked its pid up in seen_pids and its tid in thread_names: two cold LRU buckets
 * (~2.5 us with the comm), although the answer is nearly always "known, same name". The last
 * answer for a tid is kept per CPU, direct-mapped by tid, and trusted while:
 * - the pid's proc_maps_seq is unchanged (an exec, a forget by user space and note_pid's
 *   exec/reuse path advance it after changing seen_pids), and the thread's start time is the
 *   same (a reused tid, of a reused pid or not: a thread never changes process, and the one
 *   that takes over the pid at a multi-threaded exec is seen by the sequence);
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
	__u64 start_ns; /* the thread's start time */
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
	/* the thread's own, not its leader's: a line of the task the comm's read warms */
	ids->start_ns = bpf_get_current_task_btf()->start_time;
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

/* An entry is one word, hash ^ the generation's mix, written and read in one access: a perf
 * sample (NMI) may interrupt the off-CPU program between two accesses of the same slot. Two
 * (hash, generation) pairs share a word as rarely as two stacks share a 64-bit hash. */
static __always_inline __u64 stack_known__tag(__u64 h, __u32 gen)
{
	return h ^ ((gen + 1) * 0x9e3779b97f4a7c15ULL);
}

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, STACK_KNOWN_SLOTS);
} stack_known_cache SEC(".maps");

/* The slot of hash h, or NULL when the generation moved on since stacks was chosen. */
static __always_inline __u64 *stack_known__slot(const void *stacks, __u64 h, __u32 *ret_gen)
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
	__u64 *k = stack_known__slot(stacks, h, &gen);

	return k && *(volatile __u64 *)k == stack_known__tag(h, gen);
}

/* After h was found in stacks or stored there. */
static __always_inline void stack_known__note(const void *stacks, __u64 h)
{
	__u32 gen = 0;
	__u64 *k = stack_known__slot(stacks, h, &gen);

	if (k)
		*(volatile __u64 *)k = stack_known__tag(h, gen);
}

/* A sample's count goes to a per-CPU batch slot (struct profile_batched in profile.h) instead
 * of the counts map: a steady thread's samples share one key, so most samples touch one line
 * and no hash bucket. Only do_sample writes the batches (it does not nest on a CPU), so plain
 * adds are enough. A slot's entry of an older generation was taken by user space already
 * (it drains the batch of generation g after the flip to g + 1, before g + 2 reuses it). */
#define COUNTS_BATCH_MAP(name)                                                                     \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);                                           \
		__type(key, __u32);                                                                \
		__type(value, struct profile_batched);                                             \
		__uint(max_entries, PROFILE_BATCH_SLOTS);                                          \
	} name SEC(".maps")

COUNTS_BATCH_MAP(counts_batch0);
COUNTS_BATCH_MAP(counts_batch1);

/* Adds n samples of ns to key's entry of counts; false when the map is full. */
static __always_inline bool counts__add(void *counts, const struct profile_key *key, __u64 n,
					__u64 ns)
{
	struct profile_value first = {n, ns}, *val;

	val = bpf_map_lookup_elem(counts, key);
	if (!val) {
		if (!bpf_map_update_elem(counts, key, &first, BPF_NOEXIST))
			return true;
		/* -EEXIST: another CPU inserted the key meanwhile; else the map is full */
		val = bpf_map_lookup_elem(counts, key);
		if (!val)
			return false;
	}
	__sync_fetch_and_add(&val->count, n);
	__sync_fetch_and_add(&val->period_ns, ns);
	return true;
}

static __always_inline bool profile_key__equal(const struct profile_key *a,
					       const struct profile_key *b)
{
	return a->user_stack == b->user_stack && a->kernel_stack == b->kernel_stack &&
	       a->pid == b->pid && a->tid == b->tid && a->cgroup_id == b->cgroup_id &&
	       a->image == b->image;
}

/* One sample of ns under key, in generation gen (counts is that generation's map). What a
 * full map drops is counted, as it was when each sample went to the map. */
static __always_inline void counts_batch__add(__u32 gen, void *counts,
					      const struct profile_key *key, __u64 ns,
					      struct profile_stats *st)
{
	__u32 slot = (__u32)(key->user_stack ^ key->kernel_stack ^ (key->tid * 0x9e3779b1u)) &
		     (PROFILE_BATCH_SLOTS - 1);
	struct profile_batched *b =
	    bpf_map_lookup_elem(gen & 1 ? (void *)&counts_batch1 : (void *)&counts_batch0, &slot);

	if (!b) {
		if (!counts__add(counts, key, 1, ns))
			goto full;
		goto counted;
	}
	if (b->generation == gen && b->value.count) {
		if (profile_key__equal(&b->key, key)) {
			b->value.count++;
			b->value.period_ns += ns;
			goto counted;
		}
		if (!counts__add(counts, &b->key, b->value.count, b->value.period_ns)) {
			/* counted as samples when they were batched */
			__sync_fetch_and_add(&st->map_full, b->value.count);
			__sync_fetch_and_add(&st->map_full_ns, b->value.period_ns);
			__sync_fetch_and_add(&st->samples, -b->value.count);
			__sync_fetch_and_add(&st->samples_ns, -b->value.period_ns);
		}
	}
	b->key = *key;
	b->value.count = 1;
	b->value.period_ns = ns;
	b->generation = gen;
counted:
	__sync_fetch_and_add(&st->samples, 1);
	__sync_fetch_and_add(&st->samples_ns, ns);
	return;
full:
	__sync_fetch_and_add(&st->map_full, 1);
	__sync_fetch_and_add(&st->map_full_ns, ns);
}

#endif
