/* SPDX-License-Identifier: Apache-2.0 */
/* Structs and constants shared by bpf/profile.bpf.c and the sampler (agent/sampler.c):
 * aggregation key/value, per-CPU loss counters and the first-sight ring-buffer event. */
#ifndef ROOTTRACE_PROFILE_H
#define ROOTTRACE_PROFILE_H

#define PROFILE_STACK_DEPTH 127	    /* frames per stack (kernel limit for stack maps) */
#define PROFILE_MAX_STACKS 16384    /* per generation; power of two */
#define PROFILE_MAX_ENTRIES 16384   /* aggregation keys per generation */
#define PROFILE_MAX_SEEN_PIDS 32768 /* LRU of pids already announced to user space */
#define PROFILE_MAX_THREADS 32768   /* LRU of thread names */
#define PROFILE_MAX_EXCLUDED_CGROUPS 1024
#define PROFILE_RINGBUF_BYTES (256 * 1024)
#define PROFILE_COMM_LEN 16

/* user_stack_id of a stack walked by the .eh_frame unwinder: its frames are in the user-stack
 * map of the generation under user_stack_hash. */
#define PROFILE_STACK_UNWOUND (-0x10000)
#define PROFILE_USER_STACK_TRUNCATED 1u /* profile_user_stack.flags: deeper than the cap */

/* Aggregation key: one per distinct (thread, stacks, cgroup). A stack id < 0 means "no stack"
 * (-EFAULT: e.g. no user stack for a kernel thread) or a failed walk (counted in stats). */
struct profile_key {
	__u32 pid; /* tgid */
	__u32 tid;
	__s32 user_stack_id; /* stack-map id, PROFILE_STACK_UNWOUND, or < 0 */
	__s32 kernel_stack_id;
	__u64 cgroup_id; /* cgroup v2 id; 0 on a cgroup v1-only host */
	__u64 user_stack_hash; /* PROFILE_STACK_UNWOUND only, else 0 */
};

/* A user stack from the .eh_frame unwinder, leaf first. ips[n] onwards are not used. */
struct profile_user_stack {
	__u32 n;
	__u32 flags; /* PROFILE_USER_STACK_* */
	__u64 ips[PROFILE_STACK_DEPTH + 1];
};

struct profile_value {
	__u64 count;	 /* samples */
	__u64 period_ns; /* summed actual sample periods (cpu-clock counts nanoseconds) */
};

/* Per-CPU counters (one element of a per-CPU array). Cumulative since load. */
struct profile_stats {
	__u64 samples;	     /* profile samples stored (idle excluded) */
	__u64 samples_ns;
	__u64 idle_samples;  /* pid 0: counted for utilisation, never a profile sample */
	__u64 idle_ns;
	__u64 user_stack_eexist;  /* stack id collision in the stack map */
	__u64 user_stack_other;	  /* -ENOMEM (map full) or another error */
	__u64 kernel_stack_eexist;
	__u64 kernel_stack_other;
	__u64 map_full;	     /* aggregation map full: the sample was dropped */
	__u64 map_full_ns;
	__u64 excluded;	     /* samples of an excluded cgroup (per-service switch) */
	__u64 events_lost;   /* first-sight events dropped (ring buffer full) */
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
	__u64 cgroup_id; /* as in profile_key */
};

enum profile_seen_state {
	PROFILE_SEEN = 1,
	PROFILE_SEEN_EXECED = 2, /* exec'd since it was announced */
};

/* Value of the seen-pids map. The start time tells a reused pid from the process that was
 * announced: on a busy host pids wrap within minutes, and a forked (not exec'd) process must
 * not inherit a dead one's name, symbols and service. */
struct profile_seen {
	__u32 state; /* enum profile_seen_state */
	__u32 pad;
	__u64 start_ns; /* the thread group leader's start_time */
};

struct profile_thread_name {
	char comm[PROFILE_COMM_LEN];
};

#endif
