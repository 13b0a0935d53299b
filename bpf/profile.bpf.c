// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/* On-CPU sampler: runs on every cpu-clock sample, aggregates (pid, tid, stacks, cgroup) ->
 * (count, summed period) in the kernel and announces each new pid once via a ring buffer. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "hotspot_frames.h"
#include "offcpu.h"
#include "profile.h"
#include "php_frames.h"
#include "python_frames.h"
#include "ruby_frames.h"
#include "stack_tail.h"
#include "v8_frames.h"
#include "unwind.h"
#include "vm_stack.h"

#ifndef EFAULT
#define EFAULT 14
#endif
#ifndef EEXIST
#define EEXIST 17
#endif
#ifndef ENOMEM
#define ENOMEM 12
#endif

char LICENSE[] SEC("license") = "GPL";

/* Set by user space between open and load. */
const volatile __u32 targ_pid = 0;	   /* 0 = every process */
const volatile bool unwind_tables = false; /* user stacks from .eh_frame tables (--unwind=auto) */

/* Flipped by user space (mmap'ed .bss): samples go to generation `generation`, user space
 * drains the other one. */
volatile __u32 generation = 0;
volatile __u32 excluded_cgroups_count = 0; /* skip the lookup while nothing is excluded */
/* proc_maps_seq[pid % PROC_MAPS_CACHE_SLOTS] is advanced whenever the pid enters or leaves one
 * of the per-process maps (unwind_procs and the runtimes': by user space after its update, by
 * BPF after its delete): a per-CPU cached answer of which maps hold a pid is good while it
 * carries the current value. Per slot: another process's changes leave it good. */
#define PROC_MAPS_CACHE_SLOTS 1024
volatile __u32 proc_maps_seq[PROC_MAPS_CACHE_SLOTS];

/* Two generations of (counts, stacks): user space drains one while samples go to the other.
 * Stacks are keyed by a 64-bit hash of their addresses in a plain hash map, so two stacks
 * never share an entry (the kernel's stack-trace map drops the second stack of a bucket). */
#define STACK_MAP(name)                                                                            \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_HASH);                                                   \
		__uint(map_flags, BPF_F_NO_PREALLOC); /* kernel memory for used entries */         \
		__type(key, __u64);                                                                \
		__type(value, struct profile_stack);                                               \
		__uint(max_entries, PROFILE_MAX_STACKS);                                           \
	} name SEC(".maps")
#define COUNTS_MAP(name)                                                                           \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_HASH);                                                   \
		__type(key, struct profile_key);                                                   \
		__type(value, struct profile_value);                                               \
		__uint(max_entries, PROFILE_MAX_ENTRIES);                                          \
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

/* Which per-process maps hold a pid, per CPU, direct-mapped by pid: a sample looked the pid up
 * in six hash maps (the unwinder's and each runtime's), and a miss costs as much as a hit
 * (~0.3 us each, cold buckets); now one cached word says which to look up. */
#define PROC_IN_UNWIND 1u
#define PROC_IN_PYTHON 2u
#define PROC_IN_V8 4u
#define PROC_IN_RUBY 8u
#define PROC_IN_PHP 16u
#define PROC_IN_HOTSPOT 32u

struct proc_maps_cached {
	__u32 pid;
	__u32 seq; /* proc_maps_seq[slot] when it was looked up */
	__u32 in;  /* PROC_IN_* */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct proc_maps_cached);
	__uint(max_entries, PROC_MAPS_CACHE_SLOTS);
} proc_maps_cache SEC(".maps");

/* --- .eh_frame unwinder state, filled by user space (agent/unwind/) -------------------- */

/* Two rows per element: an array rounds values up to 8 bytes, a pair of 12-byte rows is 24. */
struct unwind_row_pair {
	struct unwind_row rows[2];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct unwind_row_pair);
	__uint(max_entries, UNWIND_DEFAULT_ROWS / 2); /* resized by user space before load */
} unwind_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct unwind_table_info);
	__uint(max_entries, UNWIND_MAX_TABLES);
} unwind_tables_info SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct unwind_process);
	__uint(max_entries, UNWIND_MAX_PROCESSES);
} unwind_procs SEC(".maps");

/* Table pc -> its row, per CPU, direct-mapped: the frames of a hot path recur from sample to
 * sample, and a binary search of a big table touches ~20 cold cache lines a frame. Keyed by
 * (table id, table pc): an id names one binary's rows for as long as it is used (a reused slot
 * gets a new id), so a cached row is never another table's. */
#define UNWIND_ROW_CACHE_BITS 12
struct unwind_row_cached {
	__u64 tag; /* table id << 32 | table pc; 0: empty (id 0 has no table) */
	/* the row but its pc: 16 bytes a slot, four to a cache line, none across two */
	__s32 cfa_off;
	__s16 rbp_off;
	__u8 cfa_type;
	__u8 rbp_type;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct unwind_row_cached);
	__uint(max_entries, 1 << UNWIND_ROW_CACHE_BITS);
} unwind_row_cache SEC(".maps");

struct unwind_counters {
	__u64 c[UNWIND_STAT__COUNT];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct unwind_counters);
	__uint(max_entries, 1);
} unwind_stats SEC(".maps");

#define STEP_TABLE 1u
#define STEP_FP 2u

/* --- CPython: filled by user space (agent/runtimes/python/) ------------------------------ */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct python_proc);
	__uint(max_entries, PYTHON_MAX_PROCESSES);
} python_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, struct python_thread);
	__uint(max_entries, PYTHON_MAX_THREADS);
} python_threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct python_code_key);
	__type(value, __u64);
	__uint(max_entries, PYTHON_MAX_CODES);
} python_codes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, PYTHON_EVENTS_BYTES);
} python_events SEC(".maps");

/* The interpreter frames this CPU announced (or found announced) lately, direct-mapped: a hot
 * function is sampled again and again, and a look in the python_codes LRU costs a hashed
 * lookup of a cold bucket per frame; a slot here is one load. A stale slot only skips an
 * announcement that was made (the LRU is a filter of repeats too). */
#define CODES_SEEN_BITS 10
struct code_seen {
	__u64 word; /* the frame's tagged word; 0: empty */
	__u64 cookie;
	__u32 pid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct code_seen);
	__uint(max_entries, 1 << CODES_SEEN_BITS);
} codes_seen SEC(".maps");

struct python_counters {
	__u64 c[PYTHON_STAT__COUNT];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct python_counters);
	__uint(max_entries, 1);
} python_stats SEC(".maps");

/* --- V8: filled by user space (agent/runtimes/v8/) --------------------------------------- */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct v8_proc);
	__uint(max_entries, V8_MAX_PROCESSES);
} v8_procs SEC(".maps");

struct v8_counters {
	__u64 c[V8_STAT__COUNT];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct v8_counters);
	__uint(max_entries, 1);
} v8_stats SEC(".maps");

/* --- PHP: filled by user space (agent/runtimes/php/) ------------------------------------- */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct php_proc);
	__uint(max_entries, PHP_MAX_PROCESSES);
} php_procs SEC(".maps");

/* --- HotSpot: filled by user space (agent/runtimes/hotspot/) ------------------------------ */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct hotspot_proc);
	__uint(max_entries, HOTSPOT_MAX_PROCESSES);
} hotspot_procs SEC(".maps");

struct hotspot_counters {
	__u64 c[HOTSPOT_STAT__COUNT];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct hotspot_counters);
	__uint(max_entries, 1);
} hotspot_stats SEC(".maps");

/* The HotSpot side of one walk: a copy of the JVM's state, the blob header read last, and
 * what the last frames found, so a recursion or a run of interpreted frames searches and
 * reads once. */
struct hotspot_walk {
	__u32 active;			/* the process is a JVM */
	__s32 last_size, last_complete; /* the last blob's frame size and prologue */
	__u32 proc_pid; /* kept across walks: whose hotspot_procs entry proc is, under */
	__u32 proc_seq; /* which proc_maps_seq */
	__u32 pad;
	__u64 last_begin, last_end;	       /* the last blob's code, 0 0: none */
	__u64 last_blob, last_kind, last_name; /* its address, kind (name's 8 bytes), name */
	__u64 last_blob_method;		       /* an nmethod's Method* */
	__u64 last_method, last_cookie;	       /* the Method recorded last (announced) */
	__u32 interpreted, compiled, stubs;    /* frames recorded, counted once after the walk */
	__u32 pad2;
	struct hotspot_proc proc;
	__u8 blob[HOTSPOT_BLOB_READ];
};

/* The V8 side of one walk: where the builtins run now, the last JS frame recorded. */
struct v8_walk {
	__u64 blob_start, blob_end; /* the embedded builtins (V8 may remap them at start) */
	__u64 last_fp;		    /* fp of the last JS frame recorded: a callee without a frame
				     * of its own (a frameless builtin) is not its caller again */
	__u64 jit_start, jit_end;   /* the last mapping found to hold JIT code: no search */
	__u64 native_start, native_end;	 /* the last mapping found to have a table: no search */
	__u64 fn_map, sfi_map;		 /* the last maps read (a JSFunction's, an SFI's) and */
	__u16 fn_type, sfi_type;	 /* their instance types: one read a walk, not a frame */
	__u16 fn_type2;			 /* the JSFunction map before fn_map, and its type: */
	__u64 fn_map2;			 /* strict, sloppy and method functions alternate */
	__u32 active;			 /* the process runs V8 */
	__u64 noted_word, noted_cookie;	 /* the last function announced (recursion: once) */
	__u32 js_frames, native_frames;	 /* counted once, after the walk */
	__u64 code, code_entry;		 /* the last Code read (0: none), its instruction start, */
	__u32 code_size, code_optimised; /* size, and whether it is TurboFan's or Maglev's */
	__u32 optimised_frames;		 /* counted once, after the walk */
	__u32 pad;
	__u64 fn, fn_sfi, fn_cookie, fn_code; /* the last JSFunction read and what it gave */
	/* Kept across walks: whose v8_procs entry proc is, under which proc_maps_seq; the
	 * builtins' bounds last read for it (0: none) and how many walks used them since */
	__u32 proc_pid, proc_seq;
	__u64 blob_read_start, blob_read_end;
	__u32 blob_read_uses, pad2;
	struct v8_proc proc;
};

/* --- CRuby: filled by user space (agent/runtimes/ruby/) ---------------------------------- */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct ruby_proc);
	__uint(max_entries, RUBY_MAX_PROCESSES);
} ruby_procs SEC(".maps");

struct ruby_counters {
	__u64 c[RUBY_STAT__COUNT];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct ruby_counters);
	__uint(max_entries, 1);
} ruby_stats SEC(".maps");

/* The Ruby side of one walk: the next control frame, where they end, a copy of the state. */
struct ruby_walk {
	__u64 cursor;	 /* the next control frame; 0: none (not Ruby, or the frames ended) */
	__u64 end;	 /* past the outermost control frame */
	__u64 top;	 /* ec->cfp: the innermost control frame */
	__u32 state;	 /* enum python_walk_state: the same three steps */
	__u32 frames;	 /* Ruby frames recorded */
	__u8 after_core; /* the last native frame was a vm_exec_core stepped over */
	__u8 check_top;	 /* the next frame may be pushed but not run yet (see ruby_frame) */
	__u16 pad;
	__u64 last_me;	 /* the method entry found last: a recursive call is not read again */
	__u64 last_word; /* the frame announced last, and its cookie: nor looked up again */
	__u64 last_cookie;
	struct ruby_proc proc;
	__u8 cfp[RUBY_CFP_READ];
};

/* PROC_IN_* of the maps that hold pid: cached per CPU until the pid's proc_maps_seq moves. It
 * is read before the lookups, so an entry added meanwhile makes the cached answer stale at once. */
static __always_inline __u32 proc_maps(__u32 pid)
{
	__u32 slot = pid & (PROC_MAPS_CACHE_SLOTS - 1), seq = proc_maps_seq[slot], in = 0;
	struct proc_maps_cached *c = bpf_map_lookup_elem(&proc_maps_cache, &slot);

	if (c && c->pid == pid && c->seq == seq)
		return c->in;
	if (bpf_map_lookup_elem(&unwind_procs, &pid))
		in |= PROC_IN_UNWIND;
	if (bpf_map_lookup_elem(&python_procs, &pid))
		in |= PROC_IN_PYTHON;
	if (bpf_map_lookup_elem(&v8_procs, &pid))
		in |= PROC_IN_V8;
	if (bpf_map_lookup_elem(&ruby_procs, &pid))
		in |= PROC_IN_RUBY;
	if (bpf_map_lookup_elem(&php_procs, &pid))
		in |= PROC_IN_PHP;
	if (bpf_map_lookup_elem(&hotspot_procs, &pid))
		in |= PROC_IN_HOTSPOT;
	if (c) {
		c->pid = pid;
		c->seq = seq;
		c->in = in;
	}
	return in;
}

