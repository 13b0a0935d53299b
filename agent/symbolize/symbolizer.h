/* SPDX-License-Identifier: Apache-2.0 */
/* Symboliser: addresses -> function names (no line numbers). User frames from the symbol
 * sources (symbol_source.h: Go's .gopclntab with inlined frames, .symtab, MiniDebugInfo, debug
 * files, debuginfod, .dynsym), per binary of the process registry (process/);
 * kernel frames from /proc/kallsyms; JIT frames from /tmp/perf-PID.map (reduced to the
 * function, see jitname.h). Symbol tables bounded by bytes, least recently used dropped. */
#ifndef ROOTTRACE_SYMBOLIZER_H
#define ROOTTRACE_SYMBOLIZER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "process/build_id.h"
#include "symbolize/demangle_cache.h"

#define SYM_NAME_MAX 256
#define SYM_MODULE_MAX 256
#define SYM_BUILD_ID_MAX BUILD_ID_HEX_MAX /* hex, NUL-terminated */

/* Why a frame could not be named; counted per reason. */
enum sym_unknown_reason {
	SYM_UNKNOWN_NO_MAPPING, /* address in no known mapping (process gone before capture?) */
	SYM_UNKNOWN_UNREADABLE, /* binary unreadable or deleted */
	SYM_UNKNOWN_NO_SYMBOL,	/* binary read, no symbol covers the address */
	SYM_UNKNOWN_KERNEL,	/* kernel address not in kallsyms */
	SYM_UNKNOWN_JIT,	/* anonymous executable memory, no perf map entry covers it */
	SYM_UNKNOWN_DEBUGINFOD_WAITING, /* stripped; its debug file is being fetched */
	SYM_UNKNOWN_DEBUGINFOD_FAILED,	/* stripped; debuginfod did not serve its debug file */
	SYM_UNKNOWN__COUNT,
};

struct sym_frame {
	char function[SYM_NAME_MAX]; /* demangled; "[unknown]" when it cannot be named; a JIT
				      * function without tier, position or signature */
	char file[SYM_NAME_MAX];     /* a JIT function's source file when its runtime wrote one,
				      * else "" (native frames: always "") */
	char module[SYM_MODULE_MAX]; /* binary path, "[kernel]", "[jit:<runtime>]" ("[jit:v8]"),
				      * "[jit]" for a perf-map format we do not know, or "" */
	char build_id[SYM_BUILD_ID_MAX];
	uint64_t file_offset; /* the address's offset in module's file (file-backed mappings) */
	int has_offset;	      /* 1 when file_offset is set; never for kernel, JIT or vDSO */
	int known;	      /* 1 when function is a real name */
	int go_func;	      /* enum sym_go_func: what runtime/pprof's elision needs */
};

/* A Go frame's part in runtime/pprof's wrapper elision (Go 1.19 runtime/traceback.go): a
 * wrapper is dropped from a stack unless the frame it called (the one below it, elided or
 * not) is a panic function. */
enum sym_go_func {
	SYM_GO_OTHER,	/* not Go, or an ordinary Go function */
	SYM_GO_WRAPPER, /* funcID_wrapper in Go's table */
	SYM_GO_PANIC,	/* runtime.gopanic, runtime.sigpanic, runtime.panicwrap */
};

/* True when frame (leaf first) must be left out of a stack the way runtime/pprof leaves out
 * Go's wrappers; *callee_panics carries the state from frame to frame (false at the leaf). */
int sym_frame__go_elided(const struct sym_frame *frame, int *callee_panics);

struct process_registry;

struct symbolizer_options {
	/* Where processes and binaries are looked up (the pipeline's, shared with the unwind
	 * tables); it must outlive the symbolizer. NULL: the symbolizer makes its own from
	 * max_binaries, max_processes and proc_root (a symbolizer alone: tests, benchmarks). */
	struct process_registry *registry;
	size_t max_binaries;  /* cached ELF files (default 256) */
	size_t max_processes; /* cached process address maps (default 4096) */
	/* loaded symbol tables, a soft cap (16 MiB): at a window's end the least recently used
	 * are dropped, never one used in that window */
	size_t max_symbol_bytes;
	const char *proc_root; /* "/proc" unless testing */
	const char *tmp_dir;   /* where perf-PID.map files live, "/tmp" unless testing */
};

