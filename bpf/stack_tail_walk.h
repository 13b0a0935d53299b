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

/* Before a walk: the size of the thread's tail and its first frame's sp, when it was recorded in
 * this process under its current mapping set (proc_maps_seq moves with every new set: other
 * binaries, other tables) and VM state (stack_tail_vm_key). The tail is read in place at a join:
 * a copy of it here cost more than the rest of the join (at 99 Hz its lines are cold). A global
 * function: verified once, apart from the walk's paths. */
__noinline int stack_tail_begin(struct walk_state *st, __u32 tid)
{
	struct stack_tail_walk *t = stack_tail_get();
	const struct stack_tail *e;

	if (!st || !t)
		return 0;
	t->on = 1; /* V8 and HotSpot too: below their outermost frame (stack_tail_vm.h) */
	t->tid = tid;
	t->vm_key = stack_tail_vm_key(st);
	t->seq = proc_maps_seq[st->pid & (PROC_MAPS_CACHE_SLOTS - 1)];
	t->n_cand = t->j = t->n_rec = t->n_slots = t->noting = 0;
	t->hit = t->fallbacks = t->copied = t->pending = 0;
	t->win_lo = t->win_len = 0;
	t->cand_next_sp = 0;
	if (!t->on)
		return 0;
	e = bpf_map_lookup_elem(&stack_tails, &tid);
	if (!e || e->tid != tid || e->pid != st->pid || e->seq != t->seq ||
	    e->vm_key != t->vm_key || !e->n_frames)
		return 0;
	t->n_cand = e->n_frames < STACK_TAIL_FRAMES ? e->n_frames : STACK_TAIL_FRAMES;
	t->cand_next_sp = e->frame_sp[0];
	return 0;
}

/* The tail's words from its frame j on against the stack now, read a window at a time (the last
 * one kept for a later try of this walk). -1 when every word holds its noted value, else the
 * outermost frame whose step read a changed word (the frames above it may still join);
 * STACK_TAIL_FRAMES when the stack cannot be read. */
static __always_inline int stack_tail_validate(struct stack_tail_walk *t,
					       const struct stack_tail *e, __u64 j)
{
	__u64 first = e->frames[j & (STACK_TAIL_FRAMES - 1)].slot_first, k, addr, len, off;
	__u64 base = e->frame_sp[0];
	__u32 at;
	int bad = -1;

	for (__u64 s = 0; s < STACK_TAIL_SLOTS; s++) {
		k = first + s;
		STACK_TAIL_KEEP(k);
		if (k >= e->n_slots || k >= STACK_TAIL_SLOTS)
			break;
		at = e->slot_at[k];
		addr = base + (at & STACK_TAIL_SLOT_OFF);
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
			bad = at >> 16;
	}
	return bad;
}

/* The VM frames of the tail from its frame j on against the VM's heap now. A V8 JS frame's
 * JSFunction must hold the shared and code words its record came from (a GC that moved the
 * SharedFunctionInfo rewrote the first, a new tier the second; the function itself is the
 * frame's slot, a noted stack word); a compiled Java frame's nmethod must still be its Method's
 * (code freed and reused by another method's at the same address). -1 when they all are, else
 * the first changed frame (a later join above it validates the rest again). */
