/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/* The HotSpot side of the user-stack walk (included by profile.bpf.c after fp_step): a pc in
 * the JVM's code cache is replaced by its Java method, and stepped over by the frame's size. */
#ifndef ROOTTRACE_HOTSPOT_WALK_H
#define ROOTTRACE_HOTSPOT_WALK_H

/* A blob's kind by the first 8 bytes of its name, little-endian */
#define HOTSPOT_NMETHOD 0x00646f6874656d6eULL	  /* "nmethod\0" */
#define HOTSPOT_INTERPRETER 0x6572707265746e49ULL /* "Interpre(ter)" */

/* A pc's blob found before on this CPU: its address, and what its header said then (name,
 * code bounds) and the kind its name gave. A hit still reads the header at blob (a frame's
 * size, an nmethod's Method are taken from it now) and is good only when name and bounds are
 * as they were: an nmethod freed and its memory reused by another blob rewrites them. It
 * skips the segment-map search and the read of the kind's name. */
struct hotspot_blob_cached {
	__u32 pid;
	__u32 pad;
	__u64 pc, blob, name, kind, begin, end;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct hotspot_blob_cached);
	__uint(max_entries, 1 << HOTSPOT_BLOB_CACHE_BITS);
} hotspot_blob_cache SEC(".maps");

static __always_inline void hotspot_count(__u32 stat)
{
	__u32 zero = 0;
	struct hotspot_counters *c = bpf_map_lookup_elem(&hotspot_stats, &zero);

	if (c && stat < HOTSPOT_STAT__COUNT)
		c->c[stat]++;
}

/* The frames a walk recorded, counted once after it (a map lookup a walk, not a frame). */
static __always_inline void hotspot_count_frames(const struct hotspot_walk *w)
{
	__u32 zero = 0;
	struct hotspot_counters *c = bpf_map_lookup_elem(&hotspot_stats, &zero);

	if (c) {
		c->c[HOTSPOT_STAT_INTERPRETED] += w->interpreted;
		c->c[HOTSPOT_STAT_COMPILED] += w->compiled;
		c->c[HOTSPOT_STAT_STUB] += w->stubs;
	}
}

/* Before a walk: the process's code cache and layout, if it is a JVM. */
static __always_inline void hotspot_walk_start(struct walk_state *st)
{
	const struct hotspot_proc *proc;

	st->hs.active = 0;
	st->hs.last_begin = st->hs.last_end = 0;
	st->hs.last_method = 0;
	st->hs.last_name = 0;
	st->hs.interpreted = st->hs.compiled = st->hs.stubs = 0;
	if (!(st->in & PROC_IN_HOTSPOT))
		return;
	/* the entry (176 bytes) copied again only when the walk's copy is not of this pid under
	 * its current proc_maps_seq (user space advances it after each update of the entry) */
	if (st->hs.proc_pid != st->pid || st->hs.proc_seq != st->seq) {
		proc = bpf_map_lookup_elem(&hotspot_procs, &st->pid);
		st->hs.proc_pid = 0;
		if (!proc)
			return;
		st->hs.proc = *proc;
		st->hs.proc_pid = st->pid;
		st->hs.proc_seq = st->seq;
	}
	hotspot_count(HOTSPOT_STAT_SAMPLES);
	st->hs.active = 1;
}

static __always_inline bool hotspot_code(const struct walk_state *st, __u64 pc)
{
	return (st->in & PROC_IN_HOTSPOT) && st->hs.active && pc >= st->hs.proc.low &&
	       pc < st->hs.proc.high;
}

/* The CodeBlob holding pc, through its heap's segment map: a byte per segment, 0 at a block's
 * first segment, else how many segments to go back (0xff: free). 0 when there is none. */
static __always_inline __u64 hotspot_find_blob(const struct hotspot_proc *p, __u64 pc)
{
	const struct hotspot_heap *h = NULL;
	__u64 idx, low, segmap;
	__u32 log2;
	__u8 hop;

	for (int i = 0; i < HOTSPOT_MAX_HEAPS; i++) {
		if (i < p->n_heaps && pc >= p->heaps[i].low && pc < p->heaps[i].high) {
			h = &p->heaps[i];
			break;
		}
	}
	if (!h)
		return 0;
	low = h->low;
	segmap = h->segmap;
	log2 = h->log2_segment & 31;
	idx = (pc - low) >> log2;
	for (int i = 0; i < HOTSPOT_SEGMAP_HOPS; i++) {
		if (bpf_probe_read_user(&hop, sizeof(hop), (const void *)(segmap + idx)) ||
		    hop == 0xff || hop > idx)
			return 0;
		if (!hop)
			return low + (idx << log2) + p->heap_block;
		idx -= hop;
	}
	return 0;
}

