// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/* On-CPU sampler: runs on every cpu-clock sample, aggregates (pid, tid, stacks, cgroup) ->
 * (count, summed period) in the kernel and announces each new pid once via a ring buffer. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "profile.h"

#ifndef EFAULT
#define EFAULT 14
#endif
#ifndef EEXIST
#define EEXIST 17
#endif

char LICENSE[] SEC("license") = "GPL";

/* Set by user space between open and load. */
const volatile __u32 targ_pid = 0; /* 0 = every process */

/* Flipped by user space (mmap'ed .bss): samples go to generation `generation`, user space
 * drains the other one. */
volatile __u32 generation = 0;
volatile __u32 excluded_cgroups_count = 0; /* skip the lookup while nothing is excluded */

/* Two generations of (counts, stacks): user space drains one while samples go to the other.
 * Stacks are keyed by a 64-bit hash of their addresses in a plain hash map, so two stacks
 * never share an entry (the kernel's stack-trace map drops the second stack of a bucket). */
#define STACK_MAP(name)                                                                    \
	struct {                                                                           \
		__uint(type, BPF_MAP_TYPE_HASH);                                           \
		__type(key, __u64);                                                        \
		__type(value, struct profile_stack);                                       \
		__uint(max_entries, PROFILE_MAX_STACKS);                                   \
	} name SEC(".maps")
#define COUNTS_MAP(name)                                                                   \
	struct {                                                                           \
		__uint(type, BPF_MAP_TYPE_HASH);                                           \
		__type(key, struct profile_key);                                           \
		__type(value, struct profile_value);                                       \
		__uint(max_entries, PROFILE_MAX_ENTRIES);                                  \
	} name SEC(".maps")

STACK_MAP(stacks0);
STACK_MAP(stacks1);
COUNTS_MAP(counts0);
COUNTS_MAP(counts1);

/* Where a stack is walked before it is hashed and stored: too large for the BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct profile_stack);
	__uint(max_entries, 1);
} stack_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct profile_stats);
	__uint(max_entries, 1);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, struct profile_seen);
	__uint(max_entries, PROFILE_MAX_SEEN_PIDS);
} seen_pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, struct profile_thread_name);
	__uint(max_entries, PROFILE_MAX_THREADS);
} thread_names SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, __u8);
	__uint(max_entries, PROFILE_MAX_EXCLUDED_CGROUPS);
} excluded_cgroups SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, PROFILE_RINGBUF_BYTES);
} events SEC(".maps");

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

/* FNV-1a over the stack's addresses, never 0 (0 names "no stack"). */
static __always_inline __u64 stack_hash(const struct profile_stack *st)
{
	__u64 h = FNV_OFFSET;

	for (__u32 i = 0; i < PROFILE_STACK_DEPTH; i++) {
		if (i >= st->n)
			break;
		h = (h ^ st->ips[i]) * FNV_PRIME;
	}
	return h ? h : 1;
}

/* Walks one stack (BPF_F_USER_STACK: user frames, by frame pointers) into the scratch
 * buffer and stores it under its hash; returns the hash, 0 when there is none. A stack that
 * is absent (a kernel thread's user stack) is no error; a full map or a failed walk is
 * counted. */
static __always_inline __u64 store_stack(struct bpf_perf_event_data *ctx, void *stacks,
					 __u64 flags, struct profile_stats *st)
{
	bool user = flags & BPF_F_USER_STACK;
	struct profile_stack *buf;
	__u32 zero = 0;
	long len;
	__u64 h;

	buf = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!buf)
		return 0;
	len = bpf_get_stack(ctx, buf->ips, sizeof(buf->ips), flags);
	if (len <= 0) {
		if (len < 0 && len != -EFAULT) /* -EFAULT: no such stack */
			__sync_fetch_and_add(user ? &st->user_stack_other : &st->kernel_stack_other,
					     1);
		return 0;
	}
	buf->n = len / sizeof(__u64);
	h = stack_hash(buf);
	if (bpf_map_lookup_elem(stacks, &h))
		return h;
	/* -EEXIST: another CPU stored it meanwhile; else the map is full */
	if (bpf_map_update_elem(stacks, &h, buf, BPF_NOEXIST) && !bpf_map_lookup_elem(stacks, &h)) {
		__sync_fetch_and_add(user ? &st->user_stack_full : &st->kernel_stack_full, 1);
		return 0;
	}
	return h;
}

static __always_inline void announce(struct profile_stats *st, __u32 pid, __u32 tid, __u32 type,
				     __u32 image, __u64 cgroup_id)
{
	struct profile_event *e;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&st->events_lost, 1);
		return;
	}
	e->type = type;
	e->pid = pid;
	e->tid = tid;
	e->image = image;
	e->cgroup_id = cgroup_id;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, 0);
}

/* Start time of the current process (its thread group leader): with the pid, it names one
 * process for the machine's uptime. */
static __always_inline __u64 process_start_ns(void)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();

	return BPF_CORE_READ(task, group_leader, start_time);
}

/* First sight of a pid, first sample after an exec, or first sample of a new process that
 * reuses a known pid: tell user space to capture it now. Returns the pid's image number,
 * which a reused pid advances as an exec does. */
