/* SPDX-License-Identifier: Apache-2.0 */
/* The stack tail in the native walk (stack_tail.h says why): joining the thread's cached tail
 * at a frame whose state it holds, recording this walk's tail, storing it at the walk's end. */
#ifndef ROOTTRACE_STACK_TAIL_WALK_H
#define ROOTTRACE_STACK_TAIL_WALK_H

#include "stack_tail.h"
#include "stack_tail_vm.h"

/* Keeps an index in one register between its bounds check and its use (clang would otherwise
 * use a copy the verifier knows no bound of). */
#define STACK_TAIL_KEEP(x) asm volatile("" : "+r"(x))

static __always_inline struct stack_tail_walk *stack_tail_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&stack_tail_scratch, &zero);
}

static __always_inline void stack_tail_count(__u32 stat, __u64 n)
{
	__u32 zero = 0;
	struct unwind_counters *c = bpf_map_lookup_elem(&unwind_stats, &zero);

	if (c && stat < UNWIND_STAT__COUNT)
		c->c[stat] += n;
}

/* Before a walk: the thread's tail, when it was recorded in this process under its current
 * mapping set (proc_maps_seq moves with every new set: other binaries, other tables) and VM
 * state (stack_tail_vm_key). A global function: verified once, apart from the walk's paths. */
__noinline int stack_tail_begin(struct walk_state *st, __u32 tid)
{
	struct stack_tail_walk *t = stack_tail_get();
	const struct stack_tail *e;
	__u64 n, i; /* indexes are 64 bits: their bounds checks and uses are one register */

	if (!st || !t)
		return 0;
	t->on = 1; /* V8 and HotSpot too: below their outermost frame (stack_tail_vm.h) */
	t->tid = tid;
	t->vm_key = stack_tail_vm_key(st);
	t->seq = proc_maps_seq[st->pid & (PROC_MAPS_CACHE_SLOTS - 1)];
	t->n_cand = t->j = t->n_rec = t->n_slots = t->noting = 0;
	t->hit = t->fallbacks = t->copied = t->pending = 0;
	t->win_lo = t->win_len = 0;
	if (!t->on)
		return 0;
	e = bpf_map_lookup_elem(&stack_tails, &tid);
	if (!e || e->pid != st->pid || e->seq != t->seq || e->vm_key != t->vm_key)
		return 0;
	n = e->n_frames;
	for (i = 0; i < STACK_TAIL_FRAMES && i < n; i++)
		t->cand[i] = e->frames[i];
	t->n_cand = i;
	return 0;
}

/* The tail's words from cand[j] on against the stack now, read a window at a time (the last
 * one kept for a later try of this walk). -1 when every word holds its noted value, else the
 * outermost frame whose step read a changed word (the frames above it may still join);
 * STACK_TAIL_FRAMES when the stack cannot be read. */
static __always_inline int stack_tail_validate(struct stack_tail_walk *t,
					       const struct stack_tail *e, __u64 j)
{
	__u64 first = t->cand[j].slot_first, k, addr, len, off;
	int bad = -1;

	for (__u64 s = 0; s < STACK_TAIL_SLOTS; s++) {
		k = first + s;
		STACK_TAIL_KEEP(k);
		if (k >= e->n_slots || k >= STACK_TAIL_SLOTS)
			break;
		addr = e->slot_addr[k];
		if (!t->win_lo || addr < t->win_lo || addr + 8 > t->win_lo + t->win_len) {
			len = e->span_hi - addr;
			if (len > STACK_TAIL_WINDOW)
				len = STACK_TAIL_WINDOW;
			if (len < 8 || bpf_probe_read_user(t->span, len, (const void *)addr))
				return STACK_TAIL_FRAMES;
			t->win_lo = addr;
			t->win_len = len;
		}
		off = (addr - t->win_lo) / 8;
		if (off >= STACK_TAIL_WINDOW / 8)
			return STACK_TAIL_FRAMES;
		if (t->span[off] != e->slot_val[k])
			bad = e->slot_frame[k];
	}
	return bad;
}

