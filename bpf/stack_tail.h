/* SPDX-License-Identifier: Apache-2.0 */
/* The validated per-thread stack tail (types, maps, read notes): the outer native frames of a
 * thread's stack, cached with the stack words their unwinding read, reused while those match. */
#ifndef ROOTTRACE_STACK_TAIL_H
#define ROOTTRACE_STACK_TAIL_H

/* The outer part of a thread's stack (the interpreter's eval loop's callers down to main and
 * _start, or a native program's outer calls) is the same sample after sample, and walking it
 * costs ~1 us a frame under an interpreter (cold rows and stack lines). A step of the unwinder
 * is a function of its state (pc, sp, bp), the tables (fixed for a process's mapping set) and
 * the stack words it reads: a walk that reaches a cached frame's state again, where every word
 * the cached walk read below it still holds the value it read, would produce the cached frames
 * exactly. So each thread keeps the frames of its last walk that are pure native steps (a
 * "tail"), each frame's state, and the words read with their values; a later walk compares its
 * frames' states with the tail's as it goes, and on equal state re-reads the noted words (reads
 * of at most STACK_TAIL_WINDOW bytes over the stretches they lie in) and, when every one is
 * unchanged, copies the frames instead of walking them. A difference falls back to the walk (the
 * next frames may still match: only the frames above the last changed word are walked), which
 * stores a fresh tail at its end.
 *
 * Where a tail starts: at the first frame (from the leaf) after which the walk took only
 * native table or frame-pointer steps — never at the leaf (its pc is not a return address),
 * and below the last interpreter eval frame (Python, Ruby and PHP frames come from the
 * interpreter's memory, not the stack, so a tail never covers one: a frame whose pc lies in an
 * eval loop, or that the interpreter walk steps over, ends the tail being recorded). Any
 * frame of the tail can be where a later walk joins it: the merge of the walk's frames with
 * the tail's, by sp, costs one comparison a frame. In V8 and HotSpot processes the tail is the
 * native frames below the outermost JS or Java frame (stack_tail_vm.h). */
#define STACK_TAIL_FRAMES 24	/* frames of a tail (a full recording restarts: the outer ones) */
#define STACK_TAIL_SLOTS 48	/* stack words noted (a step reads 1-3) */
#define STACK_TAIL_SPAN 16384	/* bytes from a tail's first frame's sp to its last word */
#define STACK_TAIL_WINDOW 512	/* bytes a validating read takes: the words in a few reads, */
				/* past the big buffers between them (PHP's MAXPATHLEN ones) */
#define STACK_TAIL_THREADS 2048 /* threads with a tail (LRU): 1.6 KiB each, 3.3 MiB */

/* How a frame's step treats the incoming rbp (STACK_TAIL_BP_*): the frames from a join on
 * depend on rbp only if a step uses it before another reloads it from the stack. A VM's eval
 * loop clobbers rbp (-fomit-frame-pointer code keeps data in it): its caller's frame is
 * reached with an rbp that changes with every sample, yet the walk from there on may not
 * read it. */
#define STACK_TAIL_BP_USES 1u	/* the CFA is rbp-based, or a frame-pointer step */
#define STACK_TAIL_BP_PASSES 2u /* neither used nor restored: the caller gets it as is */
#define STACK_TAIL_BP_NEEDED 4u /* (stored tails) the walk from this frame on reads it */

/* One frame of a tail: the unwinder's state when it reached the frame (its pc is the frame's
 * recorded address: tails have no leaf), the first of its noted words, and its step kind. */
struct stack_tail_frame {
	__u64 pc, sp, bp;
	__u16 slot_first;
	__u16 steps;  /* STEP_TABLE or STEP_FP: the walk's kind counters */
	__u32 bp_use; /* STACK_TAIL_BP_* */
};

/* A thread's tail (the LRU's value; keyed by tid). */
struct stack_tail {
	__u32 pid;
	__u32 seq; /* proc_maps_seq of the pid's slot: a new mapping set invalidates */
	__u32 n_frames, n_slots;
	__u32 end; /* enum unwind_stat that ended the walk */
	__u32 pad;
	__u64 span_hi; /* past the highest noted word */
	__u64 vm_key;  /* stack_tail_vm_key when recorded (stack_tail_vm.h) */
	struct stack_tail_frame frames[STACK_TAIL_FRAMES];
	__u64 slot_addr[STACK_TAIL_SLOTS];
	__u64 slot_val[STACK_TAIL_SLOTS];
	__u8 slot_frame[STACK_TAIL_SLOTS]; /* the frame whose step read it */
};

/* A walk's side: the tail it may join (the frames' states, copied at its start) and the tail
 * it records for the next walk. */
struct stack_tail_walk {
	__u32 on;		/* tails used in this walk */
	__u32 tid, seq;		/* the thread, proc_maps_seq at the walk's start */
	__u32 n_cand, j;	/* frames of the cached tail; the next to compare */
	__u32 n_rec, n_slots;	/* frames and words of the tail being recorded */
	__u32 noting;		/* the current frame is recorded: its step notes its reads */
	__u32 hit, fallbacks;	/* the walk ended with the cached tail; validations failed */
	__u32 copied;		/* frames copied from the tail */
	__u32 pending;		/* a step found its table not loaded yet: no tail stored */
	__u64 vm_key;		/* stack_tail_vm_key at the walk's start */
	__u64 next_pc, next_sp; /* the state the last recorded frame's step led to */
	__u64 win_lo, win_len;	/* the stack bytes read into span (win_lo 0: none yet) */
	struct stack_tail_frame cand[STACK_TAIL_FRAMES];
	struct stack_tail_frame rec[STACK_TAIL_FRAMES];
	__u64 slot_addr[STACK_TAIL_SLOTS];
	__u64 slot_val[STACK_TAIL_SLOTS];
	__u8 slot_frame[STACK_TAIL_SLOTS];
	__u64 span[STACK_TAIL_WINDOW / 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, struct stack_tail);
	__uint(max_entries, STACK_TAIL_THREADS);
} stack_tails SEC(".maps");

/* The walk's side of the tails, per CPU (the walk's own state is elsewhere: too big). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct stack_tail_walk);
	__uint(max_entries, 1);
} stack_tail_scratch SEC(".maps");

/* A tail is built here before it goes into the LRU (too big for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct stack_tail);
	__uint(max_entries, 1);
} stack_tail_build SEC(".maps");

/* The walk's tail side when the frame being stepped is recorded into the tail (its reads are
 * noted), else NULL: one per-CPU lookup a step. */
static __always_inline struct stack_tail_walk *stack_tail_noting(void)
{
	__u32 zero = 0;
	struct stack_tail_walk *t = bpf_map_lookup_elem(&stack_tail_scratch, &zero);

	return t && t->noting ? t : NULL;
}

/* A recorded frame's step read the word at addr: noted, so a later walk can validate it. */
static __always_inline void stack_tail_note(struct stack_tail_walk *t, __u64 addr, __u64 val)
{
	__u32 i;

	if (!t)
		return;
	i = t->n_slots;
	if (i >= STACK_TAIL_SLOTS) { /* not reached: a frame starts with room for three */
		t->noting = 0;
		t->n_rec = 0;
		return;
	}
	t->slot_addr[i] = addr;
	t->slot_val[i] = val;
	t->slot_frame[i] = t->n_rec - 1;
	t->n_slots = i + 1;
}

#endif
