/* SPDX-License-Identifier: Apache-2.0 */
/* One profiling window after symbolisation: plain structs handed from the record pipeline
 * (sample -> aggregate -> symbolise) to the encoder and the uploader. */
#ifndef ROOTTRACE_WINDOW_H
#define ROOTTRACE_WINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct window_frame {
	const char *function; /* interned in the window; "[unknown]" when unnamed */
	const char *module;   /* interned; binary path, "[kernel]", "[jit:v8]", "[jit]" or "" */
	const char *build_id; /* interned; "" when none */
	const char *file;     /* interned; a JIT function's source file, "" (or NULL) when none */
	/* A native frame in a file-backed mapping: its address as an offset in module's file (pc
	 * - mapping start + mapping offset; a caller's return address - 1), for the collector to
	 * resolve to a line on demand. has_offset false for kernel, JIT and interpreter frames. */
	uint64_t file_offset;
	bool has_offset;
};

struct window_sample {
	pid_t pid;
	pid_t tid;
	const char *comm;   /* process name (interned) */
	const char *thread; /* thread name (interned) */
	uint64_t cgroup_id; /* cgroup v2 id from BPF (0 when unavailable) */
	const char *cgroup; /* interned cgroup path (cgroup.h picks it) captured when the process
			     * was first seen; NULL when not captured (record mode, unknown) */
	const char *exe;    /* interned executable path, captured with the cgroup; NULL when
			     * unknown or none (kernel threads) */
	/* leaf first: kernel frames, then user frames; in a window, shared by every sample of
	 * the same stack (window_stacks.h) */
	const struct window_frame *frames;
	uint32_t n_frames;  /* 32 bits and the two flags beside it: 96 bytes a sample, not 120 */
	bool kernel_thread; /* captured with the cgroup (false when not captured) */
	/* An off-CPU sample (type offcpu, never merged with cpu): count and cpu_ns are 0, tid is
	 * 0 (aggregated per process), and offcpu_ns and offcpu_blocks hold the blocked time,
	 * weighted by the event sampling, and the blocks kept. */
	bool offcpu;
	uint64_t count;	 /* samples */
	uint64_t cpu_ns; /* summed actual sample periods */
	uint64_t offcpu_ns;
	uint64_t offcpu_blocks;
};

/* Why a table walk of a user stack ended before a stop frame. */
enum window_unwind_end {
	WINDOW_UNWIND_END_NO_MAPPING, /* pc in no executable mapping */
	WINDOW_UNWIND_END_CANNOT,     /* a rule the unwinder does not understand */
	WINDOW_UNWIND_END_BAD_CFA,    /* sanity check: CFA not above sp or misaligned */
	WINDOW_UNWIND_END_READ,	      /* stack memory unreadable */
	WINDOW_UNWIND_END_NO_ROW,     /* pc outside its table */
	WINDOW_UNWIND_END_MAP_FULL,   /* the user-stack map refused the stack */
	WINDOW_UNWIND_END__COUNT,
};

/* The .eh_frame unwinder over the window (all zero with --unwind=fp). */
struct window_unwind {
	uint64_t by_tables, by_fp, mixed; /* samples whose user stack took these steps */
	uint64_t not_loaded;		  /* process tables not loaded yet: kernel FP walk */
	uint64_t end_clean;		  /* stacks that reached an undefined return address */
	uint64_t end_fp_chain;		  /* frame-pointer chain ended (rbp or ra 0) */
	uint64_t end_early[WINDOW_UNWIND_END__COUNT];
	uint64_t truncated; /* deeper than the cap: a [truncated] root frame */
	/* the per-thread stack tails (bpf/stack_tail.h): walks that ended with the thread's
	 * cached outer frames, walks that did not, tails whose stack words had changed (walked
	 * instead), frames copied (and the JS or Java ones of them), tails stored */
	uint64_t tail_hits, tail_misses, tail_fallbacks, tail_frames, tail_vm_frames, tail_stored;
	uint64_t tables_built, build_ns; /* over the window */
	/* binaries whose table could not be built over the window (frame pointers for them) */
	uint64_t tables_corrupt, tables_too_big, tables_unreadable;
	/* at the end of the window */
	uint64_t tables_loaded, rows_loaded, rows_bytes, rows_capacity, map_bytes;
	uint64_t tables_building; /* big tables in the builder thread (frame pointers meanwhile) */
	uint64_t load_ms;	  /* BPF object load (verifier) time */
	/* processes captured in their first second (early_maps.h), and their maps' re-reads */
	uint64_t early_captures, early_rereads;
};

