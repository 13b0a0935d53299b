/* SPDX-License-Identifier: Apache-2.0 */
/* Structs and constants shared by bpf/profile.bpf.c and the sampler (agent/sampling/sampler.c):
 * aggregation key/value, per-CPU loss counters and the first-sight ring-buffer event. */
#ifndef ROOTTRACE_PROFILE_H
#define ROOTTRACE_PROFILE_H

#define PROFILE_STACK_DEPTH 127	    /* frames per stack (kernel limit for stack maps) */
#define PROFILE_MAX_STACKS 16384    /* distinct stacks per generation */
#define PROFILE_MAX_ENTRIES 16384   /* aggregation keys per generation */
#define PROFILE_MAX_SEEN_PIDS 32768 /* LRU of pids already announced to user space */
#define PROFILE_MAX_THREADS 32768   /* LRU of thread names */
#define PROFILE_MAX_EXCLUDED_CGROUPS 1024
#define PROFILE_RINGBUF_BYTES (256 * 1024)
#define PROFILE_COMM_LEN 16

#define PROFILE_STACK_TRUNCATED 1u /* profile_stack.flags: deeper than the cap */

/* Aggregation key: one per distinct (thread, image, stacks, cgroup). A stack is named by a
 * 64-bit hash of its addresses, the key of its entry in the stacks map; 0 means "no stack"
 * (e.g. no user stack for a kernel thread) or a failed walk (counted in stats). */
struct profile_key {
	__u32 pid; /* tgid */
	__u32 tid;
	__u64 user_stack;
	__u64 kernel_stack;
	__u64 cgroup_id; /* cgroup v2 id; 0 on a cgroup v1-only host */
	__u32 image;	 /* the pid's image: profile_seen.image when sampled */
	__u32 pad;
};

/* Value of the stacks maps: a stack's addresses, leaf first; ips[n] onwards are not used.
 * Kernel stacks and frame-pointer user stacks come from bpf_get_stack, table-unwound user
 * stacks from the .eh_frame unwinder (one more slot: the walk marks truncation there). */
struct profile_stack {
	__u32 n;
	__u32 flags; /* PROFILE_STACK_* */
	__u64 ips[PROFILE_STACK_DEPTH + 1];
};

struct profile_value {
	__u64 count;	 /* samples */
	__u64 period_ns; /* summed actual sample periods (cpu-clock counts nanoseconds) */
};

/* Per-CPU counters (one element of a per-CPU array). Cumulative since load. */
struct profile_stats {
	__u64 samples; /* profile samples stored (idle excluded) */
	__u64 samples_ns;
	__u64 idle_samples; /* pid 0: counted for utilisation, never a profile sample */
	__u64 idle_ns;
	__u64 user_stack_full;	/* the stacks map was full: the stack was dropped */
	__u64 user_stack_other; /* the walk failed (-EFAULT, ...) */
	__u64 kernel_stack_full;
	__u64 kernel_stack_other;
	__u64 map_full; /* aggregation map full: the sample was dropped */
	__u64 map_full_ns;
	__u64 excluded;	   /* samples of an excluded cgroup (per-service switch) */
	__u64 events_lost; /* first-sight events dropped (ring buffer full) */
};

enum profile_event_type {
	PROFILE_EVENT_FIRST_SIGHT = 1, /* a pid was sampled for the first time */
	PROFILE_EVENT_EXEC = 2,	       /* a pid that exec'd was sampled: capture the new image */
	PROFILE_EVENT_PID_REUSED = 3,  /* a known pid is a new process (other start time) */
};

struct profile_event {
	__u32 type; /* enum profile_event_type */
	__u32 pid;
	__u32 tid;
	char comm[PROFILE_COMM_LEN];
	__u32 image;	 /* as in profile_key */
	__u64 cgroup_id; /* as in profile_key */
	/* the process's start (its leader's fork), CLOCK_MONOTONIC ns: one announced in its
	 * first moments may have been sampled while its dynamic loader still mapped libraries */
	__u64 start_ns;
};

enum profile_seen_state {
	PROFILE_SEEN = 1,
	PROFILE_SEEN_EXECED = 2, /* exec'd since it was announced */
};

/* Value of the seen-pids map. The start time tells a reused pid from the process that was
 * announced: on a busy host pids wrap within minutes, and a forked (not exec'd) process must
 * not inherit a dead one's name, symbols and service. The image number counts the pid's
 * execs (and reuses): samples of the old image that share a window with the new one are
 * named against the old image's mappings, not the new one's. */
struct profile_seen {
	__u32 state; /* enum profile_seen_state */
	__u32 image;
	__u64 start_ns; /* the thread group leader's start_time */
};

struct profile_thread_name {
	char comm[PROFILE_COMM_LEN];
};

/* Value of the per-CPU count batches (counts_batch0/1, by generation & 1, PROFILE_BATCH_SLOTS
 * slots direct-mapped by key): a key's samples are added here, without a hash lookup or an
 * atomic, and go to the counts map when another key takes the slot. The generation they were
 * taken in: user space adds the drained generation's to its counts map before taking it. */
#define PROFILE_BATCH_SLOTS 256
struct profile_batched {
	struct profile_key key;
	struct profile_value value;
	__u32 generation;
	__u32 pad;
};

#endif