/* At a frame whose walk from here on is native steps only: 1 when the thread's tail holds the
 * frame's state and its words are unchanged, the tail's frames then copied (the walk ends as
 * the tail's did), else 0. Walks and tails go outward (sp grows), so cand[j] is the only
 * candidate at this frame. */
__noinline int stack_tail_join(struct walk_state *st)
{
	struct stack_tail_walk *t = stack_tail_get();
	const struct stack_tail *e;
	__u64 j, n, i, k;
	__u32 steps = 0;
	int bad;

	if (!st || !t)
		return 0;
	for (i = 0, j = t->j; i < STACK_TAIL_FRAMES; i++, j++) {
		STACK_TAIL_KEEP(j); /* no pointer induction: each index checked where used */
		if (j >= t->n_cand || j >= STACK_TAIL_FRAMES || t->cand[j].sp >= st->sp)
			break;
	}
	t->j = j;
	if (j >= t->n_cand || j >= STACK_TAIL_FRAMES)
		return 0;
	if (t->cand[j].sp != st->sp || t->cand[j].pc != st->pc ||
	    ((t->cand[j].bp_use & STACK_TAIL_BP_NEEDED) && t->cand[j].bp != st->bp))
		return 0;
	n = st->stack.n;
	if (n + (t->n_cand - j) > PROFILE_STACK_DEPTH)
		return 0; /* the walk is truncated there: walked, to say so */
	e = bpf_map_lookup_elem(&stack_tails, &t->tid);
	/* the copy taken at the walk's start: an LRU element is reused once evicted */
	if (!e || e->pid != st->pid || e->seq != t->seq || e->vm_key != t->vm_key ||
	    e->n_frames != t->n_cand) {
		t->n_cand = 0;
		return 0;
	}
	bad = stack_tail_validate(t, e, j);
	if (bad >= 0) {
		t->fallbacks++;
		t->j = bad + 1;
		return 0;
	}
	for (i = 0; i < STACK_TAIL_FRAMES; i++) {
		k = j + i;
		STACK_TAIL_KEEP(k);
		STACK_TAIL_KEEP(n);
		if (k >= t->n_cand || k >= STACK_TAIL_FRAMES || n >= PROFILE_STACK_DEPTH)
			break;
		st->stack.ips[n++] = t->cand[k].pc;
		steps |= t->cand[k].steps;
	}
	st->stack.n = n;
	st->steps |= steps;
	st->end = e->end;
	t->hit = 1;
	t->copied = i;
	return 1;
}

/* Adds the frame at st's state to the tail being recorded; it restarts when the frame is not
 * the last recorded one's caller (a frame between them was not recorded) or the recording is
 * full (the outer frames are the stable ones). */
__noinline int stack_tail_record(struct walk_state *st)
{
	struct stack_tail_walk *t = stack_tail_get();
	struct stack_tail_frame *r;
	__u64 k;

	if (!st || !t)
		return 0;
	if (t->n_rec && (st->sp != t->next_sp || st->pc != t->next_pc))
		t->n_rec = t->n_slots = 0;
	if (t->n_rec >= STACK_TAIL_FRAMES || t->n_slots > STACK_TAIL_SLOTS - 3)
		t->n_rec = t->n_slots = 0;
	k = t->n_rec;
	STACK_TAIL_KEEP(k);
	if (k >= STACK_TAIL_FRAMES)
		return 0;
	r = &t->rec[k];
	r->pc = st->pc;
	r->sp = st->sp;
	r->bp = st->bp;
	r->slot_first = t->n_slots;
	r->steps = 0;
	r->bp_use = 0; /* a walk that ends at this frame does not step it */
	t->n_rec = k + 1;
	t->noting = 1;
	return 0;
}

/* The pc is in an interpreter's eval loop, whatever its walk's cursor says: a tail frame must
 * be native for any cursor (the tail is joined by walks in other interpreter states). */
