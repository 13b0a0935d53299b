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

/* Two generations of (counts, stacks): stack ids are only meaningful in their own map. */
#define STACK_MAP(name)                                                                    \
	struct {                                                                           \
		__uint(type, BPF_MAP_TYPE_STACK_TRACE);                                    \
		__uint(key_size, sizeof(__u32));                                           \
		__uint(value_size, PROFILE_STACK_DEPTH * sizeof(__u64));                   \
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

static __always_inline void count_stack_error(struct profile_stats *st, int err, bool user)
{
	if (err >= 0 || err == -EFAULT) /* -EFAULT: no such stack (user mode, kernel thread) */
		return;
	/* -EEXIST: stack id collision, map too small; else -ENOMEM and friends */
	if (user) {
		if (err == -EEXIST)
			__sync_fetch_and_add(&st->user_stack_eexist, 1);
		else
			__sync_fetch_and_add(&st->user_stack_other, 1);
	} else {
		if (err == -EEXIST)
			__sync_fetch_and_add(&st->kernel_stack_eexist, 1);
		else
			__sync_fetch_and_add(&st->kernel_stack_other, 1);
	}
}

static __always_inline void announce(struct profile_stats *st, __u32 pid, __u32 tid, __u32 type,
				     __u64 cgroup_id)
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
 * reuses a known pid: tell user space to capture it now. */
static __always_inline void note_pid(struct profile_stats *st, __u32 pid, __u32 tid,
				     __u64 cgroup_id)
{
	struct profile_seen now = { .state = PROFILE_SEEN, .start_ns = process_start_ns() };
	struct profile_seen *seen;
	__u32 type;

	seen = bpf_map_lookup_elem(&seen_pids, &pid);
	if (seen && seen->state == PROFILE_SEEN && seen->start_ns == now.start_ns)
		return;
	if (!seen) {
		/* -EEXIST: another CPU announced it first */
		if (bpf_map_update_elem(&seen_pids, &pid, &now, BPF_NOEXIST))
			return;
		announce(st, pid, tid, PROFILE_EVENT_FIRST_SIGHT, cgroup_id);
		return;
	}
	type = seen->start_ns != now.start_ns ? PROFILE_EVENT_PID_REUSED : PROFILE_EVENT_EXEC;
	*seen = now; /* racing CPUs may both announce: user space recaptures twice, no harm */
	announce(st, pid, tid, type, cgroup_id);
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
	void *counts;

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
	if (gen & 1) {
		key.user_stack_id = bpf_get_stackid(ctx, &stacks1, BPF_F_USER_STACK);
		key.kernel_stack_id = bpf_get_stackid(ctx, &stacks1, 0);
		counts = &counts1;
	} else {
		key.user_stack_id = bpf_get_stackid(ctx, &stacks0, BPF_F_USER_STACK);
		key.kernel_stack_id = bpf_get_stackid(ctx, &stacks0, 0);
		counts = &counts0;
	}
	count_stack_error(st, key.user_stack_id, true);
	count_stack_error(st, key.kernel_stack_id, false);

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

	note_thread_name(tid);
	note_pid(st, pid, tid, key.cgroup_id);
	return 0;
}

/* After an exec the pid's image changed: mark it so its next sample triggers a recapture. A raw
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
	if (seen)
		seen->state = PROFILE_SEEN_EXECED;
	return 0;
}
