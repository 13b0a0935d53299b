/* SPDX-License-Identifier: Apache-2.0 */
/* V8 state shared by bpf/profile.bpf.c (JS frames found on the frame-pointer chain) and user
 * space (agent/runtimes/v8/: layout from the v8dbg_* constants, names). x86-64 only. */
#ifndef ROOTTRACE_V8_FRAMES_H
#define ROOTTRACE_V8_FRAMES_H

#define V8_MAX_PROCESSES 4096 /* V8 processes with a walk state */
#define V8_OBJECT_WORDS 4     /* words of an object BPF reads at once: its fields are in them */
/* A JSFunction's first 56 bytes are read at once (the smallest JSFunction, with no prototype
 * slot; its code field is past the 4th word) into V8_FUNCTION_WORDS words. */
#define V8_FUNCTION_READ 56
#define V8_FUNCTION_WORDS 8
#define V8_CODE_WORDS 3 /* a Code's words read from its instruction start on (index & 3) */

/* A JS frame takes two words of profile_stack.ips: V8_FRAME_TAG | its SharedFunctionInfo's
 * tagged address (user addresses are below 2^47, so no native pc carries the tag), then the
 * cookie: the SharedFunctionInfo's name_or_scope_info word read at sample time, compared again
 * when it is named, so another object at a reused address is not named after the old one. */
#define V8_FRAME_TAG (0x5638ULL << 48) /* "V8" */
#define V8_FRAME_ADDR_MASK ((1ULL << 48) - 1)
/* An optimised (TurboFan, Maglev) frame whose pc lies in its function's code sets this bit of
 * its first word (free: a tagged address ends in 001) and takes a third word, the code's
 * untagged address >> 3 (V8_CODE_ADDR_BITS) | the pc's offset in its instructions << 44 (a
 * return address minus one), from which user space names the functions the code inlined. */
#define V8_FRAME_OPTIMISED 2ULL
#define V8_CODE_ADDR_BITS 44		    /* untagged code addresses below 2^47 */
#define V8_CODE_OFFSET_MAX ((1U << 20) - 1) /* offsets past 1 MiB: no third word */
/* Announcing such code (once per code object: its tables are read while it lives): the word
 * V8_FRAME_TAG | the code's untagged address | V8_CODE_NOTE (bit 0 clear: no SharedFunctionInfo
 * word), the cookie its instruction start. */
#define V8_CODE_NOTE 2ULL

/* Value of the v8_procs map (key: pid): where V8's code is and how a JS frame is read, from
 * the binary's v8dbg_* constants. Object offsets are from the untagged address, each within
 * the object's first V8_OBJECT_WORDS words. */
struct v8_proc {
	__u64 blob_code_var;	 /* &current_embedded_blob_code_ (a pointer), 0 when unknown */
	__u64 blob_size_var;	 /* &current_embedded_blob_code_size_ (a 32-bit size) */
	__s16 fp_function;	 /* off_fp_function: a JS frame's JSFunction, from its fp */
	__s16 fp_context;	 /* off_fp_context: its context; a Smi frame type in typed frames */
	__u16 function_shared;	 /* JSFunction::shared */
	__u16 object_map;	 /* HeapObject::map */
	__u16 map_instance_type; /* Map::instance_type (16 bits) */
	__u16 sfi_cookie;	 /* SharedFunctionInfo::name_or_scope_info */
	__u16 type_function_first, type_function_last; /* JSFunction and its subclasses */
	__u16 type_sfi;				       /* SHARED_FUNCTION_INFO_TYPE */
	/* Optimised code; code_entry 0: not read (a V8 without a table), outer names only */
	__u16 function_code; /* JSFunction::code (within V8_FUNCTION_READ bytes) */
	__u16 code_entry;    /* Code: its instruction start, a pointer; the read starts there */
	__u8 code_flags;     /* Code: the 32-bit flags, in bytes from code_entry (4-aligned) */
	__u8 code_size;	     /* Code: the 32-bit instruction size, likewise */
	__u8 kind_shift, kind_mask;			/* CodeKind in the flags */
	__u8 kind_optimised_first, kind_optimised_last; /* MAGLEV .. TURBOFAN */
	__u16 pad;
};

/* Per-CPU counters (an array indexed by this enum). Cumulative since load. */
enum v8_stat {
	V8_STAT_SAMPLES = 0,	 /* samples of a process with a walk state */
	V8_STAT_FRAMES = 1,	 /* JS frames recorded */
	V8_STAT_NATIVE = 2,	 /* V8 code recorded as a native pc (builtin, stub, entry frames) */
	V8_STAT_TRUNCATED = 3,	 /* the stack was full at a JS frame */
	V8_STAT_EVENTS_LOST = 4, /* a first-seen function not announced (ring buffer full) */
	V8_STAT_OPTIMISED = 5,	 /* JS frames recorded with their optimised code's pc offset */
	V8_STAT__COUNT = 6,
};

#endif