/* After BPF drops a pid from the per-process maps: its cached answers are stale. */
static __always_inline void proc_maps_changed(__u32 pid)
{
	__sync_fetch_and_add(&proc_maps_seq[pid & (PROC_MAPS_CACHE_SLOTS - 1)], 1);
}

enum python_walk_state {
	PYTHON_WALK_NATIVE = 0,	   /* native frames */
	PYTHON_WALK_EMIT = 1,	   /* recording the interpreter frames of the eval frame at pc */
	PYTHON_WALK_STEP_OVER = 2, /* they are recorded: step over the eval frame unrecorded */
};

/* The interpreter side of one walk: the next interpreter frame to record, and a copy of the
 * process's state (a map value cannot point into another map). */
/* The bytes of an interpreter frame the walk reads, in one read: every field it needs lies in
 * the first 72 (3.12's owner byte at 70 is the last), and every frame is larger than that. */
#define PYTHON_FRAME_READ 72

struct python_walk {
	__u64 cursor; /* 0: none (not Python, or the chain ended) */
	__u32 state;  /* enum python_walk_state */
	__u32 frames; /* interpreter frames recorded (counted once, after the walk) */
	__u64 last_code, last_cookie; /* the code read last: a recursive call reads it once (it
				       * is alive while its frames are on the stack) */
	struct python_proc proc;
	__u8 frame[PYTHON_FRAME_READ];
};

/* The PHP side of one walk: the next zend_execute_data to record (the python_walk_state
 * machine: execute_ex's native frame is replaced by the PHP frames it runs). */
struct php_walk {
	__u64 cursor;	 /* 0: none (not PHP, or the chain ended) */
	__u32 state;	 /* enum python_walk_state */
	__u32 last_user; /* last_fn is PHP code */
	__u64 last_fn;	 /* the zend_function read last, and its cookie: recursion reads once */
	__u64 last_cookie;
	struct php_proc proc;
	__u8 exec[PHP_EXEC_READ];
	__u8 func[PHP_FUNC_READ];
};

/* One walk in progress (per CPU: too big for the BPF stack). */
struct walk_state {
	__u64 pc, sp, bp;
	__u32 pid;
	__u32 steps; /* STEP_* used so far */
	__u32 end;   /* enum unwind_stat that ended the walk, 0 while it goes on */
	__u32 exact; /* pc is not a return address (leaf, or interrupted by a signal) */
	__u32 in;    /* PROC_IN_*: the per-process maps that hold pid */
	__u32 dirty; /* PROC_IN_* of the runtimes whose walk state the last walk may have set */
	__u32 seq;   /* proc_maps_seq of pid, read before the walk's map lookups */
	__u32 pad;
	struct unwind_mapping last_map; /* the last frame's mapping (start = end = 0: none yet) */
	struct profile_stack stack;
	struct python_walk py;
	struct v8_walk v8;
	struct ruby_walk rb;
	struct php_walk php;
	struct hotspot_walk hs;
	struct vm_stack_window vmstack; /* the JVM's and V8's frames' slots (vm_stack.h) */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct walk_state);
	__uint(max_entries, 1);
} unwind_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, PROFILE_RINGBUF_BYTES);
} events SEC(".maps");

/* Phase timers for finding where a sample's time goes: a build with -DPROFILE_TIMING adds
 * bpf_ktime_get_ns() around the walk's phases (ns and count per phase, per CPU); read with
 * `bpftool map dump name prof_timing`. Off in every normal build. */
#ifdef PROFILE_TIMING
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64[2]);
	__uint(max_entries, 32);
} prof_timing SEC(".maps");

static __always_inline void timing_add(__u32 phase, __u64 t0)
{
	__u64 *v = bpf_map_lookup_elem(&prof_timing, &phase);

	if (v) {
		v[0] += bpf_ktime_get_ns() - t0;
		v[1]++;
	}
}
#define T0_NOW() bpf_ktime_get_ns()
#define T0_ADD(t0) timing_add(0, t0)
#else
#define T0_NOW() 0
#define T0_ADD(t0) ((void)(t0))
#endif
#if defined(PROFILE_TIMING) && PROFILE_TIMING > 1 /* each phase too, not just the sample */
#define T_NOW() bpf_ktime_get_ns()
#define T_ADD(phase, t0) timing_add(phase, t0)
#else
#define T_NOW() 0
#define T_ADD(phase, t0) ((void)(t0))
#endif

#include "sample_caches.h"

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

/* FNV-1a over the stack's addresses, never 0 (0 names "no stack"). */
static __always_inline __u64 stack_hash(const struct profile_stack *st)
{
	__u64 h = FNV_OFFSET;

	for (__u32 i = 0; i < PROFILE_STACK_DEPTH + 1; i++) {
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
static __always_inline __u64 store_stack(void *ctx, void *stacks, __u64 flags,
					 struct profile_stats *st)
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
	if (stack_known__has(stacks, h))
		return h;
	if (bpf_map_lookup_elem(stacks, &h))
		goto known;
	/* -EEXIST: another CPU stored it meanwhile; else the map is full */
	if (bpf_map_update_elem(stacks, &h, buf, BPF_NOEXIST) && !bpf_map_lookup_elem(stacks, &h)) {
		__sync_fetch_and_add(user ? &st->user_stack_full : &st->kernel_stack_full, 1);
		return 0;
	}
known:
	stack_known__note(stacks, h);
	return h;
}

static __always_inline void announce(struct profile_stats *st, __u32 pid, __u32 tid, __u32 type,
				     const struct profile_seen *seen, __u64 cgroup_id)
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
	e->image = seen->image;
	e->cgroup_id = cgroup_id;
	e->start_ns = seen->start_ns;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, 0);
}

/* Start time of the current process (its thread group leader): with the pid, it names one
 * process for the machine's uptime. */
static __always_inline __u64 process_start_ns(void)
{
	/* BTF pointers: plain loads, no probe-read helper calls */
	return bpf_get_current_task_btf()->group_leader->start_time;
}

/* First sight of a pid, first sample after an exec, or first sample of a new process that
 * reuses a known pid: tell user space to capture it now. Returns the pid's image number,
 * which a reused pid advances as an exec does. */
static __always_inline __u32 note_pid(struct profile_stats *st, __u32 pid, __u32 tid,
				      __u64 cgroup_id)
{
	struct profile_seen now = {.state = PROFILE_SEEN, .start_ns = process_start_ns()};
	struct profile_seen *seen;
	__u32 type;

	seen = bpf_map_lookup_elem(&seen_pids, &pid);
	if (seen && seen->state == PROFILE_SEEN && seen->start_ns == now.start_ns)
		return seen->image;
	if (!seen) {
		/* -EEXIST: another CPU announced it first */
		if (bpf_map_update_elem(&seen_pids, &pid, &now, BPF_NOEXIST))
			return 0;
		announce(st, pid, tid, PROFILE_EVENT_FIRST_SIGHT, &now, cgroup_id);
		return 0;
	}
	bpf_map_delete_elem(&unwind_procs, &pid); /* the old image's mappings */
	bpf_map_delete_elem(&python_procs, &pid);
	bpf_map_delete_elem(&v8_procs, &pid);
	bpf_map_delete_elem(&ruby_procs, &pid);
	bpf_map_delete_elem(&php_procs, &pid);
	proc_maps_changed(pid);
	if (seen->start_ns != now.start_ns) {
		type = PROFILE_EVENT_PID_REUSED;
		now.image = seen->image + 1;
	} else {
		type = PROFILE_EVENT_EXEC;
		now.image = seen->image; /* advanced by the exec hook */
	}
	*seen = now; /* racing CPUs may both announce: user space recaptures twice, no harm */
	announce(st, pid, tid, type, &now, cgroup_id);
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
	thread_name_changed(tid);
}

/* --- the .eh_frame unwinder ------------------------------------------------------------- */

static __always_inline void unwind_count(__u32 stat)
{
	__u32 zero = 0;
	struct unwind_counters *c = bpf_map_lookup_elem(&unwind_stats, &zero);

	if (c && stat < UNWIND_STAT__COUNT)
		c->c[stat]++;
}

/* The binary searches are global functions: verified once on their own, so the branches of
 * one search do not multiply with the walk's other paths (the verifier's 1M-insn budget). */

