/* SPDX-License-Identifier: Apache-2.0 */
/* Structs and constants of the off-CPU sampler (bpf/profile.bpf.c's sched_switch program)
 * shared with the sampler: per-thread block records, the per-tgid filter, counters, and the
 * 1-in-N event sampling rule with its weight, capped per CPU by the block rate. */
#ifndef ROOTTRACE_OFFCPU_H
#define ROOTTRACE_OFFCPU_H

#define OFFCPU_MAX_STARTS 32768	 /* threads blocked at once (LRU: the oldest block goes) */
#define OFFCPU_MAX_ENTRIES 16384 /* aggregation keys per generation */
#define OFFCPU_MAX_TGIDS 32768	 /* the per-process filter */
#define OFFCPU_MAX_SAMPLE_EVERY 1024

/* Announcement on the sampler's ring buffer (struct profile_event), beside
 * enum profile_event_type's values: a process blocked that the filter does not know yet. */
#define OFFCPU_EVENT_UNKNOWN_TGID 16

/* Value of the per-tgid filter map. Absent: unknown (announced once, then PENDING). */
enum offcpu_tgid_state {
	OFFCPU_TGID_PENDING = 1, /* announced, user space has not decided: not recorded */
	OFFCPU_TGID_ALLOW = 2,
	OFFCPU_TGID_DENY = 3,
};

/* Filter modes (offcpu_mode in the BPF object's .bss). */
enum offcpu_mode {
	OFFCPU_MODE_ALL = 0,   /* every user process but the agent's own (record) */
	OFFCPU_MODE_ALLOW = 1, /* only tgids the filter map allows (the daemon, per service) */
};

/* Where a kept block happened: written at switch-out, charged and deleted at switch-in. */
struct offcpu_start {
	__u64 block_ns;	  /* switch-out, CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	__u64 queued_ns;  /* the thread's run-queue wait so far (sched_info) at switch-out: the */
			  /* growth at switch-in is its runnable time after the wake-up */
	__u64 user_stack; /* hashes into the stacks map of generation gen */
	__u64 kernel_stack;
	__u64 cgroup_id;
	__u32 pid;    /* tgid */
	__u32 image;  /* as in profile_key */
	__u32 gen;    /* generation whose stacks map holds the stacks */
	__u32 weight; /* the 1-in-N it was kept at: its blocked time counts N times */
};

/* Task-local storage of a thread that had a kept block: whether one is pending, so that a
 * switch-in makes no other lookup when none is. */
struct offcpu_task {
	__u32 pending;
	__u32 unused;
};

/* Per-CPU counters, cumulative since load. Weighted values are estimates of the whole. */
struct offcpu_stats {
	__u64 switches;	    /* sched_switch runs while attached */
	__u64 blocks;	    /* switch-outs of user threads to a blocked state (with --pid, of */
			    /* that process; per service, before the filter: kept ones are */
			    /* filtered) */
	__u64 kept;	    /* of them kept by 1-in-N sampling and walked */
	__u64 charged;	    /* blocks charged at switch-in (not weighted) */
	__u64 blocked_ns;   /* weighted blocked time charged */
	__u64 runqueue_ns;  /* weighted wake-up -> switch-in time: runnable, neither on nor off */
	__u64 below_min;    /* blocks shorter than the minimum, dropped */
	__u64 below_min_ns; /* weighted */
	__u64 map_full;	    /* aggregation map full: the block was dropped */
	__u64 map_full_ns;
	__u64 stack_lost; /* the block's stacks were gone when it was charged ([unknown]) */
	__u64 starts_full;
	__u64 announce_lost; /* announcements of an unknown process the full ring buffer lost: */
			     /* unknown again, announced at its next kept block */
	__u64 stale; /* user space's: block records from before a detach, dropped at re-attach */
};

/* 1-in-N event sampling: a block is kept when a uniform 32-bit random number falls below
 * 2^32 / N, i.e. with probability p = floor(2^32 / N) / 2^32, and a kept block is weighted by
 * 1 / p (as a fixed-point weight). E[weight * kept] = 1, so the weighted sum of kept blocked
 * times is an unbiased estimate of the total, whatever the workload's pattern (a counter
 * keeping every Nth would alias with periodic switching such as a ping-pong pair). */