__noinline int stack_tail_vm_validate(struct walk_state *st, const struct stack_tail *e, __u32 j)
{
	const struct stack_tail_frame *f;
	const struct v8_proc *p;
	__u64 fn[V8_FUNCTION_WORDS], k;

	if (!st || !e)
		return 0;
	p = &st->v8.proc;
	for (__u64 i = 0; i < STACK_TAIL_FRAMES; i++) {
		k = j + i;
		STACK_TAIL_KEEP(k);
		if (k >= e->n_frames || k >= STACK_TAIL_FRAMES)
			break;
		f = &e->frames[k];
		if (!f->fn)
			continue;
		if (f->kind == STACK_TAIL_KIND_HS_COMPILED) {
			if (bpf_probe_read_user(fn, sizeof(fn[0]), (const void *)f->fn) ||
			    fn[0] != f->fn_shared)
				return k;
			continue;
		}
		fn[V8_FUNCTION_WORDS - 1] = 0; /* past V8_FUNCTION_READ */
		if (!st->v8.active ||
		    bpf_probe_read_user(fn, V8_FUNCTION_READ, (const void *)(f->fn - 1)) ||
		    fn[(p->function_shared / 8) & (V8_FUNCTION_WORDS - 1)] != f->fn_shared ||
		    fn[(p->function_code / 8) & (V8_FUNCTION_WORDS - 1)] != f->fn_code)
			return k;
	}
	return -1;
}

/* The copied frames counted as the walk would have counted them: kinds is a byte per
 * STACK_TAIL_KIND_* (a branch per frame would multiply the verifier's states). */
static __always_inline void stack_tail_count_kinds(struct walk_state *st, __u64 kinds)
{
	__u32 optimised = (kinds >> (8 * STACK_TAIL_KIND_V8_OPTIMISED)) & 0xff;

	st->v8.optimised_frames += optimised;
	st->v8.js_frames += optimised + ((kinds >> (8 * STACK_TAIL_KIND_V8_JS)) & 0xff);
	st->hs.interpreted += (kinds >> (8 * STACK_TAIL_KIND_HS_INTERPRETED)) & 0xff;
	st->hs.compiled += (kinds >> (8 * STACK_TAIL_KIND_HS_COMPILED)) & 0xff;
	st->hs.stubs += (kinds >> (8 * STACK_TAIL_KIND_HS_STUB)) & 0xff;
}

/* The words the tail's frames from j on record. Each loop of the join is a global function:
 * verified once, not once per way out of the loop before it. */
__noinline int stack_tail_words(const struct stack_tail *e, __u32 j)
{
	__u64 k, words = 0;

	if (!e)
		return 0;
	for (__u64 i = 0; i < STACK_TAIL_FRAMES; i++) {
		k = j + i;
		STACK_TAIL_KEEP(k);
		if (k >= e->n_frames || k >= STACK_TAIL_FRAMES)
			break;
		words += e->frames[k].n_ips;
	}
	return words;
}

/* Copies the tail's frames from j on after the walk's (their words fit: checked), straight
 * from the thread's tail; how many. Their kinds and steps go to the walk's tail side, counted
 * once the copy stands (stack_tail_join). */
__noinline int stack_tail_copy(struct walk_state *st, const struct stack_tail *e, __u32 j)
{
	struct stack_tail_walk *t = stack_tail_get();
	const struct stack_tail_frame *f;
	__u64 n, i, k, kinds = 0;
	__u32 steps = 0;

	if (!st || !e || !t)
		return 0;
	n = st->stack.n;
	for (i = 0; i < STACK_TAIL_FRAMES; i++) {
		k = j + i;
		STACK_TAIL_KEEP(k);
		STACK_TAIL_KEEP(n);
		if (k >= e->n_frames || k >= STACK_TAIL_FRAMES ||
		    n > PROFILE_STACK_DEPTH - STACK_TAIL_IPS)
			break;
		f = &e->frames[k];
		/* all three words, the frame's count of them kept (the rest is past the stack's
		 * end or overwritten by the next frame): no branch a word */
		st->stack.ips[n] = f->ips[0];
		st->stack.ips[n + 1] = f->ips[1];
		st->stack.ips[n + 2] = f->ips[2];
		n += f->n_ips & 3;
		steps |= f->steps;
		kinds += 1ULL << (8 * (f->kind & 7));
	}
	st->stack.n = n;
	t->copied_kinds = kinds;
	t->copied_steps = steps;
	return i;
}