/* Index of the mapping holding pc (the last one starting at or below it), or -1. */
__noinline int find_mapping(const struct unwind_process *proc, __u64 pc)
{
	__u32 lo = 0, hi, mid;

	if (!proc)
		return -1;
	hi = proc->n_mappings;
	if (hi > UNWIND_MAX_MAPPINGS)
		hi = UNWIND_MAX_MAPPINGS;
	for (int i = 0; i < UNWIND_MAPPING_STEPS && lo < hi; i++) {
		mid = (lo + hi) / 2;
		if (mid >= UNWIND_MAX_MAPPINGS)
			return -1;
		if (proc->mappings[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || lo > UNWIND_MAX_MAPPINGS || pc >= proc->mappings[lo - 1].end)
		return -1;
	return lo - 1;
}

/* A branch, not rows[index & 1]: a variable offset would make the verifier track every
 * search index precisely, and the search's paths would no longer merge. */
static __always_inline const struct unwind_row *get_row(__u32 index)
{
	__u32 key = index / 2;
	struct unwind_row_pair *pair = bpf_map_lookup_elem(&unwind_rows, &key);

	if (!pair)
		return NULL;
	if (index & 1)
		return &pair->rows[1];
	return &pair->rows[0];
}

/* Index in the rows map of the row covering pc in rows [first, first + hi), searched in
 * [lo, hi) (row lo - 1 covers pc when no row there does: the bucket's first row), or -1. */
__noinline long find_row(__u32 first, __u32 lo, __u32 hi, __u32 pc)
{
	const struct unwind_row *row;
	__u32 mid;

	for (int i = 0; i < UNWIND_SEARCH_STEPS && lo < hi; i++) {
		mid = lo + (hi - lo) / 2;
		row = get_row(first + mid);
		if (!row)
			return -1;
		if (row->pc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? (long)first + lo - 1 : -1;
}

static __always_inline int read_user_u64(__u64 *ret, __u64 addr)
{
	return bpf_probe_read_user(ret, sizeof(*ret), (const void *)addr);
}

/* The rows [*lo, *hi) of table's bucket holding pc: the search's range (the row covering pc
 * is *lo - 1 when none of them starts at or below pc). Without an index, the whole table. */
static __always_inline void table_bucket(const struct unwind_table_info *table, __u32 pc, __u32 *lo,
					 __u32 *hi)
{
	const struct unwind_bucket *bucket;
	struct unwind_row_pair *pair;
	__u32 n = table->n_rows, b, key;

	*lo = 0;
	*hi = n;
	if (!table->n_buckets)
		return;
	if (pc < table->base_pc) { /* below the first row (base_pc is its pc): no search */
		*hi = 0;
		return;
	}
	b = (pc - table->base_pc) >> (table->shift & 31);
	if (b >= table->n_buckets)
		b = table->n_buckets - 1; /* past the last row's pc: the last bucket */
	key = table->index_row / 2 + b / UNWIND_BUCKETS_PER_PAIR;
	pair = bpf_map_lookup_elem(&unwind_rows, &key);
	if (!pair)
		return;
	bucket = (const struct unwind_bucket *)pair;
	if (b & 1)
		bucket++;
	if (bucket->lo && bucket->lo <= bucket->hi && bucket->hi <= n) { /* else: bad, all rows */
		*lo = bucket->lo;
		*hi = bucket->hi;
	}
}

/* The row covering table pc pc of the table with id table_id into *ret: from the per-CPU
 * cache, else searched in the table (and cached). The cache is looked at first: a cached row
 * needs no look at the table's slot (a table id names one binary's rows for as long as it is
 * used, so the row stays right for its binary even when the slot was evicted since). 0; 1: no
 * table loaded for the id (frame pointers); -1: no row covers pc. */
static __always_inline int lookup_row(__u32 table_id, __u32 pc, struct unwind_row *ret)
{
	__u64 tag = (__u64)table_id << 32 | pc;
	__u32 slot = (__u32)((tag * 0x9e3779b97f4a7c15ULL) >> (64 - UNWIND_ROW_CACHE_BITS));
	struct unwind_row_cached *cached = bpf_map_lookup_elem(&unwind_row_cache, &slot);
	const struct unwind_table_info *table;
	const struct unwind_row *row;
	__u32 tslot = table_id % UNWIND_MAX_TABLES, lo, hi;
	long found;

	if (cached && cached->tag == tag) {
		ret->pc = pc;
		ret->cfa_off = cached->cfa_off;
		ret->rbp_off = cached->rbp_off;
		ret->cfa_type = cached->cfa_type;
		ret->rbp_type = cached->rbp_type;
		return 0;
	}
	table = bpf_map_lookup_elem(&unwind_tables_info, &tslot);
	if (!table || table->id != table_id || !table->n_rows)
		return 1; /* evicted, or not loaded yet: mixed mode */
	__u64 t0 = T_NOW();

	table_bucket(table, pc, &lo, &hi);
	found = find_row(table->first_row, lo, hi, pc);
	row = found >= 0 ? get_row(found) : NULL;
	T_ADD(16, t0);
	if (!row)
		return -1;
	*ret = *row;
	if (cached) {
		cached->cfa_off = row->cfa_off;
		cached->rbp_off = row->rbp_off;
		cached->cfa_type = row->cfa_type;
		cached->rbp_type = row->rbp_type;
		cached->tag = tag;
	}
	return 0;
}

/* --- CPython frames: the eval loop's native frame is replaced by the frames it runs ------ */

static __always_inline void python_count_n(__u32 stat, __u64 n)
{
	__u32 zero = 0;
	struct python_counters *c = bpf_map_lookup_elem(&python_stats, &zero);

	if (c && stat < PYTHON_STAT__COUNT)
		c->c[stat] += n;
}

static __always_inline void python_count(__u32 stat)
{
	python_count_n(stat, 1);
}

/* The thread state whose thread_id is fsbase (pthread_self() is the fsbase on x86-64 glibc),
 * among the first PYTHON_MAX_THREAD_WALK of the list at head; 0 when none. A global function:
 * verified once, apart from the walk's paths. */
__noinline __u64 python_scan_threads(__u64 head, __u64 fsbase, __u32 next_off, __u32 id_off)
{
	__u64 ts = head, id;

	for (int i = 0; i < PYTHON_MAX_THREAD_WALK && ts; i++) {
		if (bpf_probe_read_user(&id, sizeof(id), (const void *)(ts + id_off)))
			return 0;
		if (id == fsbase)
			return ts;
		if (bpf_probe_read_user(&ts, sizeof(ts), (const void *)(ts + next_off)))
			return 0;
	}
	return 0;
}

/* The sampled thread's PyThreadState: cached per tid, and the cached one is used only while
 * its thread_id still equals the thread's fsbase (a freed state, a reused tid). A thread with
 * none (a native thread) is looked up again after a second: threads register late. */
static __always_inline __u64 python_thread_state(const struct python_proc *proc, __u32 tid)
{
	struct task_struct *task = bpf_get_current_task_btf();
	const struct python_offsets *o = &proc->off;
	struct python_thread fresh = {.fsbase = task->thread.fsbase};
	struct python_thread *cached;
	__u64 interp, head, id;

	cached = bpf_map_lookup_elem(&python_threads, &tid);
	if (cached && cached->fsbase == fresh.fsbase) {
		if (cached->tstate && !read_user_u64(&id, cached->tstate + o->tstate_thread_id) &&
		    id == fresh.fsbase)
			return cached->tstate;
		if (!cached->tstate && bpf_ktime_get_ns() < cached->retry_ns)
			return 0;
	}
	python_count(PYTHON_STAT_THREAD_WALKS);
	if (read_user_u64(&interp, proc->runtime + o->runtime_interpreters_head) || !interp ||
	    read_user_u64(&head, interp + o->interp_threads_head))
		return 0;
	fresh.tstate = python_scan_threads(head, fresh.fsbase, o->tstate_next, o->tstate_thread_id);
	if (!fresh.tstate)
		fresh.retry_ns = bpf_ktime_get_ns() + 1000000000ULL;
	bpf_map_update_elem(&python_threads, &tid, &fresh, BPF_ANY);
	return fresh.tstate;
}

/* Before a walk: the sampled thread's innermost interpreter frame, when its process runs
 * CPython and the thread has a thread state (else the walk stays native). */
static __always_inline void python_walk_start(struct walk_state *st, __u32 tid)
{
	const struct python_proc *proc =
	    st->in & PROC_IN_PYTHON ? bpf_map_lookup_elem(&python_procs, &st->pid) : NULL;
	const struct python_offsets *o = &st->py.proc.off;
	__u64 tstate, frame;

	st->py.cursor = 0;
	st->py.state = PYTHON_WALK_NATIVE;
	st->py.frames = 0;
	st->py.last_code = 0;
	if (!proc)
		return;
	python_count(PYTHON_STAT_SAMPLES);
	st->py.proc = *proc;
	tstate = python_thread_state(&st->py.proc, tid);
	if (!tstate) {
		python_count(PYTHON_STAT_NO_THREAD);
		return;
	}
	if (read_user_u64(&frame, tstate + o->tstate_frame) ||
	    (o->cframe_current != PYTHON_NO_OFFSET && frame &&
	     read_user_u64(&frame, frame + o->cframe_current))) {
		python_count(PYTHON_STAT_READ);
		return;
	}
	st->py.cursor = frame;
}

/* A native frame at pc runs the interpreter frames at the cursor. */
static __always_inline bool python_eval_frame(const struct walk_state *st, __u64 pc)
{
	const struct python_proc *p = &st->py.proc;

	if (!(st->in & PROC_IN_PYTHON) || !st->py.cursor)
		return false;
	return (pc >= p->eval_start[0] && pc < p->eval_end[0]) ||
	       (pc >= p->eval_start[1] && pc < p->eval_end[1]);
}

/* Announces an interpreter frame's function (a Python code object, a Ruby iseq, a PHP
 * zend_function: word, tagged) not sampled before in this process, or whose cookie changed, so
 * user space names it while the process is alive: a short-lived one is gone by the time its
 * window is named. The per-CPU codes_seen first, then the python_codes LRU. -ENOMEM when the
 * ring was full (the caller counts it: named when the window is, if still alive). */
static __always_inline int note_code(__u32 pid, __u64 word, __u64 cookie)
{
	__u32 slot = (__u32)(((word ^ pid) * 0x9e3779b97f4a7c15ULL) >> (64 - CODES_SEEN_BITS));
	struct python_code_key key = {.pid = pid, .code = word};
	struct code_seen *seen = bpf_map_lookup_elem(&codes_seen, &slot);
	struct python_code_event *e;
	__u64 *known, t0 = T_NOW();

	if (seen && seen->word == word && seen->cookie == cookie && seen->pid == pid) {
		T_ADD(21, t0);
		return 0;
	}
	known = bpf_map_lookup_elem(&python_codes, &key);
	T_ADD(8, t0);
	if (seen) {
		seen->word = word;
		seen->cookie = cookie;
		seen->pid = pid;
	}
	if (known && *known == cookie)
		return 0;
	bpf_map_update_elem(&python_codes, &key, &cookie, BPF_ANY);
	e = bpf_ringbuf_reserve(&python_events, sizeof(*e), 0);
	if (!e)
		return -ENOMEM;
	e->pid = pid;
	e->pad = 0;
	e->code = word;
	e->cookie = cookie;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* A frame could not be read: the eval frame at pc is recorded as the native one it is. */
static __always_inline long python_give_back(struct walk_state *st)
{
	python_count(PYTHON_STAT_READ);
	st->py.cursor = 0;
	st->py.state = PYTHON_WALK_NATIVE;
	return 0;
}

/* Records one interpreter frame of the current eval call (or reads past the entry frame that
 * ends it); 1 when the stack is full. A failed read gives the eval frame back to the native
 * walk: it is recorded as itself, no interpreter frame is guessed. */
static __always_inline long python_frame(struct walk_state *st)
{
	const struct python_offsets *o = &st->py.proc.off;
	__u64 cur = st->py.cursor, code, prev, cookie = 0;
	__u32 n = st->stack.n, code_off, prev_off, mark_off;
	__u8 mark;

	if (!cur) {
		st->py.state = PYTHON_WALK_STEP_OVER;
		return 0;
	}
	if (n >= PROFILE_STACK_DEPTH - 1) {
		st->stack.flags |= PROFILE_STACK_TRUNCATED;
		st->end = UNWIND_STAT_TRUNCATED;
		python_count(PYTHON_STAT_TRUNCATED);
		return 1;
	}
	if (bpf_probe_read_user(st->py.frame, sizeof(st->py.frame), (const void *)cur))
		return python_give_back(st);
	code_off = o->frame_code;
	prev_off = o->frame_previous;
	mark_off = o->frame_boundary;
	if (code_off > PYTHON_FRAME_READ - 8 || prev_off > PYTHON_FRAME_READ - 8)
		return python_give_back(st);
	if (mark_off > PYTHON_FRAME_READ - 1)
		mark_off = 0; /* 3.8-3.10: no boundary byte */
	code = *(__u64 *)(st->py.frame + code_off);
	prev = *(__u64 *)(st->py.frame + prev_off);
	mark = st->py.frame[mark_off];
	st->py.cursor = prev;
	if (o->layout == PYTHON_LAYOUT_CSTACK_OWNER && mark == o->cstack_owner) {
		st->py.state = PYTHON_WALK_STEP_OVER;
		return 0;
	}
	if (code && code == st->py.last_code) {
		cookie = st->py.last_cookie; /* a recursive call: read and announced already */
	} else {
		/* unreadable: 0, named [unknown] later */
		read_user_u64(&cookie, code + o->code_cookie);
		if (note_code(st->pid, code & PYTHON_FRAME_ADDR_MASK, cookie))
			python_count(PYTHON_STAT_EVENTS_LOST);
		st->py.last_code = code;
		st->py.last_cookie = cookie;
	}
	st->stack.ips[n] = PYTHON_FRAME_TAG | (code & PYTHON_FRAME_ADDR_MASK);
	st->stack.ips[n + 1] = cookie;
	st->stack.n = n + 2;
	st->py.frames++;
	if (o->layout == PYTHON_LAYOUT_FRAME_OBJECT ||
	    (o->layout == PYTHON_LAYOUT_IS_ENTRY && mark))
		st->py.state = PYTHON_WALK_STEP_OVER;
	return 0;
}

/* --- CRuby: the control frames of a vm_exec_core call replace its native frame ---------- */

static __always_inline void ruby_count_n(__u32 stat, __u64 n)
{
	__u32 zero = 0;
	struct ruby_counters *c = bpf_map_lookup_elem(&ruby_stats, &zero);

	if (c && stat < RUBY_STAT__COUNT)
		__sync_fetch_and_add(&c->c[stat], n);
}

#define RUBY_EC_READ 32 /* bytes of rb_execution_context_t read: vm_stack, its size, cfp */

/* Before a walk: the sampled thread's current control frame, from its ruby_current_ec (a
 * general-dynamic TLS variable of libruby: fsbase -> dtv -> the module's block; glibc x86-64,
 * where libruby's TLS is static because it is loaded at start). */
static __always_inline void ruby_walk_start(struct walk_state *st)
{
	const struct ruby_proc *proc =
	    st->in & PROC_IN_RUBY ? bpf_map_lookup_elem(&ruby_procs, &st->pid) : NULL;
	struct task_struct *task = (struct task_struct *)bpf_get_current_task_btf();
	const struct ruby_offsets *o = &st->rb.proc.off;
	__u64 dtv, block, ec, cfp, stack, size, head[RUBY_EC_READ / 8];

	st->rb.cursor = 0;
	st->rb.end = 0;
	st->rb.state = PYTHON_WALK_NATIVE;
	st->rb.frames = 0;
	st->rb.after_core = 0;
	st->rb.check_top = 0;
	st->rb.last_me = 0;
	st->rb.last_word = 0;
	if (!proc)
		return;
	ruby_count_n(RUBY_STAT_SAMPLES, 1);
	st->rb.proc = *proc;
	if (read_user_u64(&dtv, task->thread.fsbase + 8) ||
	    read_user_u64(&block, dtv + st->rb.proc.tls_module * 16) ||
	    read_user_u64(&ec, block + st->rb.proc.tls_offset)) {
		ruby_count_n(RUBY_STAT_READ, 1);
		return;
	}
	if (!ec) {
		ruby_count_n(RUBY_STAT_NO_EC, 1);
		return;
	}
	/* the three fields in one read: they are words among the struct's first four (every
	 * version's table: 0, 8 and 16) */
	if (bpf_probe_read_user(head, sizeof(head), (const void *)ec)) {
		ruby_count_n(RUBY_STAT_READ, 1);
		return;
	}
	cfp = head[(o->ec_cfp / 8) & (RUBY_EC_READ / 8 - 1)];
	stack = head[(o->ec_vm_stack / 8) & (RUBY_EC_READ / 8 - 1)];
	size = head[(o->ec_vm_stack_size / 8) & (RUBY_EC_READ / 8 - 1)];
	st->rb.cursor = cfp;
	st->rb.top = cfp;
	st->rb.end = stack + size * 8;
}

/* 1: pc is vm_exec_core; 2: pc is rb_vm_exec, its caller; 0: neither, or no Ruby walk. */
static __always_inline int ruby_exec_frame(const struct walk_state *st, __u64 pc)
{
	const struct ruby_proc *p = &st->rb.proc;

	if (!(st->in & PROC_IN_RUBY) || !st->rb.end)
		return 0;
	if (pc >= p->core_start && pc < p->core_end)
		return 1;
	return pc >= p->exec_start && pc < p->exec_end ? 2 : 0;
}

/* Whether the exec frame at pc (kind from ruby_exec_frame) records the control frames of its
 * vm_exec call: a vm_exec_core does, and so does an rb_vm_exec that was not entered from one
 * (sampled before it called vm_exec_core); after its vm_exec_core it stands for them. */
static __always_inline bool ruby_emits(struct walk_state *st, int kind, bool after_core)
{
	if (kind == 2 && after_core)
		return false;
	/* a vm_exec_core with native frames below it: the innermost frame may have been pushed
	 * by a C caller (rb_yield) that has not reached vm_exec yet */
	st->rb.check_top = kind == 1 && st->stack.n > 0 && st->rb.cursor == st->rb.top;
	return true;
}

static __always_inline long ruby_give_back(struct walk_state *st)
{
	ruby_count_n(RUBY_STAT_READ, 1);
	st->rb.cursor = 0;
	st->rb.end = 0;
	st->rb.state = PYTHON_WALK_NATIVE;
	return 0;
}

/* A frame pushed to begin a vm_exec call (FINISH) whose first instruction has not run: its
 * pc is still the start of its iseq (each instruction advances cfp->pc as it begins). */
static __always_inline bool ruby_not_started(const struct ruby_offsets *o, __u64 cfp, __u64 iseq,
					     __u64 flags, __u64 magic)
{
	__u64 pc, body, start;

	if (!iseq || !(flags & RUBY_FRAME_FLAG_FINISH) || magic == RUBY_FRAME_MAGIC_CFUNC ||
	    magic == RUBY_FRAME_MAGIC_IFUNC || magic == RUBY_FRAME_MAGIC_DUMMY)
		return false;
	if (read_user_u64(&pc, cfp) || read_user_u64(&body, iseq + o->iseq_body) ||
	    read_user_u64(&start, body + o->body_encoded))
		return false;
	return pc == start;
}

/* The method entry (rb_callable_method_entry_t) a control frame runs in, as Ruby's
 * rb_vm_frame_method_entry finds it: ep[-2] of the frame's env, or of the envs it is nested in
 * (a block's), up to the local one, where it may sit behind an svar. 0 when there is none
 * (top level, class bodies) or it cannot be read. env: ep[-2..0] of the frame, read. */
static __always_inline __u64 ruby_method_entry(struct walk_state *st, __u64 env[3])
{
	__u64 me, head;

	for (int i = 0; i < RUBY_EP_HOPS; i++) {
		me = env[0];
		if (me && me == st->rb.last_me)
			return me;
		if (me && !read_user_u64(&head, me) && RUBY_IMEMO_TYPE(head) == RUBY_IMEMO_MENT)
			return st->rb.last_me = me;
		if (env[2] & RUBY_ENV_FLAG_LOCAL)
			break;
		if (bpf_probe_read_user(env, 3 * sizeof(__u64),
					(const void *)((env[1] & ~3ULL) - 16)))
			return 0;
	}
	if (!(env[2] & RUBY_ENV_FLAG_LOCAL) || !me || read_user_u64(&head, me) ||
	    RUBY_IMEMO_TYPE(head) != RUBY_IMEMO_SVAR || read_user_u64(&me, me + 8) || !me ||
	    read_user_u64(&head, me))
		return 0;
	return RUBY_IMEMO_TYPE(head) == RUBY_IMEMO_MENT ? (st->rb.last_me = me) : 0;
}

/* Records one control frame of the current vm_exec_core call (C-function frames are skipped:
 * their native frames name them); the frame that began the call (FINISH) ends it. 1 when the
 * stack is full. */
static __always_inline long ruby_frame(struct walk_state *st)
{
	const struct ruby_offsets *o = &st->rb.proc.off;
	__u64 cur = st->rb.cursor, iseq, ep, flags, magic, cookie = 0, env[3], me, word;
	__u32 n = st->stack.n, iseq_off = o->cfp_iseq, ep_off = o->cfp_ep;

	if (!cur || cur >= st->rb.end) {
		st->rb.cursor = 0;
		st->rb.state = PYTHON_WALK_STEP_OVER;
		return 0;
	}
	if (n >= PROFILE_STACK_DEPTH - 1) {
		st->stack.flags |= PROFILE_STACK_TRUNCATED;
		st->end = UNWIND_STAT_TRUNCATED;
		ruby_count_n(RUBY_STAT_TRUNCATED, 1);
		return 1;
	}
	/* the frame in one read, then its env (me_cref, specval, flags) in another */
	if (iseq_off > RUBY_CFP_READ - 8 || ep_off > RUBY_CFP_READ - 8 ||
	    bpf_probe_read_user(st->rb.cfp, sizeof(st->rb.cfp), (const void *)cur))
		return ruby_give_back(st);
	iseq = *(__u64 *)(st->rb.cfp + iseq_off);
	ep = *(__u64 *)(st->rb.cfp + ep_off);
	if (bpf_probe_read_user(env, sizeof(env), (const void *)(ep - 16)))
		return ruby_give_back(st);
	flags = env[2];
	st->rb.cursor = cur + o->cfp_size;
	magic = flags & RUBY_FRAME_MAGIC_MASK;
	if (st->rb.check_top) {
		st->rb.check_top = 0;
		if (ruby_not_started(o, cur, iseq, flags, magic))
			return 0; /* its vm_exec call has not begun: not this vm_exec_core's */
	}
	if (iseq && magic != RUBY_FRAME_MAGIC_CFUNC && magic != RUBY_FRAME_MAGIC_IFUNC &&
	    magic != RUBY_FRAME_MAGIC_DUMMY) {
		me = ruby_method_entry(st, env);
		if (me) /* names Class#method; a new entry at the address is a new cookie */
			cookie = me | RUBY_COOKIE_METHOD_ENTRY;
		else /* unreadable: 0, [unknown] later */
			read_user_u64(&cookie, iseq + o->iseq_body);
		word = RUBY_FRAME_TAG | (iseq & RUBY_FRAME_ADDR_MASK);
		st->stack.ips[n] = word;
		st->stack.ips[n + 1] = cookie;
		st->stack.n = n + 2;
		st->rb.frames++;
		if (word != st->rb.last_word || cookie != st->rb.last_cookie)
			if (note_code(st->pid, word, cookie))
				ruby_count_n(RUBY_STAT_EVENTS_LOST, 1);
		st->rb.last_word = word;
		st->rb.last_cookie = cookie;
	}
	if ((flags & RUBY_FRAME_FLAG_FINISH) && magic != RUBY_FRAME_MAGIC_CFUNC)
		st->rb.state = PYTHON_WALK_STEP_OVER;
	return 0;
}

/* --- PHP frames: execute_ex's native frame is replaced by the PHP frames it runs ---------- */

/* Before a walk: the innermost zend_execute_data, when the process runs PHP (NTS: one
 * executor_globals per process, so every thread of it reads the same one). */
static __always_inline void php_walk_start(struct walk_state *st)
{
	const struct php_proc *proc =
	    st->in & PROC_IN_PHP ? bpf_map_lookup_elem(&php_procs, &st->pid) : NULL;
	__u64 cur = 0;

	st->php.cursor = 0;
	st->php.state = PYTHON_WALK_NATIVE;
	st->php.last_fn = 0;
	if (!proc)
		return;
	st->php.proc = *proc;
	if (!read_user_u64(&cur, proc->current_execute_data))
		st->php.cursor = cur;
}

static __always_inline bool php_eval_frame(const struct walk_state *st, __u64 pc)
{
	return (st->in & PROC_IN_PHP) && st->php.cursor && pc >= st->php.proc.exec_start &&
	       pc < st->php.proc.exec_end;
}

/* A frame could not be read: execute_ex is recorded as the native frame it is. */
static __always_inline long php_give_back(struct walk_state *st)
{
	st->php.cursor = 0;
	st->php.state = PYTHON_WALK_NATIVE;
	return 0;
}

/* Records one zend_execute_data of the current execute_ex call: PHP code by its
 * zend_function, internal functions skipped (their C frames are in the native stack). The
 * call ends at the frame marked ZEND_CALL_TOP. 1 when the stack is full. */
static __always_inline long php_frame(struct walk_state *st)
{
	const struct php_offsets *o = &st->php.proc.off;
	__u64 cur = st->php.cursor, fn, name, scope;
	__u32 n = st->stack.n, info, func_off = o->ed_func, prev_off = o->ed_prev;
	__u32 info_off = o->ed_call_info, type_off = o->fn_type, name_off = o->fn_name;
	__u32 scope_off = o->fn_scope;

	if (!cur) {
		st->php.state = PYTHON_WALK_STEP_OVER;
		return 0;
	}
	if (n >= PROFILE_STACK_DEPTH - 1) {
		st->stack.flags |= PROFILE_STACK_TRUNCATED;
		st->end = UNWIND_STAT_TRUNCATED;
		return 1;
	}
	if (func_off > PHP_EXEC_READ - 8 || prev_off > PHP_EXEC_READ - 8 ||
	    info_off > PHP_EXEC_READ - 4 || type_off > PHP_FUNC_READ - 1 ||
	    name_off > PHP_FUNC_READ - 8 || scope_off > PHP_FUNC_READ - 8 ||
	    bpf_probe_read_user(st->php.exec, sizeof(st->php.exec), (const void *)cur))
		return php_give_back(st);
	fn = *(__u64 *)(st->php.exec + func_off);
	info = *(__u32 *)(st->php.exec + info_off);
	st->php.cursor = *(__u64 *)(st->php.exec + prev_off);
	if (fn && fn != st->php.last_fn) { /* a recursive call: read and announced already */
		if (bpf_probe_read_user(st->php.func, sizeof(st->php.func), (const void *)fn))
			return php_give_back(st);
		name = *(__u64 *)(st->php.func + name_off);
		scope = *(__u64 *)(st->php.func + scope_off);
		st->php.last_fn = fn;
		st->php.last_cookie = php_cookie(name, scope);
		st->php.last_user = st->php.func[type_off] == PHP_USER_FUNCTION;
		if (st->php.last_user)
			note_code(st->pid, PHP_FRAME_TAG | (fn & PHP_FRAME_ADDR_MASK),
				  st->php.last_cookie); /* lost: named with the window, if alive */
	}
	if (fn && st->php.last_user) {
		st->stack.ips[n] = PHP_FRAME_TAG | (fn & PHP_FRAME_ADDR_MASK);
		st->stack.ips[n + 1] = st->php.last_cookie;
		st->stack.n = n + 2;
	}
	if ((info & PHP_CALL_TOP) || !st->php.cursor)
		st->php.state = PYTHON_WALK_STEP_OVER;
	return 0;
}

/* One frame-pointer step: for code without a table (JIT, Go, no .eh_frame). */
static __always_inline __u32 fp_step(struct walk_state *st)
{
	__u64 frame[2]; /* the saved rbp, the return address: one read */
	struct stack_tail_walk *tail = stack_tail_noting();

	st->steps |= STEP_FP; /* attempted: a walk that fails here counts as a frame-pointer one */
	if (!st->bp)
		return UNWIND_STAT_END_FP_CHAIN;
	if (st->bp < st->sp || (st->bp & 7))
		return UNWIND_STAT_END_BAD_CFA;
	if (bpf_probe_read_user(frame, sizeof(frame), (const void *)st->bp))
		return UNWIND_STAT_END_READ;
	stack_tail_note(tail, st->bp, frame[0]);
	stack_tail_note(tail, st->bp + 8, frame[1]);
	st->sp = st->bp + 16;
	st->bp = frame[0];
	st->pc = frame[1];
	st->exact = 0;
	return frame[1] ? 0 : UNWIND_STAT_END_FP_CHAIN;
}

#include "stack_tail_walk.h" /* before the VM walks: their frames are tail frames too */
#include "hotspot_walk.h"

/* --- V8: a JS frame's native pc is replaced by its function (SharedFunctionInfo + cookie) -- */

static __always_inline void v8_count(__u32 stat)
{
	__u32 zero = 0;
	struct v8_counters *c = bpf_map_lookup_elem(&v8_stats, &zero);

	if (c && stat < V8_STAT__COUNT)
		c->c[stat]++;
}

static __always_inline void v8_count_frames(__u32 js, __u32 native, __u32 optimised)
{
	__u32 zero = 0;
	struct v8_counters *c = bpf_map_lookup_elem(&v8_stats, &zero);

	if (c) {
		c->c[V8_STAT_FRAMES] += js;
		c->c[V8_STAT_NATIVE] += native;
		c->c[V8_STAT_OPTIMISED] += optimised;
	}
}

/* Where the process's builtins run. V8 sets it at start, after the process may have been
 * captured, and may remap them once then; before it sets them their pcs are native ones in
 * node's text. Reading it was two cold user reads a sample, so the bounds read are kept with
 * the walk's copy of the process's entry and read again after V8_BLOB_RECHECK walks: a remap
 * at start is seen within that many of a CPU's samples. Until the process sets them (0) they
 * are read every walk. */
#define V8_BLOB_RECHECK 32

static __always_inline void v8_blob_bounds(struct v8_walk *w)
{
	const struct v8_proc *p = &w->proc;
	__u64 code = 0;
	__u32 size = 0;

	if (!w->blob_read_start || w->blob_read_uses >= V8_BLOB_RECHECK) {
		w->blob_read_start = 0;
		if (!p->blob_code_var || read_user_u64(&code, p->blob_code_var) ||
		    bpf_probe_read_user(&size, sizeof(size), (const void *)p->blob_size_var) ||
		    !code)
			return;
		w->blob_read_start = code;
		w->blob_read_end = code + size;
		w->blob_read_uses = 0;
	}
	w->blob_read_uses++;
	w->blob_start = w->blob_read_start;
	w->blob_end = w->blob_read_end;
}

/* Before a walk: the process's V8 layout (its v8_procs entry, copied when the walk's copy is
 * not of this pid under its current proc_maps_seq: user space advances it after each update of
 * the entry), and where its builtins run. */
static __always_inline void v8_walk_start(struct walk_state *st)
{
	const struct v8_proc *proc;

	st->v8.active = 0;
	st->v8.last_fp = 0;
	st->v8.blob_start = st->v8.blob_end = 0;
	st->v8.jit_start = st->v8.jit_end = 0;
	st->v8.native_start = st->v8.native_end = 0;
	st->v8.fn_map = st->v8.sfi_map = st->v8.fn_map2 = 0;
	st->v8.noted_word = 0;
	st->v8.js_frames = st->v8.native_frames = 0;
	st->v8.code = 0;
	st->v8.optimised_frames = 0;
	st->v8.fn = 0;
	if (!(st->in & PROC_IN_V8))
		return;
	if (st->v8.proc_pid != st->pid || st->v8.proc_seq != st->seq) {
		proc = bpf_map_lookup_elem(&v8_procs, &st->pid);
		st->v8.proc_pid = 0;
		if (!proc)
			return;
		st->v8.proc = *proc;
		st->v8.proc_pid = st->pid;
		st->v8.proc_seq = st->seq;
		st->v8.blob_read_start = 0;
	}
	v8_count(V8_STAT_SAMPLES);
	st->v8.active = 1;
	v8_blob_bounds(&st->v8);
}

/* A pc V8 generated or runs as its own: the embedded builtins, or code in no mapping with a
 * table (JIT code: anonymous, and V8's code space grows after the mappings were read). */
static __always_inline bool v8_code(struct walk_state *st, __u64 pc)
{
	const struct unwind_process *proc;
	const struct unwind_mapping *m;
	long found;

	if (!(st->in & PROC_IN_V8) || !st->v8.active)
		return false;
	if ((pc >= st->v8.blob_start && pc < st->v8.blob_end) ||
	    (pc >= st->v8.jit_start && pc < st->v8.jit_end))
		return true;
	if (pc >= st->v8.native_start && pc < st->v8.native_end)
		return false;
	proc = bpf_map_lookup_elem(&unwind_procs, &st->pid);
	if (!proc)
		return true; /* its tables are not loaded yet: frame pointers, JS frames checked */
	found = find_mapping(proc, pc);
	if (found < 0 || found >= UNWIND_MAX_MAPPINGS)
		return true;
	m = &proc->mappings[found & (UNWIND_MAX_MAPPINGS - 1)];
	if (m->table_id != UNWIND_NO_TABLE) {
		st->v8.native_start = m->start;
		st->v8.native_end = m->end;
		return false;
	}
	st->v8.jit_start = m->start;
	st->v8.jit_end = m->end;
	return true;
}

/* The instance type of a heap object whose map is map: read from the map, unless the map is
 * *map_seen, whose type *type_seen is (the walk's last map of that role; a map's type does not
 * change while it lives). false when map is no heap object or cannot be read. */
static __always_inline bool v8_map_type(const struct v8_proc *p, __u64 map, __u16 *ret_type,
					__u64 *map_seen, __u16 *type_seen)
{
	if ((map & 3) != 1)
		return false;
	if (map == *map_seen) {
		*ret_type = *type_seen;
		return true;
	}
	if (bpf_probe_read_user(ret_type, sizeof(*ret_type),
				(const void *)(map - 1 + p->map_instance_type)))
		return false;
	*map_seen = map;
	*type_seen = *ret_type;
	return true;
}

/* A JSFunction's map's instance type (v8_map_type), from the walk's last two such maps when it
 * is one of them: a stack's functions have a few maps (strict, sloppy, methods) that
 * alternate, which one remembered map would read again and again. */
static __always_inline bool v8_fn_map_type(struct v8_walk *w, __u64 map, __u16 *ret_type)
{
	__u64 prev = w->fn_map;
	__u16 prev_type = w->fn_type;

	if (map && map == w->fn_map2) {
		*ret_type = w->fn_type2;
		return true;
	}
	if (!v8_map_type(&w->proc, map, ret_type, &w->fn_map, &w->fn_type))
		return false;
	if (w->fn_map != prev) {
		w->fn_map2 = prev;
		w->fn_type2 = prev_type;
	}
	return true;
}

/* The first V8_OBJECT_WORDS words of the heap object at tagged address word (one read: the
 * fields used are in them, user space checks), and its map's instance type (v8_map_type).
 * false when word is no heap object or its memory cannot be read. */
static __always_inline bool v8_object(const struct v8_proc *p, __u64 word, __u64 *ret_words,
				      __u16 *ret_type, __u64 *map_seen, __u16 *type_seen)
{
	if ((word & 3) != 1 || bpf_probe_read_user(ret_words, V8_OBJECT_WORDS * sizeof(__u64),
						   (const void *)(word - 1)))
		return false;
	return v8_map_type(p, ret_words[(p->object_map / 8) & (V8_OBJECT_WORDS - 1)], ret_type,
			   map_seen, type_seen);
}

/* The frame at fp's function and context slots, and when they lie right under the saved fp
 * (V8's layout on x86_64: function at fp - 16), the saved fp and return address too (*ret_step
 * set); else the two slots alone. From the stack window: a read every few frames. */
static __always_inline bool v8_frame_slots(const struct v8_proc *p, struct vm_stack_window *win,
					   __u64 fp, __u64 *slots, bool *ret_step)
{
	*ret_step = false;
	if (p->fp_function == -16) {
		if (!vm_stack_read(win, fp - 16, slots, 4))
			return false;
		*ret_step = true;
		return true;
	}
	return vm_stack_read(win, fp + p->fp_function, slots, 2);
}

/* The frame at fp is a JS frame: its context slot holds no frame-type Smi, its function slot a
 * JSFunction whose shared is a SharedFunctionInfo. Fills the frame's two words and the code
 * the function runs now. Three reads, five when the function's or the SFI's map is not the
 * walk's last, one when the function is the walk's last (a recursion). slots (4 words) gets
 * the frame's slots, and *ret_step whether its saved fp and return address are in them
 * (v8_frame_slots), even when it is not a JS frame. V8_JS, V8_NOT_JS when the frame's slots
 * alone say it is none (a typed frame's Smi marker, no heap object), V8_UNREAD when they or
 * the heap could not be read or the heap said no (the stack tail keeps only the first two). */
#define V8_JS 1
#define V8_NOT_JS 0
#define V8_UNREAD (-1)
static __always_inline int v8_js_frame(struct v8_walk *w, struct vm_stack_window *win, __u64 fp,
				       __u64 *ret_sfi, __u64 *ret_cookie, __u64 *ret_code,
				       __u64 *slots, bool *ret_step)
{
	const struct v8_proc *p = &w->proc;
	__u64 fn[V8_FUNCTION_WORDS], sfi[V8_OBJECT_WORDS];
	__u16 type;

	fn[V8_FUNCTION_WORDS - 1] = 0; /* past V8_FUNCTION_READ */
	/* the function slot, then the context slot right above it (user space checks) */
	if (!v8_frame_slots(p, win, fp, slots, ret_step))
		return V8_UNREAD;
	if (!(slots[1] & 1) || (slots[0] & 3) != 1)
		return V8_NOT_JS;
	if (slots[0] == w->fn) { /* the same JSFunction in this walk: what it gave then */
		*ret_sfi = w->fn_sfi;
		*ret_cookie = w->fn_cookie;
		*ret_code = w->fn_code;
		return V8_JS;
	}
	if (bpf_probe_read_user(fn, V8_FUNCTION_READ, (const void *)(slots[0] - 1)) ||
	    !v8_fn_map_type(w, fn[(p->object_map / 8) & (V8_FUNCTION_WORDS - 1)], &type) ||
	    type < p->type_function_first || type > p->type_function_last)
		return V8_UNREAD;
	*ret_sfi = fn[(p->function_shared / 8) & (V8_FUNCTION_WORDS - 1)];
	*ret_code = fn[(p->function_code / 8) & (V8_FUNCTION_WORDS - 1)];
	if (!v8_object(p, *ret_sfi, sfi, &type, &w->sfi_map, &w->sfi_type) || type != p->type_sfi)
		return V8_UNREAD;
	*ret_cookie = sfi[(p->sfi_cookie / 8) & (V8_OBJECT_WORDS - 1)];
	w->fn = slots[0];
	w->fn_sfi = *ret_sfi;
	w->fn_cookie = *ret_cookie;
	w->fn_code = *ret_code;
	return V8_JS;
}

/* The third word of an optimised frame (V8_FRAME_OPTIMISED) running code (tagged) at pc (a
 * return address minus one, or the leaf's): 0 when the code is not TurboFan's or Maglev's, pc
 * is not in its instructions (a frame still running code the function replaced, OSR code) or
 * it cannot be read. One read a frame, none for the same code again (a recursion). */
static __always_inline __u64 v8_code_word(struct v8_walk *w, __u64 code, __u64 pc)
{
	const struct v8_proc *p = &w->proc;
	__u64 words[V8_CODE_WORDS + 1], offset;
	__u32 flags, kind;

	if (!p->code_entry || (code & 3) != 1 || code >= (1ULL << (V8_CODE_ADDR_BITS + 3)))
		return 0;
	if (code != w->code) {
		words[V8_CODE_WORDS] = 0;
		if (bpf_probe_read_user(words, V8_CODE_WORDS * sizeof(__u64),
					(const void *)(code - 1 + p->code_entry)))
			return 0;
		flags = words[(p->code_flags / 8) & V8_CODE_WORDS] >> (p->code_flags & 4) * 8;
		kind = (flags >> (p->kind_shift & 31)) & p->kind_mask;
		w->code = code;
		w->code_entry = words[0];
		w->code_size = words[(p->code_size / 8) & V8_CODE_WORDS] >> (p->code_size & 4) * 8;
		w->code_optimised =
		    kind >= p->kind_optimised_first && kind <= p->kind_optimised_last;
	}
	if (!w->code_optimised || pc < w->code_entry || pc - w->code_entry >= w->code_size)
		return 0;
	offset = pc - w->code_entry;
	if (offset > V8_CODE_OFFSET_MAX)
		return 0;
	return (code - 1) >> 3 | offset << V8_CODE_ADDR_BITS;
}

/* Announces a SharedFunctionInfo not sampled before in this process (or with a new cookie), so
 * user space names it while it lives: a function dropped and collected before its window is
 * named, or a short-lived process, keeps its name. note_code's per-CPU slots, then Python's
 * announcement LRU and ring carry it, keyed by the frame's tagged word (the tag tells the
 * runtimes apart). */
static __always_inline void v8_note_function(__u32 pid, __u64 word, __u64 cookie)
{
	if (note_code(pid, word, cookie) == -ENOMEM)
		v8_count(V8_STAT_EVENTS_LOST); /* named when the window is, if still alive */
}

/* fp_step with the saved fp and return address at fp already read (v8_frame_slots). */
static __always_inline __u32 v8_fp_step(struct walk_state *st, __u64 bp, __u64 ra)
{
	st->steps |= STEP_FP;
	if (st->bp < st->sp || (st->bp & 7))
		return UNWIND_STAT_END_BAD_CFA;
	st->sp = st->bp + 16;
	st->bp = bp;
	st->pc = ra;
	st->exact = 0;
	return ra ? 0 : UNWIND_STAT_END_FP_CHAIN;
}

/* The stack words a V8 frame's walk read (v8_frame_slots), noted for the stack tail: the
 * function and context slots, and the saved fp and return address when they came with them. */
static __always_inline void v8_tail_note(const struct v8_proc *p, __u64 fp, const __u64 *slots,
					 bool step)
{
	if (step)
		stack_tail_vm_note(fp - 16, slots, 4);
	else
		stack_tail_vm_note(fp + p->fp_function, slots, 2);
}

/* Records the frame of a pc in V8 code and steps to its caller by frame pointer (V8 keeps
 * one): the JS function whose frame fp is, else (typed frames: entry, exit, stubs, builtins
 * with a frame of their own) the pc, named as a native symbol. A frame whose fp is the last JS
 * frame's (a frameless callee) depends on that frame: it is no stack tail frame. */
static __always_inline long v8_frame_walk(struct walk_state *st, __u64 pc)
{
	__u64 sfi = 0, cookie = 0, code = 0, code_word = 0, note, note_cookie, t0, slots[4];
	__u32 n = st->stack.n;
	bool step = false, own_fp = st->bp != st->v8.last_fp;
	int js = V8_UNREAD;

	if (n >= PROFILE_STACK_DEPTH) { /* checked by the caller: again for the verifier */
		st->stack.flags |= PROFILE_STACK_TRUNCATED;
		st->end = UNWIND_STAT_TRUNCATED;
		return 1;
	}
	if (!own_fp)
		stack_tail_drop();
	else if (stack_tail_vm_frame(st))
		return 1; /* the rest is the thread's cached stack tail */
	t0 = T_NOW();
	if (own_fp)
		js = v8_js_frame(&st->v8, &st->vmstack, st->bp, &sfi, &cookie, &code, slots, &step);
	T_ADD(25, t0);
	if (js == V8_UNREAD)
		stack_tail_drop(); /* the heap decided (or nothing was read): walked each time */
	else
		v8_tail_note(&st->v8.proc, st->bp, slots, step);
	if (js == V8_JS) {
		/* a builtin's pc (the interpreter's, a frameless builtin's) runs no optimised code
		 */
		if (pc < st->v8.blob_start || pc >= st->v8.blob_end)
			code_word = v8_code_word(&st->v8, code, pc);
		if (n >= PROFILE_STACK_DEPTH - 2 && (code_word || n >= PROFILE_STACK_DEPTH - 1)) {
			st->stack.flags |= PROFILE_STACK_TRUNCATED;
			st->end = UNWIND_STAT_TRUNCATED;
			v8_count(V8_STAT_TRUNCATED);
			return 1;
		}
		st->stack.ips[n] = V8_FRAME_TAG | (sfi & V8_FRAME_ADDR_MASK);
		st->stack.ips[n + 1] = cookie;
		st->stack.n = n + 2;
		note = st->stack.ips[n];
		note_cookie = cookie;
		if (code_word && n < PROFILE_STACK_DEPTH - 2) {
			/* the code is announced instead: its tables name the outer function too */
			st->stack.ips[n] |= V8_FRAME_OPTIMISED;
			st->stack.ips[n + 2] = code_word;
			st->stack.n = n + 3;
			note = V8_FRAME_TAG | (code - 1) | V8_CODE_NOTE;
			note_cookie = st->v8.code_entry;
			st->v8.optimised_frames++;
		}
		if (note != st->v8.noted_word || note_cookie != st->v8.noted_cookie) {
			v8_note_function(st->pid, note, note_cookie);
			st->v8.noted_word = note;
			st->v8.noted_cookie = note_cookie;
		}
		st->v8.last_fp = st->bp;
		st->v8.js_frames++;
		stack_tail_vm_recorded(st, n,
				       st->stack.n > n + 2 ? STACK_TAIL_KIND_V8_OPTIMISED
							   : STACK_TAIL_KIND_V8_JS,
				       slots[0], sfi, code);
	} else {
		st->stack.ips[n] = st->exact && n ? st->pc + 1 : st->pc;
		st->stack.n = n + 1;
		st->v8.native_frames++;
	}
	st->end = step ? v8_fp_step(st, slots[2], slots[3]) : fp_step(st);
	stack_tail_stepped_as(st, STEP_FP, STACK_TAIL_BP_USES);
	return st->end ? 1 : 0;
}

/* v8_frame_walk, timed in a -DPROFILE_TIMING=2 build (phase 23: bench/bpf_phases.py). */
static __always_inline long v8_frame(struct walk_state *st, __u64 pc)
{
	__u64 t0 = T_NOW();
	long ret = v8_frame_walk(st, pc);

	T_ADD(23, t0);
	return ret;
}

/* The kernel's rt_sigframe: the handler returned into the trampoline, sp is at the ucontext;
 * uc_mcontext starts 40 bytes in, rbp/rsp/rip at 80/120/128 within it. */
static __always_inline __u32 signal_step(struct walk_state *st)
{
	__u64 bp, sp, ip;

	if (read_user_u64(&bp, st->sp + 120) || read_user_u64(&sp, st->sp + 160) ||
	    read_user_u64(&ip, st->sp + 168))
		return UNWIND_STAT_END_READ;
	st->bp = bp;
	st->sp = sp;
	st->pc = ip;
	st->exact = 1; /* an interrupted instruction, not a return address */
	return ip ? 0 : UNWIND_STAT_END_FP_CHAIN;
}

/* One step with a table row. 0 to go on, else the reason the walk ends. */
static __always_inline __u32 table_step(struct walk_state *st, const struct unwind_row *row)
{
	__u64 cfa = 0, ra, bp = st->bp;
	struct stack_tail_walk *tail = stack_tail_noting();

	if (row->cfa_type != UNWIND_ROW_GAP)
		st->steps |= STEP_TABLE;
	switch (row->cfa_type) {
	case UNWIND_CFA_RSP:
		cfa = st->sp + row->cfa_off;
		break;
	case UNWIND_CFA_RBP:
		cfa = st->bp + row->cfa_off;
		break;
	case UNWIND_CFA_PLT:
		cfa = st->sp + 8 + (((st->pc & 15) >= (__u64)row->cfa_off) ? 8 : 0);
		break;
	case UNWIND_CFA_DEREF_RSP:
		if (read_user_u64(&cfa, st->sp + row->cfa_off))
			return UNWIND_STAT_END_READ;
		stack_tail_note(tail, st->sp + row->cfa_off, cfa);
		break;
	case UNWIND_CFA_DEREF_RBP:
		if (read_user_u64(&cfa, st->bp + row->cfa_off))
			return UNWIND_STAT_END_READ;
		stack_tail_note(tail, st->bp + row->cfa_off, cfa);
		break;
	case UNWIND_ROW_STOP:
		return UNWIND_STAT_END_CLEAN;
	case UNWIND_ROW_SIGNAL:
		return signal_step(st);
	case UNWIND_ROW_GAP:
		return fp_step(st);
	default:
		return UNWIND_STAT_END_CANNOT;
	}
	if (cfa <= st->sp || (cfa & 7))
		return UNWIND_STAT_END_BAD_CFA;
	if (row->rbp_type == UNWIND_RBP_AT_CFA && row->rbp_off == -16) {
		/* the usual push rbp frame: rbp and the return address in one read */
		__u64 frame[2];

		if (bpf_probe_read_user(frame, sizeof(frame), (const void *)(cfa - 16)))
			return UNWIND_STAT_END_READ;
		bp = frame[0];
		ra = frame[1];
		stack_tail_note(tail, cfa - 16, bp);
	} else if (read_user_u64(&ra, cfa - 8) ||
		   (row->rbp_type == UNWIND_RBP_AT_CFA && read_user_u64(&bp, cfa + row->rbp_off))) {
		return UNWIND_STAT_END_READ;
	} else if (row->rbp_type == UNWIND_RBP_AT_CFA) {
		stack_tail_note(tail, cfa + row->rbp_off, bp);
	}
	stack_tail_note(tail, cfa - 8, ra);
	if (row->rbp_type == UNWIND_RBP_UNDEFINED)
		bp = 0;
	st->sp = cfa;
	st->bp = bp;
	st->pc = ra;
	st->exact = 0;
	return ra ? 0 : UNWIND_STAT_END_FP_CHAIN;
}

/* Records the current pc, then steps to its caller. A frame after a signal frame is recorded
 * as pc + 1: user space names every frame but the leaf at pc - 1 (a return address). */
static long unwind_frame(__u32 index, void *ctx)
{
	const struct unwind_process *proc;
	const struct unwind_mapping *m;
	struct unwind_row row;
	struct walk_state *st;
	__u32 zero = 0, n;
	__u64 lookup_pc, t0, t1;
	bool after_core;
	long found, ret;

	st = bpf_map_lookup_elem(&unwind_scratch, &zero);
	if (!st)
		return 1;
	t0 = T_NOW();
	if ((st->in & PROC_IN_PYTHON) && st->py.state == PYTHON_WALK_EMIT) {
		ret = python_frame(st);
		T_ADD(7, t0);
		return ret;
	}
	if ((st->in & PROC_IN_RUBY) && st->rb.state == PYTHON_WALK_EMIT) {
		ret = ruby_frame(st);
		T_ADD(9, t0);
		return ret;
	}
	if ((st->in & PROC_IN_PHP) && st->php.state == PYTHON_WALK_EMIT) {
		ret = php_frame(st);
		T_ADD(11, t0);
		return ret;
	}
	after_core = false;
	if (st->in & PROC_IN_RUBY) {
		after_core = st->rb.after_core;
		st->rb.after_core = 0;
	}
	n = st->stack.n;
	if (n >= PROFILE_STACK_DEPTH) {
		st->stack.flags |= PROFILE_STACK_TRUNCATED;
		st->end = UNWIND_STAT_TRUNCATED;
		return 1;
	}
	lookup_pc = st->exact ? st->pc : st->pc - 1;
	if (hotspot_code(st, lookup_pc))
		return hotspot_frame(st, lookup_pc);
	if (v8_code(st, lookup_pc))
		return v8_frame(st, lookup_pc);
	if ((st->in & PROC_IN_PYTHON) && st->py.state == PYTHON_WALK_STEP_OVER) {
		st->py.state = PYTHON_WALK_NATIVE; /* replaced by the frames it runs */
	} else if (python_eval_frame(st, lookup_pc)) {
		st->py.state = PYTHON_WALK_EMIT; /* this pc again once they are recorded */
		return 0;
	} else if ((st->in & PROC_IN_RUBY) && st->rb.state == PYTHON_WALK_STEP_OVER) {
		st->rb.state = PYTHON_WALK_NATIVE; /* replaced by the frames it runs */
		st->rb.after_core = 1;
	} else if ((found = ruby_exec_frame(st, lookup_pc))) {
		if (ruby_emits(st, found, after_core)) {
			st->rb.state = PYTHON_WALK_EMIT; /* this pc again once they are recorded */
			return 0;
		}
		/* rb_vm_exec after its vm_exec_core: stands for the frames recorded */
	} else if ((st->in & PROC_IN_PHP) && st->php.state == PYTHON_WALK_STEP_OVER) {
		st->php.state = PYTHON_WALK_NATIVE; /* replaced by the PHP frames it runs */
	} else if (php_eval_frame(st, lookup_pc)) {
		st->php.state = PYTHON_WALK_EMIT;
		return 0;
	} else {
		if (stack_tail_frame(st, lookup_pc))
			return 1; /* the rest is the thread's cached stack tail */
		st->stack.ips[n] = st->exact && n ? st->pc + 1 : st->pc;
		st->stack.n = n + 1;
	}

	T_ADD(13, t0);
	t1 = T_NOW();
	/* the caller's mapping is often the callee's: no lookup, no search */
	if (lookup_pc < st->last_map.start || lookup_pc >= st->last_map.end) {
		proc = bpf_map_lookup_elem(&unwind_procs, &st->pid);
		if (!proc) {
			stack_tail_drop();
			st->end = fp_step(st); /* the exec hook dropped it meanwhile */
			return st->end ? 1 : 0;
		}
		found = find_mapping(proc, lookup_pc);
		if (found < 0 || found >= UNWIND_MAX_MAPPINGS) {
			st->end = UNWIND_STAT_END_NO_MAPPING;
			return 1;
		}
		m = &proc->mappings[found & (UNWIND_MAX_MAPPINGS -
					     1)]; /* the mask keeps the verifier sure */
		st->last_map = *m;
	}
	T_ADD(14, t1);
	t1 = T_NOW();
	found =
	    st->last_map.table_id != UNWIND_NO_TABLE
		? lookup_row(st->last_map.table_id, (__u32)(lookup_pc - st->last_map.bias), &row)
		: 1;
	T_ADD(15, t1);
	if (found > 0) {
		if (st->last_map.table_id != UNWIND_NO_TABLE)
			stack_tail_table_pending(); /* not loaded yet, or evicted */
		else
			stack_tail_drop();
		st->end = fp_step(st); /* no table, or evicted: mixed mode */
		return st->end ? 1 : 0;
	}
	if (found < 0) {
		st->end = UNWIND_STAT_END_NO_ROW;
		return 1;
	}
	t1 = T_NOW();
	st->end = table_step(st, &row);
	stack_tail_stepped(st, &row);
	T_ADD(17, t1);
	T_ADD(19, t0);
	return st->end ? 1 : 0;
}

/* The user registers saved at the task's kernel entry (syscall, fault, interrupt). */
static __always_inline bool task_user_regs(struct task_struct *task, struct walk_state *st)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);

	st->pc = BPF_CORE_READ(regs, ip);
	st->sp = BPF_CORE_READ(regs, sp);
	st->bp = BPF_CORE_READ(regs, bp);
	return st->pc != 0;
}

/* The sample interrupted user code (its cs is a user segment). */
static __always_inline bool sample_in_user_mode(struct bpf_perf_event_data *ctx)
{
	/* a whole-word load: the context does not allow the 2-byte one of the cs field */
	return *(__u64 *)((char *)&ctx->regs + __builtin_offsetof(struct pt_regs, cs)) & 3;
}

/* The user registers at the sample: the sample's own when it landed in user mode, else the
 * ones saved at kernel entry. false for a kernel thread (no user stack). */
static __always_inline bool user_regs(struct bpf_perf_event_data *ctx, struct walk_state *st)
{
	struct task_struct *task = bpf_get_current_task_btf();

	if (!task->mm)
		return false;
	if (sample_in_user_mode(ctx)) {
		st->pc = ctx->regs.ip;
		st->sp = ctx->regs.sp;
		st->bp = ctx->regs.bp;
		return true;
	}
	return task_user_regs(task, st);
}

#define PROC_IN_RUNTIMES                                                                           \
	(PROC_IN_PYTHON | PROC_IN_V8 | PROC_IN_RUBY | PROC_IN_PHP | PROC_IN_HOTSPOT)

/* Before a walk, each runtime's side: started when the process runs it, reset when the last
 * walk on this CPU may have left it set, else untouched. Each side is a few cold lines of the
 * scratch (a sample starts with all of it evicted) and a walk reads a side only when st->in
 * holds its runtime, so a process pays for its own runtime only. A side is reset to zeros,
 * what the scratch holds at load. */
static __always_inline void runtimes_walk_start(struct walk_state *st)
{
	__u32 touched = st->in | st->dirty;

	if (touched & PROC_IN_PYTHON)
		python_walk_start(st, (__u32)bpf_get_current_pid_tgid());
	if (touched & PROC_IN_V8)
		v8_walk_start(st);
	if (touched & PROC_IN_RUBY)
		ruby_walk_start(st);
	if (touched & PROC_IN_PHP)
		php_walk_start(st);
	if (touched & PROC_IN_HOTSPOT)
		hotspot_walk_start(st);
	if (touched & (PROC_IN_V8 | PROC_IN_HOTSPOT))
		vm_stack_reset(&st->vmstack); /* the JVM's and V8's walks share it */
	st->dirty = st->in & PROC_IN_RUNTIMES;
}

/* Stores a walked stack under its hash, as store_stack does. The hash, or 0 when the map is
 * full (counted). */
static __always_inline __u64 store_walked_stack(void *stacks, struct profile_stack *stack,
						struct profile_stats *st)
{
	__u64 h = stack_hash(stack) ^ stack->flags;

	h = h ? h : 1;
	if (stack_known__has(stacks, h))
		return h;
	if (bpf_map_lookup_elem(stacks, &h))
		goto known;
	/* -EEXIST: another CPU stored it meanwhile; else the map is full */
	if (bpf_map_update_elem(stacks, &h, stack, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(stacks, &h)) {
		__sync_fetch_and_add(&st->user_stack_full, 1);
		unwind_count(UNWIND_STAT_STACK_MAP_FULL);
		return 0;
	}
known:
	stack_known__note(stacks, h);
	return h;
}

/* The walk from the registers in st to its stored stack (the hash, or 0). */
static __always_inline __u64 walk_user_stack(struct walk_state *st, __u32 pid, void *stacks,
					     struct profile_stats *stats)
{
	__u64 t0, t1, h;
	__u32 kind;

	st->pid = pid;
	st->steps = 0;
	st->end = 0;
	st->exact = 1;
	st->seq = proc_maps_seq[pid & (PROC_MAPS_CACHE_SLOTS - 1)];
	st->stack.n = 0;
	st->stack.flags = 0;
	st->last_map.start = st->last_map.end = 0;
	t0 = T_NOW();
	runtimes_walk_start(st);
	t1 = T_NOW();
	stack_tail_begin(st, (__u32)bpf_get_current_pid_tgid());
	T_ADD(28, t1);
	T_ADD(1, t0);
	t0 = T_NOW();
	/* twice the depth: an interpreter's eval frame takes one more step than it records */
	bpf_loop(2 * (PROFILE_STACK_DEPTH + 1), unwind_frame, NULL, 0);
	T_ADD(2, t0);
	t0 = T_NOW();
	stack_tail_end(st);
	T_ADD(27, t0);
	if ((st->in & PROC_IN_PYTHON) && st->py.frames)
		python_count_n(PYTHON_STAT_FRAMES, st->py.frames);
	if ((st->in & PROC_IN_RUBY) && st->rb.frames)
		ruby_count_n(RUBY_STAT_FRAMES, st->rb.frames);
	if ((st->in & PROC_IN_V8) && (st->v8.js_frames || st->v8.native_frames))
		v8_count_frames(st->v8.js_frames, st->v8.native_frames, st->v8.optimised_frames);
	if ((st->in & PROC_IN_HOTSPOT) && st->hs.active)
		hotspot_count_frames(&st->hs);

	/* no step at all: the leaf's pc was in no mapping */
	kind = st->steps == STEP_FP		     ? UNWIND_STAT_FP
	       : st->steps == (STEP_FP | STEP_TABLE) ? UNWIND_STAT_MIXED
						     : UNWIND_STAT_TABLES;
	unwind_count(kind);
	unwind_count(st->end ? st->end : UNWIND_STAT_END_CLEAN);
	t0 = T_NOW();
	T_ADD(20, t0);
	t0 = T_NOW();
	h = store_walked_stack(stacks, &st->stack, stats);
	T_ADD(3, t0);
	return h;
}

/* Walks the user stack with the tables and stores it in the generation's stacks map: its
 * hash, or 0 (no user stack, map full). A process whose tables are not loaded yet falls back
 * to the kernel's frame-pointer walk. */
static __always_inline __u64 unwind_user_stack(struct bpf_perf_event_data *ctx, __u32 pid,
					       void *stacks, struct profile_stats *stats)
{
	struct walk_state *st;
	__u32 zero = 0;

	__u32 in = proc_maps(pid);

	/* a V8 process is walked here before its tables load (by frame pointers, as the kernel
	 * would): its JS frames are found either way */
	if (!(in & (PROC_IN_UNWIND | PROC_IN_V8 | PROC_IN_HOTSPOT))) {
		unwind_count(UNWIND_STAT_NOT_LOADED);
		return store_stack(ctx, stacks, BPF_F_USER_STACK, stats);
	}
	st = bpf_map_lookup_elem(&unwind_scratch, &zero);
	if (!st)
		return 0;
	st->in = in;
	if (!user_regs(ctx, st)) {
		unwind_count(UNWIND_STAT_KERNEL_THREAD);
		return 0;
	}
	return walk_user_stack(st, pid, stacks, stats);
}

/* Same, for a task in the kernel (switched out): its registers saved at kernel entry. */
static __always_inline __u64 unwind_task_user_stack(void *ctx, struct task_struct *task, __u32 pid,
						    void *stacks, struct profile_stats *stats)
{
	struct walk_state *st;
	__u32 zero = 0;

	__u32 in = proc_maps(pid);

	/* a V8 process is walked here before its tables load (by frame pointers, as the kernel
	 * would): its JS frames are found either way */
	if (!(in & (PROC_IN_UNWIND | PROC_IN_V8 | PROC_IN_HOTSPOT))) {
		unwind_count(UNWIND_STAT_NOT_LOADED);
		return store_stack(ctx, stacks, BPF_F_USER_STACK, stats);
	}
	st = bpf_map_lookup_elem(&unwind_scratch, &zero);
	if (!st)
		return 0;
	st->in = in;
	if (!task_user_regs(task, st)) {
		unwind_count(UNWIND_STAT_KERNEL_THREAD);
		return 0;
	}
	return walk_user_stack(st, pid, stacks, stats);
}

/* User stacks: with unwind_tables, walked here from .eh_frame tables (frame pointers where a
 * mapping has none); else by the kernel with frame pointers (BPF_F_USER_STACK), which loses
 * frames in code built without them and skips the caller of GCC's frameless leaves. */
SEC("perf_event")
int do_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, tid = (__u32)id, gen = generation, zero = 0;
	__u64 period_ns = ctx->sample_period;
	struct profile_key key = {};
	struct profile_stats *st;
	struct sample_ids ids;
	void *counts, *stacks;
	__u64 t0 = T0_NOW(), t1;

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
	t1 = T_NOW();
	if (!sample_ids__hit(&ids, pid, tid, &key.image)) {
		key.image = note_pid(st, pid, tid, key.cgroup_id);
		note_thread_name(tid);
		sample_ids__fill(&ids, pid, tid, key.image);
	}
	T_ADD(6, t1);
	counts = gen & 1 ? (void *)&counts1 : (void *)&counts0;
	stacks = gen & 1 ? (void *)&stacks1 : (void *)&stacks0;
	if (unwind_tables)
		key.user_stack = unwind_user_stack(ctx, pid, stacks, st);
	else
		key.user_stack = store_stack(ctx, stacks, BPF_F_USER_STACK, st);
	t1 = T_NOW();
	/* sampled in user mode: the kernel has no stack to give (bpf_get_stack would say 0
	 * frames after setting up a callchain buffer) */
	if (!sample_in_user_mode(ctx))
		key.kernel_stack = store_stack(ctx, stacks, 0, st);
	T_ADD(4, t1);
	t1 = T_NOW();
	counts_batch__add(gen, counts, &key, period_ns, st);
	T_ADD(5, t1);
	T0_ADD(t0);
	return 0;
}

/* After an exec the pid's image changed: mark it so its next sample triggers a recapture, and
 * advance its image number so later samples are told from the old image's; its unwind
 * mappings go (frame pointers until the new image's tables). A raw tracepoint attaches by
 * name through bpf(2): unlike tp/, it needs no mounted tracefs (a container usually has
 * none), without which a child first sampled between fork and exec would keep its parent's
 * name, symbols and service. */
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
	bpf_map_delete_elem(&unwind_procs, &pid);
	bpf_map_delete_elem(&python_procs, &pid);
	bpf_map_delete_elem(&v8_procs, &pid);
	bpf_map_delete_elem(&ruby_procs, &pid);
	bpf_map_delete_elem(&php_procs, &pid);
	bpf_map_delete_elem(&hotspot_procs, &pid);
	proc_maps_changed(pid);
	return 0;
}

/* --- off-CPU time: where threads block, charged when they run again ---------------------- */

/* Set by user space at run time (mmap'ed .bss). */
volatile __u32 offcpu_mode = OFFCPU_MODE_ALL; /* enum offcpu_mode */
volatile __u32 offcpu_self_tgid = 0;	      /* the agent: never recorded */
volatile __u64 offcpu_min_ns = 0;	      /* shorter blocks are dropped (counted) */
volatile __u32 offcpu_keep_below_value = 0;   /* offcpu_keep_below(N); 0 keeps every block */
volatile __u32 offcpu_weight_value = OFFCPU_WEIGHT_ONE; /* offcpu_weight() of it */
volatile __u32 offcpu_max_kept_value = 0; /* kept blocks per CPU per second at most; 0: no cap */

/* Threads with a kept block pending, by tid % OFFCPU_PENDING_BUCKETS: a switch-in whose bucket
 * is 0 needs no task-storage lookup, and at tens of thousands of switches a second with a
 * capped keep rate nearly every bucket is 0. Counted up when a thread's mark goes from 0 to 1,
 * down when it goes back, so a count is never below its threads' marks (a mark left by a
 * detach, or freed with its thread, only keeps the lookups on). */
#define OFFCPU_PENDING_BUCKETS 256
__u32 offcpu_pending[OFFCPU_PENDING_BUCKETS];

COUNTS_MAP(offcpu_counts0);
COUNTS_MAP(offcpu_counts1);

/* tid -> where and when a kept block happened: written and deleted on the kept path only (1 in
 * N blocks), so user space can list the stacks pending blocks refer to. LRU: a thread blocked
 * for longer than the others' churn takes to fill it loses that block, nothing else. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, struct offcpu_start);
	__uint(max_entries, OFFCPU_MAX_STARTS);
} offcpu_starts SEC(".maps");

/* The thread's own mark that it has a kept block pending: the one lookup every switch-in of a
 * user thread makes. Task-local storage hangs off the task itself (no hashing, no bucket
 * lock), is created at a thread's first kept block and freed with the thread. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offcpu_task);
} offcpu_tasks SEC(".maps");

/* tgid -> enum offcpu_tgid_state (OFFCPU_MODE_ALLOW). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, OFFCPU_MAX_TGIDS);
} offcpu_tgids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct offcpu_stats);
	__uint(max_entries, 1);
} offcpu_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct offcpu_rate);
	__uint(max_entries, 1);
} offcpu_rates SEC(".maps");

#define TASK_DEAD_STATE 0x80 /* TASK_DEAD: the thread exits, it will not run again */

/* Cheap checks on the task alone: user threads of the recorded process(es), not the agent. */
static __always_inline bool offcpu_candidate(struct task_struct *prev, __u32 pid)
{
	if (!pid || pid == offcpu_self_tgid || (targ_pid && pid != targ_pid))
		return false;
	return prev->mm != NULL; /* kernel threads: their waits are the kernel's idle work */
}

/* The announcement of a process the filter does not know; false when the ring buffer is full
 * (counted in events_lost as every lost announcement). */
static __always_inline bool offcpu_announce(__u32 pid, __u32 tid)
{
	struct profile_event *e;
	struct profile_stats *st;
	__u32 zero = 0;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		st = bpf_map_lookup_elem(&stats, &zero);
		if (st)
			__sync_fetch_and_add(&st->events_lost, 1);
		return false;
	}
	e->type = OFFCPU_EVENT_UNKNOWN_TGID;
	e->pid = pid;
	e->tid = tid;
	e->image = 0;
	e->cgroup_id = bpf_get_current_cgroup_id();
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, 0);
	return true;
}