static inline __u32 offcpu_keep_below(__u32 sample_every)
{
	if (sample_every <= 1)
		return 0; /* keep all */
	return (__u32)(0x100000000ULL / sample_every);
}

/* Weight of a kept block, in 1/65536ths (exact for powers of two). */
#define OFFCPU_WEIGHT_ONE 65536u
static inline __u32 offcpu_weight(__u32 keep_below)
{
	if (!keep_below)
		return OFFCPU_WEIGHT_ONE;
	return (__u32)((0x100000000ULL * OFFCPU_WEIGHT_ONE + keep_below / 2) / keep_below);
}

static inline int offcpu_kept(__u32 random, __u32 keep_below)
{
	return !keep_below || random < keep_below;
}

/* The cap on kept blocks per CPU per second (the daemon's default; 0 in the rate below means
 * no cap): at ~50,000 switches a second the 1-in-N rule alone keeps hundreds of blocks a second,
 * whose stack walks (several us each, cache-cold) cost more than the rest of the hook. */
#define OFFCPU_DEFAULT_MAX_KEPT_PER_CPU_S 50
#define OFFCPU_MAX_KEPT_PER_CPU_S 100000
/* A CPU's block rate is measured over windows of this many blocks (one clock read each). */
#define OFFCPU_RATE_WINDOW_BLOCKS 128
/* The cap never keeps fewer than 1 block in 2^15: the weight stays below 2^31. */
#define OFFCPU_MIN_KEEP_BELOW (1u << 17)

/* Per-CPU state of the cap: the current window, and the keep-below it set for the next one,
 * from the rate the last window measured. A block's probability of being kept depends only on
 * blocks before it, never on its own draw, so weight = 1 / P(kept) keeps E[weight * kept] = 1
 * and the weighted total unbiased under any change of rate. */
struct offcpu_rate {
	__u64 window_start_ns;
	__u32 window_blocks;
	__u32 cap_below; /* 0: the last window was within the cap */
	__u32 cap_weight;
	__u32 unused;
};

/* The keep-below that keeps at most max_kept_per_s of blocks_per_s (0: no cap needed). */
static inline __u32 offcpu_cap_below(__u64 blocks_per_s, __u32 max_kept_per_s)
{
	__u64 below;

	if (!max_kept_per_s || blocks_per_s <= max_kept_per_s)
		return 0;
	below = ((__u64)max_kept_per_s << 32) / blocks_per_s;
	return below < OFFCPU_MIN_KEEP_BELOW ? OFFCPU_MIN_KEEP_BELOW : (__u32)below;
}

/* Counts one block on this CPU; every OFFCPU_RATE_WINDOW_BLOCKS blocks (now_ns read by the
 * caller only then: offcpu_rate_due()) the window's rate sets the cap of the next. */
static inline int offcpu_rate_due(struct offcpu_rate *r)
{
	return ++r->window_blocks >= OFFCPU_RATE_WINDOW_BLOCKS;
}

static inline void offcpu_rate_close(struct offcpu_rate *r, __u64 now_ns, __u32 max_kept_per_s)
{
	__u64 elapsed = now_ns - r->window_start_ns;

	r->cap_below = 0;
	if (r->window_start_ns && now_ns > r->window_start_ns) /* the first window: no rate yet */
		r->cap_below =
		    offcpu_cap_below(r->window_blocks * 1000000000ULL / elapsed, max_kept_per_s);
	r->cap_weight = offcpu_weight(r->cap_below);
	r->window_start_ns = now_ns;
	r->window_blocks = 0;
}

/* The keep-below and weight of the next block: the base 1-in-N rule's, or the cap's when it
 * keeps fewer (keep_below 0 keeps every block: the largest probability). */
static inline __u32 offcpu_rate_below(const struct offcpu_rate *r, __u32 base_below,
				      __u32 base_weight, __u32 *ret_weight)
{
	if (r->cap_below && (!base_below || r->cap_below < base_below)) {
		*ret_weight = r->cap_weight;
		return r->cap_below;
	}
	*ret_weight = base_weight;
	return base_below;
}

#endif
