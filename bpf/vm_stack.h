/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/* The VM walkers' view of the sampled thread's stack: one read of VM_STACK_WINDOW bytes serves
 * the slots of every JVM or V8 frame that lies in it, instead of one read a frame. */
#ifndef ROOTTRACE_VM_STACK_H
#define ROOTTRACE_VM_STACK_H

/* Bytes of stack read at once: a 30-deep C2 or TurboFan recursion (frames of 32-96 bytes)
 * takes 3-6 reads, not 30; a read costs about the same for 8 bytes as for 512. */
#define VM_STACK_WINDOW 512
#define VM_STACK_WORDS (VM_STACK_WINDOW / 8)
#define VM_STACK_PAGE 4096

/* The stack bytes [start, start + len) as they were when read, in this walk (len 0: none). The
 * thread is stopped on this CPU while it is walked, so its stack cannot change under the copy:
 * a slot served from it is the value a direct read would have given. */
struct vm_stack_window {
	__u64 start;
	__u64 len;
	__u64 words[VM_STACK_WORDS];
};

static __always_inline void vm_stack_reset(struct vm_stack_window *w)
{
	w->start = 0;
	w->len = 0;
}

/* Reads the window at addr: VM_STACK_WINDOW bytes, or up to the end of addr's page when the
 * full window runs past the stack's top (the thread's outermost frames). */
static __always_inline bool vm_stack_fill(struct vm_stack_window *w, __u64 addr, __u32 need)
{
	__u64 len = VM_STACK_PAGE - (addr & (VM_STACK_PAGE - 1));

	w->len = 0;
	if (!bpf_probe_read_user(w->words, sizeof(w->words), (const void *)addr)) {
		w->start = addr;
		w->len = VM_STACK_WINDOW;
		return true;
	}
	if (len >= VM_STACK_WINDOW || len < need)
		return false; /* the page itself is unreadable, or the slots cross into the next */
	if (bpf_probe_read_user(w->words, len & (VM_STACK_WINDOW - 1), (const void *)addr))
		return false;
	w->start = addr;
	w->len = len & (VM_STACK_WINDOW - 1);
	return true;
}

/* n (at most 5) 8-byte slots of the stack at addr into out: from the window when it holds
 * them, else from a new window read at addr (a misaligned addr: read directly). false when
 * they cannot be read. */
static __always_inline bool vm_stack_read(struct vm_stack_window *w, __u64 addr, __u64 *out,
					  __u32 n)
{
	__u64 off;

	if (n > 5)
		return false;
	if (addr & 7)
		return !bpf_probe_read_user(out, n * 8, (const void *)addr);
	if (addr < w->start || addr + n * 8 > w->start + w->len) {
		if (!vm_stack_fill(w, addr, n * 8))
			return false;
	}
	off = (addr - w->start) / 8;
	for (__u32 i = 0; i < 5; i++) {
		if (i < n)
			out[i] = w->words[(off + i) & (VM_STACK_WORDS - 1)];
	}
	return true;
}

#endif