/* Is this process's off-CPU time recorded? One lookup, made for kept blocks only. Unknown
 * processes are announced once (the daemon decides by their service) and skipped until
 * allowed. An announcement the full ring buffer lost would leave the process pending (never
 * decided): it is unknown again instead, announced at its next kept block (counted). */
static __always_inline bool offcpu_allowed(struct task_struct *prev, __u32 pid,
					   struct offcpu_stats *os)
{
	__u32 pending = OFFCPU_TGID_PENDING, *state;

	if (offcpu_mode == OFFCPU_MODE_ALL)
		return true;
	state = bpf_map_lookup_elem(&offcpu_tgids, &pid);
	if (state)
		return *state == OFFCPU_TGID_ALLOW;
	/* -EEXIST: another CPU announced it first */
	if (bpf_map_update_elem(&offcpu_tgids, &pid, &pending, BPF_NOEXIST))
		return false;
	if (!offcpu_announce(pid, prev->pid)) {
		bpf_map_delete_elem(&offcpu_tgids, &pid);
		os->announce_lost++;
	}
	return false;
}

/* Time the task has waited on run queues so far (sched_info, CONFIG_SCHED_INFO): run_delay
 * sums the waits that ended; a wait under way started at last_queued, in the clock of the run
 * queue the task is on (reached through its CFS queue: the runqueues per-CPU symbol is not in
 * every kallsyms). 0 on kernels without them: their run-queue wait counts as blocked. */
