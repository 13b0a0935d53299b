/* SPDX-License-Identifier: Apache-2.0 */
/* Unwind tables shared by bpf/profile.bpf.c (the .eh_frame unwinder) and user space
 * (agent/unwind/: compiled with libdw, loaded into BPF maps by the sampler). x86-64 only. */
#ifndef ROOTTRACE_UNWIND_H
#define ROOTTRACE_UNWIND_H

#define UNWIND_MAX_MAPPINGS 128	       /* executable mappings per process, sorted by start */
#define UNWIND_MAX_PROCESSES 8192      /* processes with a mapping table */
#define UNWIND_MAX_TABLES 4096	       /* table slots (one per distinct binary) */
#define UNWIND_DEFAULT_ROWS (2u << 20) /* rows of all tables (12 bytes each: 24 MiB) */
#define UNWIND_SEARCH_STEPS 24	       /* binary-search steps: at most 16M rows per table */
#define UNWIND_MAPPING_STEPS 8	       /* 2^8 > UNWIND_MAX_MAPPINGS */
#define UNWIND_NO_TABLE 0	       /* mapping without a table: frame-pointer steps */
/* The first-level index of a table (agent/unwind/row_index.c): about one bucket per
 * UNWIND_INDEX_ROWS_PER_BUCKET rows, in the rows map right after the table's rows (so at most
 * 1/8 more rows, shared, allocated and evicted with them); smaller tables have none. */
#define UNWIND_INDEX_MIN_ROWS 32
#define UNWIND_INDEX_ROWS_PER_BUCKET 8
#define UNWIND_BUCKETS_PER_PAIR 2 /* struct unwind_bucket in a row pair's first 16 bytes */

/* How a row computes the CFA (the caller's sp), or what else it says. */
enum unwind_cfa_type {
	UNWIND_CFA_RSP = 1,	  /* CFA = rsp + cfa_off */
	UNWIND_CFA_RBP = 2,	  /* CFA = rbp + cfa_off */
	UNWIND_CFA_PLT = 3,	  /* rsp + 8 + ((rip & 15) >= cfa_off ? 8 : 0): PLT stubs */
	UNWIND_CFA_DEREF_RSP = 4, /* CFA = *(rsp + cfa_off): realigned stacks */
	UNWIND_CFA_DEREF_RBP = 5, /* CFA = *(rbp + cfa_off) */
	UNWIND_ROW_STOP = 6,	  /* return address undefined: outermost frame (_start, clone) */
	UNWIND_ROW_SIGNAL = 7,	  /* signal trampoline: registers from the rt_sigframe at rsp */
	UNWIND_ROW_GAP = 8,	  /* no FDE covers the pc: take a frame-pointer step */
	UNWIND_ROW_CANNOT = 9,	  /* a rule we do not understand; cfa_off = enum unwind_cannot */
};

/* Where the caller's rbp is. */
enum unwind_rbp_type {
	UNWIND_RBP_SAME = 0,	  /* unchanged by this frame */
	UNWIND_RBP_AT_CFA = 1,	  /* saved at CFA + rbp_off */
	UNWIND_RBP_UNDEFINED = 2, /* clobbered: the caller's rbp is unknown (0) */
};

/* Why a row is UNWIND_ROW_CANNOT (counted per table by the compiler, per step by BPF). */
enum unwind_cannot {
	UNWIND_CANNOT_CFA_REGISTER = 0,	  /* CFA from a register other than rsp/rbp (r10 DRAP) */
	UNWIND_CANNOT_CFA_EXPRESSION = 1, /* an expression that is not PLT or *(reg+off) */
	UNWIND_CANNOT_RA_RULE = 2,	  /* return address not saved at CFA-8 */
	UNWIND_CANNOT_RBP_RULE = 3,	  /* rbp in a register or an expression */
	UNWIND_CANNOT_RANGE = 4,	  /* offset does not fit the row */
	UNWIND_CANNOT__COUNT = 5,
};