/* Off-CPU sampling over the window (all zero when it is off). Weighted values estimate the
 * whole; counts are events as seen. */
struct window_offcpu {
	uint64_t switches;    /* context switches seen */
	uint64_t blocks;      /* of the recorded processes' threads, to a blocked state */
	uint64_t kept;	      /* kept by 1-in-N event sampling */
	uint64_t charged;     /* charged when they ran again */
	uint64_t blocked_ns;  /* weighted blocked time charged */
	uint64_t runqueue_ns; /* weighted runnable time after wake-ups: in no profile */
	uint64_t below_min, below_min_ns; /* blocks shorter than the minimum: dropped */
	uint64_t lost;			  /* map full, or no room for the block record */
	uint64_t stack_lost;		  /* charged as [unknown]: its stacks were gone */
	uint64_t announce_lost; /* a new process's announcement lost (ring buffer full): again */
				/* at its next kept block */
	uint64_t stale; /* blocks pending across a detach, dropped at re-attach (not charged) */
	uint64_t bpf_run_ns, bpf_run_cnt; /* the two off-CPU programs (in bpf_run_* too) */
};

/* What the window could not see, and what it cost to look. */
struct window_stats {
	uint64_t samples;      /* profile samples (idle excluded) */
	uint64_t idle_samples; /* samples in the idle task, counted for utilisation only */
	uint64_t idle_ns;
	uint64_t lost_stack_user; /* user stacks not stored: stacks map full, failed walk */
	uint64_t lost_stack_kernel;
	uint64_t lost_map_full; /* aggregation map full: samples dropped in the kernel */
	uint64_t bpf_samples; /* samples BPF counted as stored: the drains hand all of them over */
	uint64_t unknown_frames;
	uint64_t processes;  /* distinct pids in the window */
	uint64_t bpf_run_ns; /* BPF program run time over the window (0 if stats are off) */
	uint64_t bpf_run_cnt;
	uint64_t drains;       /* collects that closed this window (merged windows: all of them) */
	uint64_t drain_cpu_ns; /* the collecting thread's CPU in them: drain, naming, exits */
	struct window_unwind unwind;
	struct window_offcpu offcpu;
};

/* Adds src's counters to dst's; levels (tables loaded, rows) become src's. processes is
 * summed: an upper bound of the distinct pids over both. */
void window_stats__add(struct window_stats *dst, const struct window_stats *src);

struct window {
	int64_t start_ns, end_ns; /* CLOCK_REALTIME */
	uint64_t nominal_period_ns;
	struct window_sample *samples;
	size_t n_samples;
	struct window_stats stats;
	void *priv_; /* owns the strings and arrays */
};

void window__free(struct window *w);

/* ---- building a window (the pipeline, tests) ---------------------------------------- */

/* Empty window. NULL and errno set on failure. */
struct window *window__new(void);

/* The window's copy of s (one copy per distinct string). NULL on -ENOMEM. */
const char *window__intern(struct window *w, const char *s);

/* Appends a copy of s: every string interned in w, its frames stored once per distinct stack
 * (a sample of a stack w holds already points at that stack's frames). Updates nothing in
 * w->stats. 0 or -ENOMEM. */
int window__add_sample(struct window *w, const struct window_sample *s);

/* Same, for a sample whose strings (comm, thread, cgroup, exe, frames) all come from
 * window__intern(w, ...): only the frames are looked up (and stored if new). 0 or -ENOMEM. */
int window__add_interned_sample(struct window *w, const struct window_sample *s);

/* Appends every sample of src to dst and adds src's stats to dst's; the time range becomes
 * the union. 0 or -ENOMEM. */
int window__append(struct window *dst, const struct window *src);

#endif