static __always_inline __u64 offcpu_queued_ns(struct task_struct *t)
{
	__u64 delay, queued, now;

	if (!bpf_core_field_exists(t->sched_info))
		return 0;
	delay = BPF_CORE_READ(t, sched_info.run_delay);
	queued = BPF_CORE_READ(t, sched_info.last_queued);
	if (queued && bpf_core_field_exists(t->se.cfs_rq)) {
		now = BPF_CORE_READ(t, se.cfs_rq, rq, clock);
		if (now > queued)
			delay += now - queued;
	}
	return delay;
}

/* The keep-below of this CPU's next block and its weight: the 1-in-N rule, capped at
 * offcpu_max_kept_value kept a second on this CPU (the rate of its last window of blocks). */
static __always_inline __u32 offcpu_keep_below_now(__u32 *ret_weight)
{
	__u32 below = offcpu_keep_below_value, weight = offcpu_weight_value, zero = 0;
	__u32 max_kept = offcpu_max_kept_value;
	struct offcpu_rate *r;

	*ret_weight = weight;
	if (!max_kept)
		return below;
	r = bpf_map_lookup_elem(&offcpu_rates, &zero);
	if (!r)
		return below;
	if (offcpu_rate_due(r))
		offcpu_rate_close(r, bpf_ktime_get_ns(), max_kept);
	return offcpu_rate_below(r, below, weight, ret_weight);
}