/* One row: from pc (table-relative) up to the next row's pc. 12 bytes. */
struct unwind_row {
	__u32 pc;
	__s32 cfa_off;
	__s16 rbp_off;
	__u8 cfa_type; /* enum unwind_cfa_type */
	__u8 rbp_type; /* enum unwind_rbp_type */
};

/* One bucket of a table's index: the row covering a table pc in the bucket is the last of
 * rows [lo, hi) of the table starting at or below it, or row lo - 1 (which covers the
 * bucket's first pc) when none does; lo >= 1. Two to a row pair. */
struct unwind_bucket {
	__u32 lo, hi;
};

/* Value of the table-slot array: a table's rows in the rows array. A slot is valid for the
 * mapping whose table_id equals id (slots are reused under other ids after eviction). */
struct unwind_table_info {
	__u32 id;
	__u32 first_row;
	__u32 n_rows;	 /* 0: not loaded */
	__u32 n_buckets; /* 0: no index, a binary search over all rows */
	__u32
	    index_row; /* the index's first row in the rows map (even): bucket b in its pair b/2 */
	__u32 base_pc; /* bucket b: table pcs [base_pc + (b << shift), + (1 << shift)) */
	__u32 shift;   /* pcs past the last bucket belong to the last one */
	__u32 pad;
};

/* An executable mapping of a process: table pc = pc - bias. */
struct unwind_mapping {
	__u64 start, end;
	__u64 bias;
	__u32 table_id; /* UNWIND_NO_TABLE: JIT, no .eh_frame, table not built */
	__u32 pad;
};

struct unwind_process {
	__u32 n_mappings;
	__u32 pad;
	struct unwind_mapping mappings[UNWIND_MAX_MAPPINGS];
};

/* Per-CPU unwinder counters (an array indexed by this enum). Cumulative since load. */
enum unwind_stat {
	UNWIND_STAT_TABLES = 0,		 /* samples whose user stack used only table steps */
	UNWIND_STAT_FP = 1,		 /* ... only frame-pointer steps */
	UNWIND_STAT_MIXED = 2,		 /* ... both */
	UNWIND_STAT_NOT_LOADED = 3,	 /* process had no mapping table yet: frame pointers only */
	UNWIND_STAT_END_CLEAN = 4,	 /* reached an undefined return address (_start, clone) */
	UNWIND_STAT_END_FP_CHAIN = 5,	 /* frame-pointer chain ended (rbp or return address 0) */
	UNWIND_STAT_END_NO_MAPPING = 6,	 /* pc in no executable mapping of the process */
	UNWIND_STAT_END_CANNOT = 7,	 /* a "cannot unwind here" row */
	UNWIND_STAT_END_BAD_CFA = 8,	 /* CFA not above sp, or misaligned */
	UNWIND_STAT_END_READ = 9,	 /* reading the stack failed (paged out, bad address) */
	UNWIND_STAT_END_NO_ROW = 10,	 /* pc below the table's first row */
	UNWIND_STAT_TRUNCATED = 11,	 /* deeper than PROFILE_STACK_DEPTH frames */
	UNWIND_STAT_STACK_MAP_FULL = 12, /* the user-stack map refused the stack */
	UNWIND_STAT_KERNEL_THREAD = 13,	 /* no user stack */
	UNWIND_STAT_TAIL_HIT = 14,	 /* walks that ended with the thread's cached stack tail */
	UNWIND_STAT_TAIL_MISS = 15,	/* ... that did not (no tail, none of its frames matched) */
	UNWIND_STAT_TAIL_FALLBACK = 16, /* a tail frame matched but a stack word had changed */
	UNWIND_STAT_TAIL_FRAMES = 17,	/* frames copied from tails */
	UNWIND_STAT_TAIL_STORED = 18,	/* tails stored (refreshed) for the next walk */
	UNWIND_STAT_TAIL_VM_FRAMES = 19, /* JS and Java frames among those copied */
	UNWIND_STAT__COUNT = 20,
};

#endif