/* At a frame whose walk from here on is native steps or VM frames: 1 when the thread's tail
 * holds the frame's state and its words are unchanged, the tail's frames then copied (the walk
 * ends as the tail's did), else 0. Walks and tails go outward (sp grows), so its frame j is the
 * only candidate at this frame. */
__noinline int stack_tail_join(struct walk_state *st)
{
	struct stack_tail_walk *t = stack_tail_get();
	const struct stack_tail_frame *f;
	const struct stack_tail *e;
	__u64 j, n, i, copied, t0;
	int bad;

	if (!st || !t || t->j >= t->n_cand || st->sp < t->cand_next_sp)
		return 0; /* below the frame to compare next: no lookup */
	e = bpf_map_lookup_elem(&stack_tails, &t->tid);
	/* the tail the walk started with: an LRU element is reused once evicted */
	if (!e || e->tid != t->tid || e->pid != st->pid || e->seq != t->seq ||
	    e->vm_key != t->vm_key || e->n_frames != t->n_cand) {
		t->n_cand = 0;
		return 0;
	}
	for (i = 0, j = t->j; i < STACK_TAIL_FRAMES; i++, j++) {
		STACK_TAIL_KEEP(j); /* no pointer induction: each index checked where used */
		if (j >= t->n_cand || j >= STACK_TAIL_FRAMES || e->frame_sp[j] >= st->sp)
			break;
	}
	t->j = j;
	if (j >= t->n_cand || j >= STACK_TAIL_FRAMES)
		return 0;
	t->cand_next_sp = e->frame_sp[j];
	if (e->frame_sp[j] != st->sp)
		return 0;
	f = &e->frames[j];
	if (f->pc != st->pc || ((f->bp_use & STACK_TAIL_BP_NEEDED) && f->bp != st->bp))
		return 0;
	n = st->stack.n;
	if (n + stack_tail_words(e, j) > PROFILE_STACK_DEPTH)
		return 0; /* the walk is truncated there: walked, to say so */
	t0 = T_NOW();
	bad = stack_tail_validate(t, e, j);
	T_ADD(29, t0);
	if (bad < 0) {
		t0 = T_NOW();
		bad = stack_tail_vm_validate(st, e, j);
		T_ADD(30, t0);
	}
	if (bad >= 0) {
		t->fallbacks++;
		t->j = bad + 1;
		t->cand_next_sp = 0; /* its sp is read at the next join */
		return 0;
	}
	t0 = T_NOW();
	copied = stack_tail_copy(st, e, j);
	T_ADD(31, t0);
	/* read in place: an element evicted meanwhile and reused for another thread's tail has
	 * had its tid written first (the walk then goes on from here, as it was) */
	if (e->tid != t->tid) {
		st->stack.n = n;
		t->n_cand = 0;
		return 0;
	}
	stack_tail_count_kinds(st, t->copied_kinds);
	if (t->copied_kinds >> 8) /* VM frames: all but the native ones, kinds' lowest byte */
		stack_tail_count(UNWIND_STAT_TAIL_VM_FRAMES, copied - (t->copied_kinds & 0xff));
	st->steps |= t->copied_steps;
	t->copied = copied;
	st->end = e->end;
	t->hit = 1;
	return 1;
}

/* The recording is full: its inner half goes (the outer frames are the stable ones, and a
 * deep stack's tail is then its outermost 16-32 frames, not what follows the last restart),
 * the rest moves down with its noted words. */
