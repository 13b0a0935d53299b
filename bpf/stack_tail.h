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
 * the tail's, by sp, costs one comparison a frame. In V8 and HotSpot processes JS and Java
 * frames are tail frames too, with what validates them (stack_tail_vm.h). */
#define STACK_TAIL_FRAMES 32	 /* frames of a tail (a full recording drops its inner half) */
#define STACK_TAIL_SLOTS 96	 /* stack words noted (a step reads 1-3, a VM frame's up to 4) */
#define STACK_TAIL_FRAME_WORDS 4 /* room a recorded frame starts with in the noted words */
#define STACK_TAIL_IPS 3	 /* words a frame records: a pc, or a VM frame's 2-3 (the tag) */
#define STACK_TAIL_SPAN 16384	 /* bytes from a tail's first frame's sp to its last word */
#define STACK_TAIL_WINDOW 512	 /* bytes a validating read takes: the words in a few reads, */
				 /* past the big buffers between them (PHP's MAXPATHLEN ones) */
#define STACK_TAIL_THREADS 2048	 /* threads with a tail (LRU): 3.9 KiB each, 7.8 MiB */

/* A stored noted word's byte offset from its tail's first frame's sp (a span is 16 KiB). */
#define STACK_TAIL_SLOT_OFF 0xffff

/* What a tail frame is, for the walk's counters when it is copied (STACK_TAIL_KIND_*). */
#define STACK_TAIL_KIND_NATIVE 0
#define STACK_TAIL_KIND_V8_JS 1	       /* a JS frame (V8 native ones are NATIVE) */
#define STACK_TAIL_KIND_V8_OPTIMISED 2 /* a JS frame of optimised code (its third word) */
#define STACK_TAIL_KIND_HS_INTERPRETED 3
#define STACK_TAIL_KIND_HS_COMPILED 4
#define STACK_TAIL_KIND_HS_STUB 5

/* How a frame's step treats the incoming rbp (STACK_TAIL_BP_*): the frames from a join on
 * depend on rbp only if a step uses it before another reloads it from the stack. A VM's eval
 * loop clobbers rbp (-fomit-frame-pointer code keeps data in it): its caller's frame is
 * reached with an rbp that changes with every sample, yet the walk from there on may not
 * read it. */
#define STACK_TAIL_BP_USES 1u	/* the CFA is rbp-based, or a frame-pointer step */
#define STACK_TAIL_BP_PASSES 2u /* neither used nor restored: the caller gets it as is */
#define STACK_TAIL_BP_NEEDED 4u /* (stored tails) the walk from this frame on reads it */

/* One frame of a tail: the unwinder's state when it reached the frame (tails have no leaf: its
 * pc is a return address), what it recorded (its pc; a VM frame's words), the first of its
 * noted words, and its step kind. A VM frame also keeps the heap words a join re-reads
 * (stack_tail_vm.h says why): a V8 JS frame's JSFunction (the function slot's word, noted) and
 * the shared and code words of it its record came from; a compiled Java frame's nmethod's
 * Method* field (its address) and the Method* it held. */
struct stack_tail_frame {
	__u64 pc, sp, bp;
	__u64 ips[STACK_TAIL_IPS];
	__u64 fn, fn_shared, fn_code; /* fn 0: nothing to re-read */
	__u16 slot_first;
	__u16 steps; /* STEP_TABLE or STEP_FP: the walk's kind counters */
	__u8 bp_use; /* STACK_TAIL_BP_* */
	__u8 n_ips;  /* 1..STACK_TAIL_IPS */
	__u8 kind;   /* STACK_TAIL_KIND_* */
	__u8 pad;
};

/* A thread's tail (the LRU's value; keyed by tid). A walk reads it in place: its size and first
 * frame's sp at the walk's start, its frames' sp (together, near the start: the walk compares
 * its frames with them) and the rest at a join. tid is the first word a store writes: an
 * evicted LRU element is reused at once, so a join checks it again after reading the tail
 * (stack_tail_join). */
struct stack_tail {
	__u32 tid;
	__u32 pid;
	__u32 seq; /* proc_maps_seq of the pid's slot: a new mapping set invalidates */
	__u32 n_frames, n_slots;
	__u32 end;			   /* enum unwind_stat that ended the walk */
	__u64 span_hi;			   /* past the highest noted word */
	__u64 vm_key;			   /* stack_tail_vm_key when recorded (stack_tail_vm.h) */
	__u64 frame_sp[STACK_TAIL_FRAMES]; /* frames[i].sp */
	struct stack_tail_frame frames[STACK_TAIL_FRAMES];
	/* a noted word: its byte offset from frame_sp[0] (STACK_TAIL_SLOT_OFF) and the frame
	 * whose step read it (>> 16); 4 bytes, not a 64-bit address and a byte: a join reads
	 * them cold, and they were half the lines it read */
	__u32 slot_at[STACK_TAIL_SLOTS];
	__u64 slot_val[STACK_TAIL_SLOTS];
};

/* A walk's side: the tail it may join (read in place: only its size and the sp of the frame to
 * compare next are kept here) and the tail it records for the next walk. */
struct stack_tail_walk {
	__u32 on;		/* tails used in this walk */
	__u32 tid, seq;		/* the thread, proc_maps_seq at the walk's start */
	__u32 n_cand, j;	/* frames of the cached tail; the next to compare */
	__u32 n_rec, n_slots;	/* frames and words of the tail being recorded */
	__u32 noting;		/* the current frame is recorded: its step notes its reads */
	__u32 hit, fallbacks;	/* the walk ended with the cached tail; validations failed */
	__u32 copied;		/* frames copied from the tail */
	__u32 pending;		/* a step found its table not loaded yet: no tail stored */
	__u32 copied_steps;	/* STEP_* of the frames copied (counted once the copy stands) */
	__u64 copied_kinds;	/* a byte per STACK_TAIL_KIND_* of the frames copied (same) */
	__u64 vm_key;		/* stack_tail_vm_key at the walk's start */
	__u64 next_pc, next_sp; /* the state the last recorded frame's step led to */
	__u64 win_lo, win_len;	/* the stack bytes read into span (win_lo 0: none yet) */
	__u64 cand_next_sp;	/* the tail's frame j's sp (0: read it at the next join) */
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
	if (i >= STACK_TAIL_SLOTS) { /* not reached: a frame starts with room for four */
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