/* prev (the current task) blocks: 1 in N of them (fewer past the per-CPU cap), drawn before any
 * map lookup, keep their stacks and the time. */
static __always_inline void offcpu_block(void *ctx, struct task_struct *prev,
					 struct offcpu_stats *os)
{
	__u32 pid = prev->tgid, tid = prev->pid, gen = generation, zero = 0, below, weight;
	struct offcpu_start start = {};
	struct offcpu_task *task;
	struct profile_stats *st;
	void *stacks;

	if (!offcpu_candidate(prev, pid))
		return;
	os->blocks++;
	below = offcpu_keep_below_now(&weight);
	if (!offcpu_kept(bpf_get_prandom_u32(), below))
		return;
	if (!offcpu_allowed(prev, pid, os))
		return;
	os->kept++;
	st = bpf_map_lookup_elem(&stats, &zero);
	task = bpf_task_storage_get(&offcpu_tasks, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st || !task)
		return;
	start.pid = pid;
	start.gen = gen;
	start.weight = weight;
	start.cgroup_id = bpf_get_current_cgroup_id();
	start.image = note_pid(st, pid, tid, start.cgroup_id);
	stacks = gen & 1 ? (void *)&stacks1 : (void *)&stacks0;
	if (unwind_tables)
		start.user_stack = unwind_task_user_stack(ctx, prev, pid, stacks, st);
	else
		start.user_stack = store_stack(ctx, stacks, BPF_F_USER_STACK, st);
	start.kernel_stack = store_stack(ctx, stacks, 0, st);
	start.queued_ns = offcpu_queued_ns(prev);
	start.block_ns = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&offcpu_starts, &tid, &start, BPF_ANY)) {
		os->starts_full++;
		return;
	}
	if (!task->pending) {
		task->pending = 1;
		__sync_fetch_and_add(&offcpu_pending[tid & (OFFCPU_PENDING_BUCKETS - 1)], 1);
	}
}

