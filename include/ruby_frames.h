/* SPDX-License-Identifier: Apache-2.0 */
/* CRuby state shared by bpf/profile.bpf.c (the control-frame walk inside the native unwinder)
 * and user space (agent/runtimes/ruby/: detection, offsets, names). x86-64, glibc only. */
#ifndef ROOTTRACE_RUBY_FRAMES_H
#define ROOTTRACE_RUBY_FRAMES_H

#define RUBY_MAX_PROCESSES 4096 /* Ruby processes with a walk state */

/* A Ruby frame takes two words of profile_stack.ips: RUBY_FRAME_TAG | the iseq's address,
 * then the cookie: the iseq's body pointer read at sample time, compared again when it is
 * named so a freed and reused iseq is not named after the old one. */
#define RUBY_FRAME_TAG (0x5242ULL << 48) /* "RB" */
#define RUBY_FRAME_ADDR_MASK ((1ULL << 48) - 1)

/* The cookie is the frame's method entry | RUBY_COOKIE_METHOD_ENTRY when it has one (methods
 * and their blocks: user space reads the owner class from it), else the iseq's body. */
#define RUBY_COOKIE_METHOD_ENTRY 1ULL

/* A frame's env: ep[-2] me_cref, ep[-1] specval (the enclosing env's ep | 0-3), ep[0] flags.
 * imemo type is RBasic.flags bits 12-15 of a T_IMEMO (0x1a). Stable from 2.7 to 3.3. */
#define RUBY_ENV_FLAG_LOCAL 0x2ULL
#define RUBY_IMEMO_TYPE(flags) (((flags)&0x1f) == 0x1a ? ((flags) >> 12) & 0xf : 0xff)
#define RUBY_IMEMO_SVAR 2
#define RUBY_IMEMO_MENT 6
#define RUBY_CFP_READ 40 /* bytes of a control frame read: pc, sp, iseq, self, ep */
#define RUBY_EP_HOPS 4	 /* blocks nested deeper than this are named without their class */

/* ep[0] (VM_ENV_DATA_INDEX_FLAGS) of a control frame: its type and whether it began a vm_exec
 * call (FINISH: the frames of one vm_exec_core end there). Stable from 2.7 to 3.3. */
#define RUBY_FRAME_MAGIC_MASK 0x7fff0001ULL
#define RUBY_FRAME_MAGIC_CFUNC 0x55550001ULL
#define RUBY_FRAME_MAGIC_IFUNC 0x66660001ULL
#define RUBY_FRAME_MAGIC_DUMMY 0x79990001ULL
#define RUBY_FRAME_FLAG_FINISH 0x20ULL

/* Byte offsets for one minor version (from its public vm_core.h). */
struct ruby_offsets {
	__u16 ec_vm_stack;	/* rb_execution_context_t.vm_stack */
	__u16 ec_vm_stack_size; /* .vm_stack_size (in VALUEs) */
	__u16 ec_cfp;		/* .cfp */
	__u16 cfp_size;		/* sizeof(rb_control_frame_t) */
	__u16 cfp_iseq;		/* rb_control_frame_t.iseq */
	__u16 cfp_ep;		/* .ep */
	__u16 iseq_body;	/* rb_iseq_t.body: the cookie */
	__u16 body_encoded;	/* rb_iseq_constant_body.iseq_encoded: where pc starts */
};

/* Value of the ruby_procs map (key: pid). Addresses in the process. */
struct ruby_proc {
	__u64 tls_module;	    /* libruby's TLS module id (dtv index) */
	__u64 tls_offset;	    /* ruby_current_ec in that module's TLS block */
	__u64 core_start, core_end; /* vm_exec_core: its Ruby frames replace it */
	__u64 exec_start, exec_end; /* rb_vm_exec: the native caller, stepped over unrecorded */
	struct ruby_offsets off;
};

/* Per-CPU counters (an array indexed by this enum). Cumulative since load. */
enum ruby_stat {
	RUBY_STAT_SAMPLES = 0,	   /* samples of a process with a walk state */
	RUBY_STAT_NO_EC = 1,	   /* the sampled thread has no execution context */
	RUBY_STAT_FRAMES = 2,	   /* Ruby frames recorded */
	RUBY_STAT_TRUNCATED = 3,   /* the stack was full while Ruby frames remained */
	RUBY_STAT_READ = 4,	   /* a read of interpreter memory failed: native frames */
	RUBY_STAT_EVENTS_LOST = 5, /* first-sight announcements dropped (ring buffer full) */
	RUBY_STAT__COUNT = 6,
};

#endif