static __always_inline void stack_tail_shift(struct stack_tail_walk *t)
{
	__u64 drop = STACK_TAIL_FRAMES / 2, base, k, from;

	if (t->n_rec <= drop || t->n_rec > STACK_TAIL_FRAMES) {
		t->n_rec = t->n_slots = 0;
		return;
	}
	base = t->rec[drop].slot_first;
	if (base > t->n_slots || base > STACK_TAIL_SLOTS) {
		t->n_rec = t->n_slots = 0;
		return;
	}
	for (k = 0; k < STACK_TAIL_FRAMES - STACK_TAIL_FRAMES / 2; k++) {
		if (k + drop >= t->n_rec)
			break;
		t->rec[k] = t->rec[k + drop];
		t->rec[k].slot_first -= base;
	}
	for (k = 0; k < STACK_TAIL_SLOTS; k++) {
		from = k + base;
		STACK_TAIL_KEEP(from);
		if (from >= t->n_slots || from >= STACK_TAIL_SLOTS)
			break;
		t->slot_addr[k] = t->slot_addr[from];
		t->slot_val[k] = t->slot_val[from];
		t->slot_frame[k] = t->slot_frame[from] - drop;
	}
	t->n_rec -= drop;
	t->n_slots -= base;
}

/* Adds the frame at st's state to the tail being recorded; it restarts when the frame is not
 * the last recorded one's caller (a frame between them was not recorded), and drops its inner
 * half when it is full. */