/* Announces a Method not sampled before in this process (or with a new cookie), so user space
 * names it while it lives: note_code's per-CPU slots, then Python's announcement LRU and
 * ring, keyed by the tagged word, as V8's are. */
static __always_inline void hotspot_note_method(__u32 pid, __u64 word, __u64 cookie)
{
	if (note_code(pid, word, cookie) == -ENOMEM)
		hotspot_count(HOTSPOT_STAT_EVENTS_LOST); /* named when the window is, if alive */
}

/* Records the Java frame of Method* method (its ConstMethod is the cookie; a compiled frame's
 * is its pc, where, hotspot_frames.h, when pc_word is not 0); false when the Method cannot be
 * read. */
static __always_inline bool hotspot_record(struct walk_state *st, __u32 n, __u64 method,
					   __u64 pc_word)
{
	__u64 cookie = st->hs.last_cookie;
	bool again = method && method == st->hs.last_method; /* read and announced already */

	if (!again && (!method || (method & 7) ||
		       read_user_u64(&cookie, method + st->hs.proc.method_const) || !cookie))
		return false;
	if (n >= PROFILE_STACK_DEPTH - 1)
		return false;
	st->stack.ips[n] = HOTSPOT_FRAME_TAG | (method & HOTSPOT_FRAME_ADDR_MASK);
	st->stack.ips[n + 1] = pc_word ? pc_word : cookie;
	st->stack.n = n + 2;
	if (!again)
		hotspot_note_method(st->pid, st->stack.ips[n], cookie);
	if (pc_word)
		st->stack.ips[n] |= HOTSPOT_FRAME_INLINED;
	st->hs.last_method = method;
	st->hs.last_cookie = cookie;
	return true;
}

/* pc's slot in this CPU's hotspot_blob_cache. */
static __always_inline struct hotspot_blob_cached *hotspot_blob_slot(__u32 pid, __u64 pc)
{
	__u32 slot =
	    (__u32)(((pc ^ pid) * 0x9e3779b97f4a7c15ULL) >> (64 - HOTSPOT_BLOB_CACHE_BITS));

	return bpf_map_lookup_elem(&hotspot_blob_cache, &slot);
}

/* Reads the header of the blob at blob into st->hs.blob: its name and code bounds. */
static __always_inline bool hotspot_blob_header(struct walk_state *st, __u64 blob, __u64 *ret_name,
						__u64 *ret_begin, __u64 *ret_end)
{
	__u32 name_off = st->hs.proc.blob_name, begin_off = st->hs.proc.blob_code_begin;
	__u32 end_off = st->hs.proc.blob_code_end;

	if (!blob || name_off > HOTSPOT_BLOB_READ - 8 || begin_off > HOTSPOT_BLOB_READ - 8 ||
	    end_off > HOTSPOT_BLOB_READ - 8 ||
	    bpf_probe_read_user(st->hs.blob, sizeof(st->hs.blob), (const void *)blob))
		return false;
	/* masked again for the verifier (the offsets were checked above) */
	*ret_name = *(__u64 *)(st->hs.blob + (name_off & (HOTSPOT_BLOB_READ - 1)));
	*ret_begin = *(__u64 *)(st->hs.blob + (begin_off & (HOTSPOT_BLOB_READ - 1)));
	*ret_end = *(__u64 *)(st->hs.blob + (end_off & (HOTSPOT_BLOB_READ - 1)));
	return true;
}

/* The blob holding pc (the last one again, the cached one if its header is unchanged, or found
 * and read): its address, kind, name, frame size and prologue, an nmethod's Method*. false
 * when none is found or read. */