/* A stack stored in another generation than the one being written: copied over (user space
 * keeps the stacks of pending blocks until they are charged). Its hash, or 0 when gone. */
static __always_inline __u64 offcpu_move_stack(__u64 hash, __u32 from, void *to)
{
	void *src = from & 1 ? (void *)&stacks1 : (void *)&stacks0;
	struct profile_stack *stack;

	if (!hash || bpf_map_lookup_elem(to, &hash))
		return hash;
	stack = bpf_map_lookup_elem(src, &hash);
	if (!stack)
		return 0;
	/* -EEXIST: another CPU copied it meanwhile; else the map is full */
	if (bpf_map_update_elem(to, &hash, stack, BPF_NOEXIST) && !bpf_map_lookup_elem(to, &hash))
		return 0;
	return hash;
}

/* Weighted value of ns: ns * weight / OFFCPU_WEIGHT_ONE without overflowing for hours. */
static __always_inline __u64 offcpu_weighted(__u64 ns, __u32 weight)
{
	return (ns >> 16) * weight + (((ns & 0xffff) * weight) >> 16);
}

static __always_inline void offcpu_add(void *counts, struct profile_key *key, __u64 ns,
				       struct offcpu_stats *os)
{
	struct profile_value one = {1, ns}, *val;

	val = bpf_map_lookup_elem(counts, key);
	if (!val && bpf_map_update_elem(counts, key, &one, BPF_NOEXIST)) {
		/* -EEXIST: another CPU inserted the key meanwhile; else the map is full */
		val = bpf_map_lookup_elem(counts, key);
		if (!val) {
			os->map_full++;
			os->map_full_ns += ns;
			return;
		}
	}
	if (val) {
		__sync_fetch_and_add(&val->count, 1);
		__sync_fetch_and_add(&val->period_ns, ns);
	}
	os->charged++;
	os->blocked_ns += ns;
}

