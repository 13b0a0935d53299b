/* SPDX-License-Identifier: Apache-2.0 */
/* The stack tail in V8 and HotSpot processes (included by stack_tail_walk.h): their JS and Java
 * frames as tail frames, what validates them, and the VM input a tail must carry. */
#ifndef ROOTTRACE_STACK_TAIL_VM_H
#define ROOTTRACE_STACK_TAIL_VM_H

/* A node or JVM thread's stack is JS or Java frames over native ones: node's main, node::Start,
 * uv_run, ... v8::internal::Execution::Call, Invoke, then the JSEntry builtin; a JVM thread's
 * start, JavaThread::run, ... JavaCalls::call_helper, then the call stub. Under a busy
 * function, its callers' VM frames are as stable as the native ones below them, and walking
 * them was most of such a sample's cost (bench/bpf_phases.py: node's 13 VM frames, with the 8
 * native ones between its two JS entries, ~60% of a sample; a JVM's 5, ~50%). So they are
 * tail frames too, recorded with what they put in the stack (2-3 words: stack_tail_frame.ips),
 * on what validates them:
 * - their stack words: the slots each VM walk reads (a V8 frame's function and context slots,
 *   saved fp and return address; a HotSpot interpreter frame's Method*, sender sp, saved fp
 *   and return address; a compiled frame's top two words) are noted like a table step's and
 *   re-read at a join. A frame whose code was freed or deoptimised has had its return address
 *   patched or its frame replaced: the words differ and it is walked.
 * - what they read from the VM's heap, which no stack word holds: a HotSpot interpreter frame's
 *   Method is its slot's word (a class redefinition would change its ConstMethod cookie, which
 *   a fresh tail takes up at its next store); a compiled frame's nmethod, found by its return
 *   address, stays while the frame lives, but one whose frame returned may be freed and its
 *   memory reused by another method's: the join re-reads the nmethod's Method* (one read a
 *   compiled frame). A V8 JS frame's function is its slot's word (a GC that moves it rewrites
 *   the slot), but a GC may move its SharedFunctionInfo without moving the function, and a new
 *   tier changes its code: the join re-reads the JSFunction's shared and code words (one read
 *   a JS frame) and walks from the first frame where either changed (stack_tail_vm_validate).
 * - a V8 frame whose fp is the last JS frame's (a frameless callee) depends on the frame
 *   before it, and one whose JS-or-not answer came from the heap (an unreadable or foreign
 *   object) or an unreadable slot, is walked each time: no tail frame (stack_tail_drop).
 * The leaf is never a tail frame (its pc is not a return address), so the busy function's own
 * frame is walked every sample; the tail starts at its caller. Announcements (note_code) are
 * made when a frame is walked, and a copied frame's function is alive (its frame is on the
 * stack), so user space can still name it at its window.
 *
 * What else decides such a walk: whether a pc is the VM's. HotSpot's code cache bounds and the
 * mappings V8's JIT code is told apart by are per-process map entries (a change moves
 * proc_maps_seq, which tails carry); V8's embedded builtins are where the process says they
 * run now (v8_blob_bounds reads it every V8_BLOB_RECHECK walks of a CPU: V8 may remap them
 * once at start, and before it sets them their pcs are native ones in node's text). Their
 * bounds are the tail's vm_key: a tail recorded under other bounds is not joined. */

/* The part of the walk's VM state that classifies a native pc and is not proc_maps_seq's:
 * where V8's builtins run (their size is the binary's), 0 in other processes. */
static __always_inline __u64 stack_tail_vm_key(const struct walk_state *st)
{
	return (st->in & PROC_IN_V8) && st->v8.active ? st->v8.blob_start : 0;
}

#endif