static __always_inline bool stack_tail_eval_pc(const struct walk_state *st, __u64 pc)
{
	const struct python_proc *py = &st->py.proc;
	const struct ruby_proc *rb = &st->rb.proc;

	if ((st->in & PROC_IN_PYTHON) && ((pc >= py->eval_start[0] && pc < py->eval_end[0]) ||
					  (pc >= py->eval_start[1] && pc < py->eval_end[1])))
		return true;
	if ((st->in & PROC_IN_RUBY) && ((pc >= rb->core_start && pc < rb->core_end) ||
					(pc >= rb->exec_start && pc < rb->exec_end)))
		return true;
	return (st->in & PROC_IN_PHP) && pc >= st->php.proc.exec_start &&
	       pc < st->php.proc.exec_end;
}

/* At a native frame the walk is about to record (every interpreter walk is between frames
 * here): true when the rest of the stack came from the thread's tail (the walk ends), else the
 * frame goes into this walk's tail. The leaf (its pc is no return address) and a frame after
 * a signal are not tail frames. */
static __always_inline bool stack_tail_frame(struct walk_state *st, __u64 lookup_pc)
{
	struct stack_tail_walk *t = stack_tail_get();
	__u64 t0;

	if (!t || !t->on)
		return false;
	if (st->exact || stack_tail_eval_pc(st, lookup_pc)) {
		t->n_rec = t->n_slots = 0;
		return false;
	}
	t0 = T_NOW();
	if (t->n_cand && stack_tail_join(st)) {
		T_ADD(26, t0);
		return true;
	}
	stack_tail_record(st);
	return false;
}

/* The recorded frame's step was not a table's (no table for its binary yet, or evicted): a
 * later walk could take another, so the tail restarts below. */
static __always_inline void stack_tail_drop(void)
{
	struct stack_tail_walk *t = stack_tail_get();

	if (t) {
		t->noting = 0;
		t->n_rec = t->n_slots = 0;
	}
}

/* The frame's binary has a table whose rows are not loaded yet (a big one is built for
 * seconds: node's, libjvm's): its frame-pointer step restarts the tail, and the tail is not
 * stored. Stored, it would be joined below that frame on every later walk, which never
 * records again (a hit stores nothing), and the loaded rows, which move no proc_maps_seq,
 * would be walked above it on every sample. */
static __always_inline void stack_tail_table_pending(void)
{
	struct stack_tail_walk *t = stack_tail_get();

	if (t) {
		t->pending = 1;
		t->noting = 0;
		t->n_rec = t->n_slots = 0;
	}
}

/* After the recorded frame's table step: its kind, and the state it led to (its caller must
 * start there to follow it in the tail). A signal frame's registers, and words read outside
 * the frame's span, are not tail material. */
static __always_inline void stack_tail_stepped(struct walk_state *st, const struct unwind_row *row)
{
	struct stack_tail_walk *t = stack_tail_get();
	struct stack_tail_frame *r;
	__u64 k; /* 64 bits: the bounds check and the index are one register */

	if (!t || !t->noting)
		return;
	k = (__u64)t->n_rec - 1;
	STACK_TAIL_KEEP(k);
	if (k >= STACK_TAIL_FRAMES || row->cfa_type == UNWIND_ROW_SIGNAL) {
		stack_tail_drop();
		return;
	}
	r = &t->rec[k];
	r->steps = row->cfa_type == UNWIND_ROW_GAP ? STEP_FP : STEP_TABLE;
	switch (row->cfa_type) {
	case UNWIND_CFA_RBP:
	case UNWIND_CFA_DEREF_RBP:
	case UNWIND_ROW_GAP:
		r->bp_use = STACK_TAIL_BP_USES;
		break;
	case UNWIND_ROW_STOP: /* the walk ends there: nothing after it */
	case UNWIND_ROW_CANNOT:
		r->bp_use = 0;
		break;
	default:
		r->bp_use = row->rbp_type == UNWIND_RBP_SAME ? STACK_TAIL_BP_PASSES : 0;
	}
	for (__u64 s = 0; s < 3; s++) {
		__u64 i = r->slot_first + s;

		STACK_TAIL_KEEP(i);

		if (i >= t->n_slots || i >= STACK_TAIL_SLOTS)
			break;
		if (t->slot_addr[i] < r->sp || t->slot_addr[i] + 8 > r->sp + STACK_TAIL_SPAN) {
			stack_tail_drop();
			return;
		}
	}
	t->next_pc = st->pc;
	t->next_sp = st->sp;
	if (!st->end)
		t->noting = 0; /* the next frame's step notes only if it is recorded too */
}