/* next runs again: its block (switch-out to wake-up) is charged to the stacks it blocked in;
 * wake-up to now it was runnable, waiting for a CPU (counted apart, in no profile). Threads
 * without a kept block pending cost a read of their pending bucket, at most one task-storage
 * lookup. */
static __always_inline void offcpu_resume(struct task_struct *next, struct offcpu_stats *os)
{
	__u32 tid = next->pid, gen = generation;
	struct profile_key key = {};
	struct offcpu_start *start;
	struct offcpu_task *task;
	__u64 now, queued, blocked;
	void *counts, *stacks;

	if (!offcpu_pending[tid & (OFFCPU_PENDING_BUCKETS - 1)])
		return;
	task = bpf_task_storage_get(&offcpu_tasks, next, 0, 0);
	if (!task || !task->pending)
		return;
	task->pending = 0;
	__sync_fetch_and_add(&offcpu_pending[tid & (OFFCPU_PENDING_BUCKETS - 1)], (__u32)-1);
	start = bpf_map_lookup_elem(&offcpu_starts, &tid);
	if (!start) /* the LRU took it */
		return;
	now = bpf_ktime_get_ns();
	queued = offcpu_queued_ns(next);
	queued = queued > start->queued_ns ? queued - start->queued_ns : 0;
	blocked = now > start->block_ns ? now - start->block_ns : 0;
	if (queued > blocked)
		queued = blocked;
	blocked -= queued;
	os->runqueue_ns += offcpu_weighted(queued, start->weight);
	if (blocked < offcpu_min_ns) {
		os->below_min++;
		os->below_min_ns += offcpu_weighted(blocked, start->weight);
		bpf_map_delete_elem(&offcpu_starts, &tid);
		return;
	}
	key.pid = start->pid;
	key.image = start->image;
	key.cgroup_id = start->cgroup_id;
	key.user_stack = start->user_stack;
	key.kernel_stack = start->kernel_stack;
	if ((start->gen ^ gen) & 1) {
		stacks = gen & 1 ? (void *)&stacks1 : (void *)&stacks0;
		key.user_stack = offcpu_move_stack(key.user_stack, start->gen, stacks);
		key.kernel_stack = offcpu_move_stack(key.kernel_stack, start->gen, stacks);
		if ((start->user_stack && !key.user_stack) ||
		    (start->kernel_stack && !key.kernel_stack))
			os->stack_lost++;
	}
	counts = gen & 1 ? (void *)&offcpu_counts1 : (void *)&offcpu_counts0;
	offcpu_add(counts, &key, offcpu_weighted(blocked, start->weight), os);
	/* after the copy: user space keeps the stacks while this record exists */
	bpf_map_delete_elem(&offcpu_starts, &tid);
}

/* Blocked = switched out in a state other than TASK_RUNNING, not preempted. A preempted or
 * yielding thread stays runnable: that wait is neither on- nor off-CPU time. */
SEC("tp_btf/sched_switch")
int BPF_PROG(offcpu_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	struct offcpu_stats *os;
	__u32 zero = 0;

	os = bpf_map_lookup_elem(&offcpu_stats, &zero);
	if (!os)
		return 0;
	os->switches++;
	if (!preempt && prev_state && !(prev_state & TASK_DEAD_STATE))
		offcpu_block(ctx, prev, os);
	if (next->pid && next->mm)
		offcpu_resume(next, os);
	return 0;
}