static __always_inline bool hotspot_blob(struct walk_state *st, __u64 pc)
{
	const struct hotspot_proc *p = &st->hs.proc;
	__u32 size_off = p->blob_frame_size, complete_off = p->blob_frame_complete;
	__u64 blob, name, begin, end, kind = 0, method = 0, t0;
	struct hotspot_blob_cached *c;

	if (pc >= st->hs.last_begin && pc < st->hs.last_end)
		return true;
	if (size_off > HOTSPOT_BLOB_READ - 4 || complete_off > HOTSPOT_BLOB_READ - 4)
		return false;
	c = hotspot_blob_slot(st->pid, pc);
	if (c && c->pid == st->pid && c->pc == pc && c->blob) {
		blob = c->blob;
		if (hotspot_blob_header(st, blob, &name, &begin, &end) && name == c->name &&
		    begin == c->begin && end == c->end && pc >= begin && pc < end) {
			kind = c->kind;
			hotspot_count(HOTSPOT_STAT_BLOB_CACHED);
			goto found;
		}
		/* freed and reused, or unreadable now: searched as if never cached */
		hotspot_count(HOTSPOT_STAT_BLOB_STALE);
		c->blob = 0;
	}
	t0 = T_NOW();
	blob = hotspot_find_blob(p, pc);
	T_ADD(24, t0);
	if (!hotspot_blob_header(st, blob, &name, &begin, &end) || pc < begin || pc >= end)
		return false;
	/* a kind's name is one string of libjvm's: the last blob's kind again without a read */
	if (name && name == st->hs.last_name)
		kind = st->hs.last_kind;
	else if (read_user_u64(&kind, name))
		return false;
	if (c) {
		c->pid = st->pid;
		c->pc = pc;
		c->blob = blob;
		c->name = name;
		c->kind = kind;
		c->begin = begin;
		c->end = end;
	}
found:
	if (kind == HOTSPOT_NMETHOD) {
		if (p->nmethod_method <= HOTSPOT_BLOB_READ - 8) /* in the header read (JDK 17) */
			method =
			    *(__u64 *)(st->hs.blob + (p->nmethod_method & (HOTSPOT_BLOB_READ - 1)));
		else if (read_user_u64(&method, blob + p->nmethod_method))
			return false;
	}
	st->hs.last_size = *(__s32 *)(st->hs.blob + (size_off & (HOTSPOT_BLOB_READ - 1)));
	st->hs.last_complete = *(__s32 *)(st->hs.blob + (complete_off & (HOTSPOT_BLOB_READ - 1)));
	st->hs.last_blob = blob;
	st->hs.last_kind = kind;
	st->hs.last_name = name;
	st->hs.last_blob_method = method;
	st->hs.last_begin = begin;
	st->hs.last_end = end;
	return true;
}

/* Steps over a frame of size words (return address and saved rbp at its top; a frame of one
 * word: a leaf that has not pushed rbp yet). */
static __always_inline __u32 hotspot_size_step(struct walk_state *st, __u64 words)
{
	__u64 csp = st->sp + words * 8, ra, bp = st->bp, top[2];

	if (!words || words > 0x10000)
		return UNWIND_STAT_END_READ;
	if (words > 1) { /* saved rbp and return address, from the stack window */
		if (!vm_stack_read(&st->vmstack, csp - 16, top, 2))
			return UNWIND_STAT_END_READ;
		bp = top[0];
		ra = top[1];
		stack_tail_vm_note(csp - 16, top, 2);
	} else if (!vm_stack_read(&st->vmstack, csp - 8, &ra, 1)) {
		return UNWIND_STAT_END_READ;
	} else {
		stack_tail_vm_note(csp - 8, &ra, 1);
	}
	st->sp = csp;
	st->bp = bp;
	st->pc = ra;
	st->exact = 0;
	return ra ? 0 : UNWIND_STAT_END_FP_CHAIN;
}

/* An interpreter frame's slots at rbp: its Method*, its caller's sp (an adapter may have
 * extended the caller's stack), the saved rbp and the return address. From the stack window
 * for x86_64's layout (method at fp - 24, sender sp at fp - 8), else four reads. */
static __always_inline bool hotspot_interp_read(struct walk_state *st, __u64 *ret_method,
						__u64 *ret_sender_sp, __u64 *ret_bp, __u64 *ret_ra)
{
	const struct hotspot_proc *p = &st->hs.proc;
	__u64 fp = st->bp, slots[5];

	if (fp < st->sp || (fp & 7))
		return false;
	if (p->interp_method == -24 && p->interp_sender_sp == -8) {
		if (!vm_stack_read(&st->vmstack, fp - 24, slots, 5))
			return false;
		*ret_method = slots[0];
		*ret_sender_sp = slots[2];
		*ret_bp = slots[3];
		*ret_ra = slots[4];
		stack_tail_vm_note(fp - 24, slots, 1);
		stack_tail_vm_note(fp - 8, slots + 2, 3);
		return true;
	}
	stack_tail_drop(); /* another layout: its four reads are not noted */
	return !read_user_u64(ret_method, fp + p->interp_method) &&
	       !read_user_u64(ret_sender_sp, fp + p->interp_sender_sp) &&
	       !read_user_u64(ret_bp, fp) && !read_user_u64(ret_ra, fp + 8);
}

/* Steps over an interpreter frame whose slots hotspot_interp_read read. */
static __always_inline __u32 hotspot_interp_step(struct walk_state *st, __u64 sender_sp, __u64 bp,
						 __u64 ra)
{
	__u64 fp = st->bp;

	st->sp = sender_sp > fp ? sender_sp : fp + 16;
	st->bp = bp;
	st->pc = ra;
	st->exact = 0;
	return ra ? 0 : UNWIND_STAT_END_FP_CHAIN;
}

