/* SPDX-License-Identifier: Apache-2.0 */
/* The stack tail in V8 and HotSpot processes (included by stack_tail_walk.h): where their tails
 * start, and the one input of the walk besides state, words and tables that a tail must carry. */
#ifndef ROOTTRACE_STACK_TAIL_VM_H
#define ROOTTRACE_STACK_TAIL_VM_H

/* A node or JVM thread's stack is JS or Java frames over native ones: node's main, node::Start,
 * uv_run, ... v8::internal::Execution::Call, Invoke, then the JSEntry builtin; a JVM thread's
 * start, JavaThread::run, ... JavaCalls::call_helper, then the call stub. The VM frames are
 * never tail frames: their names come from the VM's heap (a function's SharedFunctionInfo, a
 * compiled method's Method) and their steps from its code (a blob's frame size), which no
 * stack word validates. So the boundary is the outermost VM frame (JSEntry, the call stub):
 * unwind_frame hands every pc in V8's builtins or JIT code, or in the code cache, to the VM's
 * walk, which records none, so a tail being recorded restarts at the first native frame after
 * it (stack_tail_record: its state is not the last recorded frame's step's), and the walk's
 * tail is the native frames below the outermost VM frame, their rbp and the words their table
 * and frame-pointer steps read validated as for any process. A JS frame called from native
 * code above them (a callback, a nested entry) ends the tail above it the same way.
 *
 * What else decides such a walk: whether a pc is the VM's. HotSpot's code cache bounds and the
 * mappings V8's JIT code is told apart by are per-process map entries (a change moves
 * proc_maps_seq, which tails carry); V8's embedded builtins are where the process says they
 * run now (v8_walk_start reads it each walk: V8 may remap them once at start, and before it
 * sets them their pcs are native ones in node's text). Their bounds are the tail's vm_key: a
 * tail recorded under other bounds is not joined. */

/* The part of the walk's VM state that classifies a native pc and is not proc_maps_seq's:
 * where V8's builtins run (their size is the binary's), 0 in other processes. */
static __always_inline __u64 stack_tail_vm_key(const struct walk_state *st)
{
	return st->v8.active ? st->v8.blob_start : 0;
}

#endif
