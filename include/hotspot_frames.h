/* SPDX-License-Identifier: Apache-2.0 */
/* HotSpot JVM state shared by bpf/profile.bpf.c (Java frames found in the code cache) and user
 * space (agent/runtimes/hotspot/: layout from the VM's gHotSpotVM* tables, names). x86-64. */
#ifndef ROOTTRACE_HOTSPOT_FRAMES_H
#define ROOTTRACE_HOTSPOT_FRAMES_H

#define HOTSPOT_MAX_PROCESSES 4096 /* JVMs with a walk state */
#define HOTSPOT_MAX_HEAPS 4	   /* code heaps (JDK 9+ segmented cache: 3; unsegmented: 1) */
#define HOTSPOT_SEGMAP_HOPS 64	   /* segment-map hops to a blob's start (254 segments each) */
#define HOTSPOT_BLOB_READ 128	   /* bytes of a CodeBlob header read at once: its fields */
#define HOTSPOT_BLOB_CACHE_BITS 8  /* per-CPU slots of pc -> blob (direct-mapped): 256 */

/* A Java frame takes two words of profile_stack.ips: HOTSPOT_FRAME_TAG | its Method*, then
 * the cookie: the Method's ConstMethod*, read at sample time and compared again when it is
 * named, so a Method freed with its class and its address reused is not named after the old
 * one. Interpreted, C1 and C2 frames of one method give the same name (a compiled frame's
 * cookie is where it ran instead: HOTSPOT_FRAME_INLINED below). */
#define HOTSPOT_FRAME_TAG (0x4a56ULL << 48) /* "JV" */
#define HOTSPOT_FRAME_ADDR_MASK ((1ULL << 48) - 1)
/* A stub's frame (a CodeBlob that is no Java method: call_stub, adapters, runtime stubs):
 * HOTSPOT_FRAME_TAG | HOTSPOT_FRAME_BLOB | the blob's address (blobs are 8-aligned, as Methods
 * are), then its _name pointer (a string in libjvm.so) as the cookie. */
#define HOTSPOT_FRAME_BLOB 1ULL
/* A compiled frame (an nmethod's) is the same two words with HOTSPOT_FRAME_INLINED set in the
 * first (Methods are 8-aligned) and, in place of the cookie, where in which nmethod it ran: the
 * pc's offset from the nmethod's code_begin (the return address - 1 in a caller's frame) in the
 * low HOTSPOT_PC_BITS, HOTSPOT_PC_NONE when it does not fit, and the nmethod's distance from
 * the code cache's low bound in 8-byte units above. User space names it from the nmethod's
 * scope data as the methods the JIT inlined at that pc, innermost first, then the Method. */
#define HOTSPOT_FRAME_INLINED 2ULL
#define HOTSPOT_PC_BITS 24
#define HOTSPOT_PC_NONE ((1ULL << HOTSPOT_PC_BITS) - 1)

/* One code heap: reserved once at VM start, never moved. */
struct hotspot_heap {
	__u64 low, high; /* CodeHeap::_memory's reserved bounds */
	__u64 segmap;	 /* CodeHeap::_segmap's low bound: one byte per segment */
	__u32 log2_segment;
	__u32 pad;
};

/* Value of the hotspot_procs map (key: pid), from the VM's own structure tables. */
struct hotspot_proc {
	__u64 low, high; /* the code cache: every heap lies inside */
	struct hotspot_heap heaps[HOTSPOT_MAX_HEAPS];
	__u32 n_heaps;
	__u16 heap_block; /* sizeof(HeapBlock): a blob follows its block header */
	/* CodeBlob fields (all < HOTSPOT_BLOB_READ), nmethod and Method fields */
	__u16 blob_name, blob_frame_size, blob_frame_complete, blob_code_begin, blob_code_end;
	__u16 nmethod_method, method_const;
	/* interpreter frame slots from fp, in bytes (negative) */
	__s16 interp_method, interp_sender_sp;
	__u16 pad[3];
};

/* Per-CPU counters (an array indexed by this enum). Cumulative since load. */
enum hotspot_stat {
	HOTSPOT_STAT_SAMPLES = 0,     /* samples of a JVM with a walk state */
	HOTSPOT_STAT_INTERPRETED = 1, /* interpreted Java frames recorded */
	HOTSPOT_STAT_COMPILED = 2,    /* compiled (C1, C2) Java frames recorded */
	HOTSPOT_STAT_STUB = 3,	      /* stub frames recorded by their blob's name */
	HOTSPOT_STAT_NO_BLOB = 4,     /* a code-cache pc with no blob found: [unknown] */
	HOTSPOT_STAT_READ = 5,	      /* a frame whose memory could not be read: [unknown] */
	HOTSPOT_STAT_TRUNCATED = 6,   /* the stack was full at a Java frame */
	HOTSPOT_STAT_EVENTS_LOST = 7, /* a first-seen method not announced (ring buffer full) */
	HOTSPOT_STAT_BLOB_CACHED = 8, /* a pc's blob from the per-CPU cache, its header unchanged */
	HOTSPOT_STAT_BLOB_STALE = 9,  /* a cached blob whose header changed (code freed, reused) */
	HOTSPOT_STAT__COUNT = 10,
};

#endif
