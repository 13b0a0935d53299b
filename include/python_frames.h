/* SPDX-License-Identifier: Apache-2.0 */
/* CPython state shared by bpf/profile.bpf.c (the interpreter frame walk inside the native
 * unwinder) and user space (agent/runtimes/python/: detection, offsets, names). x86-64 only. */
#ifndef ROOTTRACE_PYTHON_FRAMES_H
#define ROOTTRACE_PYTHON_FRAMES_H

#define PYTHON_MAX_PROCESSES 4096	/* Python processes with a walk state */
#define PYTHON_MAX_THREADS 16384	/* LRU of thread id -> PyThreadState address */
#define PYTHON_MAX_THREAD_WALK 64	/* thread states scanned for the sampled thread */
#define PYTHON_EVAL_RANGES 2		/* _PyEval_EvalFrameDefault and its .cold part */
#define PYTHON_NO_OFFSET 0xffff		/* struct python_offsets: field not used by this layout */
#define PYTHON_MAX_CODES 65536		/* LRU of (pid, code object) pairs already announced */
#define PYTHON_EVENTS_BYTES (64 * 1024) /* ring buffer of code-object announcements */

/* An interpreter frame takes two words of profile_stack.ips: PYTHON_FRAME_TAG | the code
 * object's address (user addresses are below 2^47, so no native pc carries the tag), then the
 * cookie: 8 bytes of the code object read at sample time, compared again when it is named so
 * a freed and reused code object is not named after the old one. */
#define PYTHON_FRAME_TAG (0x5059ULL << 48) /* "PY" */
#define PYTHON_FRAME_TAG_MASK (0xffffULL << 48)
#define PYTHON_FRAME_ADDR_MASK ((1ULL << 48) - 1)

/* How one _PyEval_EvalFrameDefault call's frames are told from its callers'. */
enum python_layout {
	PYTHON_LAYOUT_FRAME_OBJECT = 1, /* 3.8-3.10: one PyFrameObject per call (tstate->frame) */
	PYTHON_LAYOUT_IS_ENTRY = 2,	/* 3.11: _PyInterpreterFrame, is_entry marks the first */
	PYTHON_LAYOUT_CSTACK_OWNER = 3, /* 3.12+: an entry frame owned by the C stack follows */
};

/* Byte offsets for one minor version (from its public and internal headers). */
struct python_offsets {
	__u16 runtime_interpreters_head; /* _PyRuntime.interpreters.head */
	__u16 interp_threads_head;	 /* PyInterpreterState.tstate_head / threads.head */
	__u16 tstate_next;
	__u16 tstate_thread_id; /* pthread_self() of the thread: its fsbase on x86-64 glibc */
	__u16 tstate_frame;	/* frame (3.8-3.10), cframe (3.11, 3.12), current_frame (3.13) */
	__u16 cframe_current;	/* _PyCFrame.current_frame, or PYTHON_NO_OFFSET */
	__u16 frame_code;	/* f_code (f_executable in 3.13) */
	__u16 frame_previous;	/* f_back / previous */
	__u16 frame_boundary;	/* is_entry (3.11) or owner (3.12+) byte */
	__u16 code_cookie;	/* co_firstlineno and the 4 bytes after it */
	__u8 layout;		/* enum python_layout */
	__u8 cstack_owner;	/* FRAME_OWNED_BY_CSTACK (3.12+) */
	__u16 pad;
};

/* Value of the python_procs map (key: pid). Addresses in the process. */
struct python_proc {
	__u64 runtime;			      /* &_PyRuntime */
	__u64 eval_start[PYTHON_EVAL_RANGES]; /* [start, end): 0, 0 when absent */
	__u64 eval_end[PYTHON_EVAL_RANGES];
	struct python_offsets off;
};

/* Value of the python_threads LRU (key: tid). */
struct python_thread {
	__u64 tstate;	/* 0: not a Python thread when last looked */
	__u64 fsbase;	/* its fsbase then: a new pthread under a reused tid looks again */
	__u64 retry_ns; /* tstate 0: look again after this time (threads register late) */
};

/* Key of the python_codes LRU (value: the cookie announced). */
struct python_code_key {
	__u32 pid;
	__u32 pad;
	__u64 code;
};

/* A code object sampled for the first time (or with a new cookie): user space names it at
 * once, while the process lives, instead of when the window is named (it may be gone). */
struct python_code_event {
	__u32 pid;
	__u32 pad;
	__u64 code;
	__u64 cookie;
};

/* Per-CPU counters (an array indexed by this enum). Cumulative since load. */
enum python_stat {
	PYTHON_STAT_SAMPLES = 0,      /* samples of a process with a walk state */
	PYTHON_STAT_NO_THREAD = 1,    /* the sampled thread has no thread state (native thread) */
	PYTHON_STAT_FRAMES = 2,	      /* interpreter frames recorded */
	PYTHON_STAT_TRUNCATED = 3,    /* the stack was full while interpreter frames remained */
	PYTHON_STAT_READ = 4,	      /* a read of interpreter memory failed: native frames */
	PYTHON_STAT_THREAD_WALKS = 5, /* thread lists scanned (the tid cache missed) */
	PYTHON_STAT_EVENTS_LOST = 6,  /* code-object announcements dropped (ring buffer full) */
	PYTHON_STAT__COUNT = 7,
};

#endif