static __always_inline __u32 note_pid(struct profile_stats *st, __u32 pid, __u32 tid,
				      __u64 cgroup_id)
{
	struct profile_seen now = { .state = PROFILE_SEEN, .start_ns = process_start_ns() };
	struct profile_seen *seen;
	__u32 type;

	seen = bpf_map_lookup_elem(&seen_pids, &pid);
	if (seen && seen->state == PROFILE_SEEN && seen->start_ns == now.start_ns)
		return seen->image;
	if (!seen) {
		/* -EEXIST: another CPU announced it first */
		if (bpf_map_update_elem(&seen_pids, &pid, &now, BPF_NOEXIST))
			return 0;
		announce(st, pid, tid, PROFILE_EVENT_FIRST_SIGHT, 0, cgroup_id);
		return 0;
	}
	if (seen->start_ns != now.start_ns) {
		type = PROFILE_EVENT_PID_REUSED;
		now.image = seen->image + 1;
	} else {
		type = PROFILE_EVENT_EXEC;
		now.image = seen->image; /* advanced by the exec hook */
	}
	*seen = now; /* racing CPUs may both announce: user space recaptures twice, no harm */
	announce(st, pid, tid, type, now.image, cgroup_id);
	return now.image;
}

static __always_inline void note_thread_name(__u32 tid)
{
	union {
		struct profile_thread_name name;
		__u64 words[2];
	} cur = {};
	__u64 *old;

	bpf_get_current_comm(cur.name.comm, sizeof(cur.name.comm));
	old = bpf_map_lookup_elem(&thread_names, &tid);
	if (old && old[0] == cur.words[0] && old[1] == cur.words[1])
		return;
	bpf_map_update_elem(&thread_names, &tid, &cur.name, BPF_ANY);
}

/* User stacks are walked by the kernel with frame pointers (BPF_F_USER_STACK): code built
 * without them, and GCC's frameless leaf functions even with -fno-omit-frame-pointer, lose
 * frames (a leaf's caller is skipped). A DWARF/.eh_frame unwinder would remove this limit. */
SEC("perf_event")
int do_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, tid = (__u32)id, gen = generation, zero = 0;
	__u64 period_ns = ctx->sample_period;
	struct profile_value one = { 1, period_ns }, *val;
	struct profile_key key = {};
	struct profile_stats *st;
	void *counts, *stacks;

	st = bpf_map_lookup_elem(&stats, &zero);
	if (!st)
		return 0;
	if (pid == 0) {
		__sync_fetch_and_add(&st->idle_samples, 1);
		__sync_fetch_and_add(&st->idle_ns, period_ns);
		return 0;
	}
	if (targ_pid && pid != targ_pid)
		return 0;

	key.cgroup_id = bpf_get_current_cgroup_id();
	if (excluded_cgroups_count && bpf_map_lookup_elem(&excluded_cgroups, &key.cgroup_id)) {
		__sync_fetch_and_add(&st->excluded, 1);
		return 0;
	}
	key.pid = pid;
	key.tid = tid;
	key.image = note_pid(st, pid, tid, key.cgroup_id);
	note_thread_name(tid);
	counts = gen & 1 ? (void *)&counts1 : (void *)&counts0;
	stacks = gen & 1 ? (void *)&stacks1 : (void *)&stacks0;
	key.user_stack = store_stack(ctx, stacks, BPF_F_USER_STACK, st);
	key.kernel_stack = store_stack(ctx, stacks, 0, st);

	val = bpf_map_lookup_elem(counts, &key);
	if (val) {
		__sync_fetch_and_add(&val->count, 1);
		__sync_fetch_and_add(&val->period_ns, period_ns);
	} else if (bpf_map_update_elem(counts, &key, &one, BPF_NOEXIST)) {
		/* -EEXIST: another CPU inserted the key meanwhile; else the map is full */
		val = bpf_map_lookup_elem(counts, &key);
		if (!val) {
			__sync_fetch_and_add(&st->map_full, 1);
			__sync_fetch_and_add(&st->map_full_ns, period_ns);
			return 0;
		}
		__sync_fetch_and_add(&val->count, 1);
		__sync_fetch_and_add(&val->period_ns, period_ns);
	}
	__sync_fetch_and_add(&st->samples, 1);
	__sync_fetch_and_add(&st->samples_ns, period_ns);
	return 0;
}

/* After an exec the pid's image changed: mark it so its next sample triggers a recapture, and
 * advance its image number so later samples are told from the old image's. A raw
 * tracepoint attaches by name through bpf(2): unlike tp/, it needs no mounted tracefs (a
 * container usually has none), without which a child first sampled between fork and exec
 * would keep its parent's name, symbols and service. */
SEC("raw_tp/sched_process_exec")
int handle_exec(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	struct profile_seen *seen;

	if (targ_pid && pid != targ_pid)
		return 0;
	seen = bpf_map_lookup_elem(&seen_pids, &pid);
	if (seen) {
		seen->state = PROFILE_SEEN_EXECED;
		seen->image++;
	}
	return 0;
}