struct symbolizer_stats {
	uint64_t unknown[SYM_UNKNOWN__COUNT];
	/* The process and binary counters are the registry's (process_registry__stats()),
	 * reported here under the names the agent's metrics have always had. */
	uint64_t binaries_loaded, binaries_evicted;
	uint64_t processes_captured, processes_evicted;
	uint64_t processes_forgotten;	/* dropped after they exited (or exec'd) */
	uint64_t processes_cached;	/* held now (at most max_processes) */
	uint64_t binaries_opened;	/* files opened at capture (a cache miss by dev+inode) */
	uint64_t binary_cache_hits;	/* mappings served by an already cached binary */
	uint64_t recaptures;		/* maps re-read for an address outside known mappings */
	uint64_t symbol_bytes;		/* memory held by cached symbol tables now */
	uint64_t symbol_tables_dropped; /* over max_symbol_bytes: read again when needed */
	uint64_t symbol_tables_reread;	/* of those, parsed again (0 in a steady state) */
	uint64_t symbol_cap_exceeded;	/* windows that ended over the cap: their tables in use */
	uint64_t images_replaced; /* a process exec'd (or its pid was reused) while captured */
	struct demangle_cache_stats demangled; /* C++ names demangled once, kept across windows */
};

/* Not thread-safe: one thread owns a symbolizer. */
struct symbolizer;

/* NULL + errno on failure. A symbol table is read once per binary of the registry however
 * many processes map it, from the fd the registry pinned. Loaded tables are brought down to
 * max_symbol_bytes at each window's end (symbolizer__end_window): the least recently used
 * tables the window did not use are dropped and read again from their fd if needed; tables
 * used in the window stay even over the cap (counted), so a host that needs more every window
 * does not parse them again every window. Without symbolizer__end_window nothing is dropped.
 * Processes are captured, replaced at exec and forgotten in the registry (process_registry.h), not
 * here. */
struct symbolizer *symbolizer__new(const struct symbolizer_options *opts);
void symbolizer__free(struct symbolizer *s);

/* The registry the symbolizer reads (its own when none was given). */
struct process_registry *symbolizer__registry(struct symbolizer *s);

/* Names one frame. Always fills *ret (with "[unknown]" when it must) and counts unknowns.
 * Pass return addresses (every frame but the leaf) minus one, so a call that ends a function
 * is not named after the next one. An address outside the captured mappings re-reads the
 * maps (at most every 100 ms per process); a JIT's frames come from its perf map. */
void symbolizer__resolve_user(struct symbolizer *s, pid_t pid, uint64_t addr,
			      struct sym_frame *ret);
/* The same for a sample of image `image` of pid (see process_registry__image()). */
void symbolizer__resolve_user_image(struct symbolizer *s, pid_t pid, uint32_t image, uint64_t addr,
				    struct sym_frame *ret);
/* Frames of one address, leaf first, at most max (SYM_FRAMES_MAX is enough): a function the
 * compiler inlined into another (Go) is its own frame, as runtime/pprof writes it, followed
 * by its callers up to the function that holds the code. Returns how many (>= 1 if max). */
#define SYM_FRAMES_MAX 16
size_t symbolizer__resolve_user_frames(struct symbolizer *s, pid_t pid, uint32_t image,
				       uint64_t addr, struct sym_frame *ret, size_t max);
void symbolizer__resolve_kernel(struct symbolizer *s, uint64_t addr, struct sym_frame *ret);

/* Loads /proc/kallsyms now (~150 ms of CPU: the kernel formats every symbol) instead of at
 * the first kernel frame, so the cost is paid at start, not while sampling. */
void symbolizer__preload_kernel(struct symbolizer *s);

/* A window's frames are all named: loaded tables over max_symbol_bytes that it did not use
 * are dropped, and the next window begins. */
void symbolizer__end_window(struct symbolizer *s);

void symbolizer__stats(const struct symbolizer *s, struct symbolizer_stats *ret);

/* Short stable name of a reason ("no_mapping", "unreadable", ...), for summaries. */
const char *symbolizer__reason_name(enum sym_unknown_reason reason);

#endif