/* A pc in the code cache: an nmethod (C1, C2, native wrapper) records its Method and steps by
 * its frame size (C2 code keeps no frame pointer); the interpreter records the Method of the
 * frame at rbp; other blobs (stubs, adapters) are recorded as the native pcs they are. */
static __always_inline long hotspot_frame_walk(struct walk_state *st, __u64 lookup_pc)
{
	__u32 n = st->stack.n;
	__u64 method = 0, blob, name, begin, sender_sp = 0, bp = 0, ra = 0;
	__s32 size, complete;

	if (n >= PROFILE_STACK_DEPTH - 1) {
		st->stack.flags |= PROFILE_STACK_TRUNCATED;
		st->end = UNWIND_STAT_TRUNCATED;
		hotspot_count(HOTSPOT_STAT_TRUNCATED);
		return 1;
	}
	if (stack_tail_vm_frame(st))
		return 1; /* the rest is the thread's cached stack tail */
	if (!hotspot_blob(st, lookup_pc)) {
		hotspot_count(HOTSPOT_STAT_NO_BLOB);
		goto unknown;
	}
	blob = st->hs.last_blob;
	name = st->hs.last_name;
	begin = st->hs.last_begin;
	size = st->hs.last_size;
	complete = st->hs.last_complete;
	if (st->hs.last_kind == HOTSPOT_NMETHOD) {
		__u64 pc = lookup_pc - begin;
		__u64 where = (blob - st->hs.proc.low) >> 3 << HOTSPOT_PC_BITS |
			      (pc < HOTSPOT_PC_NONE ? pc : HOTSPOT_PC_NONE);

		if (!hotspot_record(st, n, st->hs.last_blob_method, where)) {
			hotspot_count(HOTSPOT_STAT_READ);
			goto unknown;
		}
		st->hs.compiled++;
		stack_tail_vm_recorded(st, n, STACK_TAIL_KIND_HS_COMPILED,
				       blob + st->hs.proc.nmethod_method, st->hs.last_blob_method,
				       0);
	} else if (st->hs.last_kind == HOTSPOT_INTERPRETER) {
		if (!hotspot_interp_read(st, &method, &sender_sp, &bp, &ra) ||
		    !hotspot_record(st, n, method, 0)) {
			hotspot_count(HOTSPOT_STAT_READ);
			goto unknown;
		}
		st->hs.interpreted++;
		stack_tail_vm_recorded(st, n, STACK_TAIL_KIND_HS_INTERPRETED, 0, 0, 0);
		st->end = hotspot_interp_step(st, sender_sp, bp, ra);
		stack_tail_stepped_as(st, STEP_FP, STACK_TAIL_BP_USES);
		return st->end ? 1 : 0;
	} else {
		/* a stub, adapter or the like: named by its blob's name (its pc has no symbol) */
		st->stack.ips[n] =
		    HOTSPOT_FRAME_TAG | HOTSPOT_FRAME_BLOB | (blob & HOTSPOT_FRAME_ADDR_MASK);
		st->stack.ips[n + 1] = name;
		st->stack.n = n + 2;
		hotspot_note_method(st->pid, st->stack.ips[n], name);
		st->hs.stubs++;
		stack_tail_vm_recorded(st, n, STACK_TAIL_KIND_HS_STUB, 0, 0, 0);
	}
	/* a leaf before its frame is built: the return address is still at sp */
	if (size <= 0 || (st->exact && lookup_pc < begin + (complete > 0 ? complete : 0))) {
		st->end = size <= 0 ? fp_step(st) : hotspot_size_step(st, 1);
		stack_tail_stepped_as(st, STEP_FP,
				      size <= 0 ? STACK_TAIL_BP_USES : STACK_TAIL_BP_PASSES);
		return st->end ? 1 : 0;
	}
	st->end = hotspot_size_step(st, size);
	/* rbp comes from the frame's top (a one-word frame passes it on) */
	stack_tail_stepped_as(st, 0, size > 1 ? 0 : STACK_TAIL_BP_PASSES);
	return st->end ? 1 : 0;

unknown:
	/* the pc, named as it can be ([unknown] in anonymous code), then frame pointers: the
	 * VM's memory decided, so no stack tail frame */
	stack_tail_drop();
	st->stack.ips[n] = st->exact && n ? st->pc + 1 : st->pc;
	st->stack.n = n + 1;
	st->end = fp_step(st);
	return st->end ? 1 : 0;
}

/* hotspot_frame_walk, timed in a -DPROFILE_TIMING=2 build (phase 22: bench/bpf_phases.py). */
static __always_inline long hotspot_frame(struct walk_state *st, __u64 lookup_pc)
{
	__u64 t0 = T_NOW();
	long ret = hotspot_frame_walk(st, lookup_pc);

	T_ADD(22, t0);
	return ret;
}

#endif