/* After the walk: the counters, and the walk's tail stored for the thread's next walk when the
 * walk ended on a recorded frame for a reason its state and words decide (not a failed read,
 * not the depth cap or the loop's bound) and found every table it looked for loaded. The
 * outermost frames whose words fit the span. */
__noinline int stack_tail_end(struct walk_state *st)
{
	struct stack_tail_walk *t = stack_tail_get();
	struct stack_tail *e;
	__u32 zero = 0;
	__u64 hi = 0, last, first, base, n = 0, m = 0, k, s, needed = 0;

	if (!st || !t || !t->on)
		return 0;
	stack_tail_count(t->hit ? UNWIND_STAT_TAIL_HIT : UNWIND_STAT_TAIL_MISS, 1);
	if (t->fallbacks)
		stack_tail_count(UNWIND_STAT_TAIL_FALLBACK, t->fallbacks);
	if (t->copied)
		stack_tail_count(UNWIND_STAT_TAIL_FRAMES, t->copied);
	if (t->hit || t->pending || !t->noting || !t->n_rec || t->n_rec > STACK_TAIL_FRAMES ||
	    !st->end || st->end == UNWIND_STAT_TRUNCATED || st->end == UNWIND_STAT_END_READ)
		return 0;
	e = bpf_map_lookup_elem(&stack_tail_build, &zero);
	if (!e)
		return 0;
	for (s = 0; s < STACK_TAIL_SLOTS && s < t->n_slots; s++)
		if (t->slot_addr[s] + 8 > hi)
			hi = t->slot_addr[s] + 8;
	last = (__u64)t->n_rec - 1;
	STACK_TAIL_KEEP(last);
	if (last >= STACK_TAIL_FRAMES)
		return 0;
	if (hi < t->rec[last].sp + 8)
		hi = t->rec[last].sp + 8;
	for (first = 0; first < STACK_TAIL_FRAMES && first < last; first++)
		if (hi - t->rec[first].sp <= STACK_TAIL_SPAN)
			break;
	if (first >= STACK_TAIL_FRAMES)
		return 0;
	/* from the root up: whether the walk from each frame on reads the rbp it arrives with */
	for (k = 0; k < STACK_TAIL_FRAMES; k++) {
		__u64 i = last - k;

		STACK_TAIL_KEEP(i);
		if (i < first || i >= STACK_TAIL_FRAMES)
			break;
		if ((t->rec[i].bp_use & STACK_TAIL_BP_USES) ||
		    ((t->rec[i].bp_use & STACK_TAIL_BP_PASSES) && needed))
			needed = 1;
		else
			needed = 0;
		if (needed)
			t->rec[i].bp_use |= STACK_TAIL_BP_NEEDED;
	}
	base = t->rec[first].slot_first;
	for (k = first; k < STACK_TAIL_FRAMES; k++, n++) {
		STACK_TAIL_KEEP(k);
		STACK_TAIL_KEEP(n);
		if (k >= t->n_rec || n >= STACK_TAIL_FRAMES)
			break;
		e->frames[n] = t->rec[k];
		e->frames[n].slot_first = t->rec[k].slot_first - base;
	}
	for (s = base; s < STACK_TAIL_SLOTS; s++, m++) {
		STACK_TAIL_KEEP(s);
		STACK_TAIL_KEEP(m);
		if (s >= t->n_slots || m >= STACK_TAIL_SLOTS)
			break;
		e->slot_addr[m] = t->slot_addr[s];
		e->slot_val[m] = t->slot_val[s];
		e->slot_frame[m] = t->slot_frame[s] - first;
	}
	e->pid = st->pid;
	e->seq = t->seq;
	e->n_frames = n;
	e->n_slots = m;
	e->end = st->end;
	e->pad = 0;
	e->span_hi = hi;
	e->vm_key = t->vm_key;
	if (!bpf_map_update_elem(&stack_tails, &t->tid, e, BPF_ANY))
		stack_tail_count(UNWIND_STAT_TAIL_STORED, 1);
	return 0;
}

#endif