__noinline int stack_tail_record(struct walk_state *st)
{
	struct stack_tail_walk *t = stack_tail_get();
	struct stack_tail_frame *r;
	__u64 k;

	if (!st || !t)
		return 0;
	if (t->n_rec && (st->sp != t->next_sp || st->pc != t->next_pc))
		t->n_rec = t->n_slots = 0;
	if (t->n_rec >= STACK_TAIL_FRAMES || t->n_slots > STACK_TAIL_SLOTS - STACK_TAIL_FRAME_WORDS)
		stack_tail_shift(t);
	if (t->n_slots > STACK_TAIL_SLOTS - STACK_TAIL_FRAME_WORDS)
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
	r->bp_use = 0;	    /* a walk that ends at this frame does not step it */
	r->ips[0] = st->pc; /* a native frame's record (a VM walk sets its own) */
	r->n_ips = 1;
	r->kind = STACK_TAIL_KIND_NATIVE;
	r->fn = r->fn_shared = r->fn_code = 0;
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

/* After the recorded frame's step: its kind and how it used rbp, and the state it led to (its
 * caller must start there to follow it in the tail). Words read outside the frame's span are
 * not tail material. */
static __always_inline void stack_tail_stepped_as(struct walk_state *st, __u16 steps, __u8 bp_use)
{
	struct stack_tail_walk *t = stack_tail_get();
	struct stack_tail_frame *r;
	__u64 k; /* 64 bits: the bounds check and the index are one register */

	if (!t || !t->noting)
		return;
	k = (__u64)t->n_rec - 1;
	STACK_TAIL_KEEP(k);
	if (k >= STACK_TAIL_FRAMES) {
		stack_tail_drop();
		return;
	}
	r = &t->rec[k];
	r->steps = steps;
	r->bp_use = bp_use;
	for (__u64 s = 0; s < STACK_TAIL_FRAME_WORDS; s++) {
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

/* After the recorded frame's table step (a signal frame's registers are not tail material). */
static __always_inline void stack_tail_stepped(struct walk_state *st, const struct unwind_row *row)
{
	__u8 bp_use;

	if (row->cfa_type == UNWIND_ROW_SIGNAL) {
		stack_tail_drop();
		return;
	}
	switch (row->cfa_type) {
	case UNWIND_CFA_RBP:
	case UNWIND_CFA_DEREF_RBP:
	case UNWIND_ROW_GAP:
		bp_use = STACK_TAIL_BP_USES;
		break;
	case UNWIND_ROW_STOP: /* the walk ends there: nothing after it */
	case UNWIND_ROW_CANNOT:
		bp_use = 0;
		break;
	default:
		bp_use = row->rbp_type == UNWIND_RBP_SAME ? STACK_TAIL_BP_PASSES : 0;
	}
	stack_tail_stepped_as(st, row->cfa_type == UNWIND_ROW_GAP ? STEP_FP : STEP_TABLE, bp_use);
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
	__u64 hi = 0, last, first, base, n = 0, m = 0, k, s, needed = 0, lo, off;

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
		e->frame_sp[n] = t->rec[k].sp;
	}
	lo = t->rec[first].sp;
	for (s = base; s < STACK_TAIL_SLOTS; s++, m++) {
		STACK_TAIL_KEEP(s);
		STACK_TAIL_KEEP(m);
		if (s >= t->n_slots || m >= STACK_TAIL_SLOTS)
			break;
		off = t->slot_addr[s] - lo; /* within the span (checked above): not reached */
		if (t->slot_addr[s] < lo || off > STACK_TAIL_SLOT_OFF)
			return 0;
		e->slot_at[m] = off | (__u32)(t->slot_frame[s] - first) << 16;
		e->slot_val[m] = t->slot_val[s];
	}
	e->tid = t->tid;
	e->pid = st->pid;
	e->seq = t->seq;
	e->n_frames = n;
	e->n_slots = m;
	e->end = st->end;
	e->span_hi = hi;
	e->vm_key = t->vm_key;
	if (!bpf_map_update_elem(&stack_tails, &t->tid, e, BPF_ANY))
		stack_tail_count(UNWIND_STAT_TAIL_STORED, 1);
	return 0;
}

/* --- VM frames in the tail (stack_tail_vm.h says which, and what validates them) --------- */

/* At a JVM or V8 frame about to be walked: true when the rest of the stack came from the
 * thread's tail (the walk ends), else the frame goes into this walk's tail; its walk notes the
 * stack words it reads (stack_tail_vm_note), sets what it recorded (stack_tail_vm_recorded)
 * and its step (stack_tail_stepped_as), or drops it (stack_tail_drop). The leaf (its pc is no
 * return address) is not a tail frame. */
static __always_inline bool stack_tail_vm_frame(struct walk_state *st)
{
	struct stack_tail_walk *t = stack_tail_get();

	if (!t || !t->on)
		return false;
	if (st->exact) {
		t->n_rec = t->n_slots = 0;
		return false;
	}
	if (t->n_cand && stack_tail_join(st))
		return true;
	stack_tail_record(st);
	return false;
}

/* n (at most STACK_TAIL_FRAME_WORDS) stack words at addr the recorded VM frame's walk read
 * (from the walk's stack window: no read of their own). */
static __always_inline void stack_tail_vm_note(__u64 addr, const __u64 *vals, __u32 n)
{
	struct stack_tail_walk *t = stack_tail_noting();

	for (__u32 i = 0; i < STACK_TAIL_FRAME_WORDS; i++)
		if (i < n)
			stack_tail_note(t, addr + i * 8, vals[i]);
}

/* What the recorded VM frame put in the stack from word n0 on (1..STACK_TAIL_IPS words), its
 * kind, and for a V8 JS frame its JSFunction and the words of it the record came from. */
static __always_inline void stack_tail_vm_recorded(struct walk_state *st, __u32 n0, __u8 kind,
						   __u64 fn, __u64 fn_shared, __u64 fn_code)
{
	struct stack_tail_walk *t = stack_tail_noting();
	struct stack_tail_frame *r;
	__u64 k, m;

	if (!t)
		return;
	k = (__u64)t->n_rec - 1;
	STACK_TAIL_KEEP(k);
	if (k >= STACK_TAIL_FRAMES || st->stack.n <= n0 || st->stack.n - n0 > STACK_TAIL_IPS) {
		stack_tail_drop();
		return;
	}
	r = &t->rec[k];
	for (__u64 i = 0; i < STACK_TAIL_IPS; i++) {
		m = n0 + i;
		STACK_TAIL_KEEP(m);
		if (m >= st->stack.n || m >= PROFILE_STACK_DEPTH)
			break;
		r->ips[i] = st->stack.ips[m];
	}
	r->n_ips = st->stack.n - n0;
	r->kind = kind;
	r->fn = fn;
	r->fn_shared = fn_shared;
	r->fn_code = fn_code;
}

#endif
