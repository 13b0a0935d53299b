// SPDX-License-Identifier: Apache-2.0
/* Symboliser: names only. Per binary of the process registry its symbol table (loaded from
 * the binary's pinned fd, bounded by bytes); per process image its perf map; kallsyms; vdso. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "symbolize/demangle_cache.h"
#include "symbolize/elf_symbols.h"
#include "symbolize/jitname.h"
#include "symbolize/kallsyms.h"
#include "symbolize/perfmap.h"
#include "process/process_registry.h"
#include "symbolize/symbol_source.h"
#include "symbolize/symbolizer.h"

/* 16 MiB: a node running node (~6 MiB of libnode symbols), a JVM (~2.5 MiB for libjvm) and
 * libc/libstdc++ needs ~10 MiB; at 8 MiB those tables were dropped and parsed again every
 * window (0.9 % of a core of symtab__load with a JVM and node spinning). A soft cap: tables
 * are dropped at a window's end, and only those the window did not use. */
#define DEFAULT_MAX_SYMBOL_BYTES (16u << 20)
#define NSEC_PER_MSEC 1000000ULL
#define PERFMAP_CHECK_NS (200 * NSEC_PER_MSEC) /* perf map file re-stat */
/* A process without a perf map is checked less and less often, up to this. */
#define PERFMAP_ABSENT_MAX_NS (60 * 1000 * NSEC_PER_MSEC)
#define KALLSYMS_RELOAD_NS (60 * 1000 * NSEC_PER_MSEC) /* modules, BPF programs come and go */
#define KALLSYMS_RELOAD_MAX_NS (3600 * 1000 * NSEC_PER_MSEC)

static const char UNKNOWN[] = "[unknown]";

/* A binary's symbol table (the registry binary's slot). */
struct binary_symbols {
	struct binary *bin;
	struct symtab *syms; /* NULL: not loaded (or dropped over max_symbol_bytes) */
	int load_err;
	bool dropped;	      /* dropped over the cap: loading it again is a re-read */
	uint64_t used_window; /* the symbolizer's window when the table was last used */
	struct binary_symbols *newer, *older; /* in the symbolizer's list of loaded tables */
};

/* A process image's perf map (the registry record's slot). */
struct process_perfmap {
	struct perfmap *perfmap;
	uint64_t checked_ns, wait_ns; /* wait_ns: the current backoff */
	off_t size;
	struct timespec mtime;
};

struct symbolizer {
	char tmp_dir[256];
	struct process_registry *reg;
	bool own_reg; /* made from the options (no registry given) */
	int bin_slot, proc_slot;
	struct binary_symbols *newest, *oldest; /* tables loaded, by last use */
	size_t max_symbol_bytes;
	uint64_t window; /* windows ended (symbolizer__end_window) */
	struct kallsyms *kallsyms;
	uint64_t kallsyms_loaded_ns;
	uint64_t kallsyms_reload_ns; /* after a miss; doubles while reloads do not help */
	struct elf_symbols *vdso;
	size_t vdso_size;
	struct demangle_cache *demangled; /* kept across windows; NULL: demangled every time */
	int vdso_err;
	/* The calls a resolved address's function inlined (leaf first, after ret->function),
	 * for symbolizer__resolve_user_frames. */
	const char *inlined[SYMTAB_MAX_FRAMES];
	uint8_t inlined_wrapper[SYMTAB_MAX_FRAMES];
	size_t n_inlined;
	struct symbolizer_stats stats;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* --- symbol tables of binaries ---------------------------------------------------------- */

static void loaded_unlink(struct symbolizer *s, struct binary_symbols *bs)
{
	if (bs->newer)
		bs->newer->older = bs->older;
	else
		s->newest = bs->older;
	if (bs->older)
		bs->older->newer = bs->newer;
	else
		s->oldest = bs->newer;
	bs->newer = bs->older = NULL;
}

static void loaded_push(struct symbolizer *s, struct binary_symbols *bs)
{
	bs->older = s->newest;
	bs->newer = NULL;
	if (s->newest)
		s->newest->newer = bs;
	s->newest = bs;
	if (!s->oldest)
		s->oldest = bs;
}

static void drop_symbols(struct symbolizer *s, struct binary_symbols *bs)
{
	if (!bs->syms)
		return;
	loaded_unlink(s, bs);
	s->stats.symbol_bytes -= symtab__memory(bs->syms);
	symtab__free(bs->syms);
	bs->syms = NULL;
}

/* The registry dropped the binary (evicted and no longer mapped). */
static void binary_symbols_free(void *state, void *ctx)
{
	drop_symbols(ctx, state);
	free(state);
}

/* Brings the loaded tables down to max_symbol_bytes at a window's end: the least recently used
 * go first (their binaries stay, and are read again from the pinned fd if a frame needs them),
 * never one the window used, so tables the host needs every window are not parsed again
 * every window however many there are (the cap is then exceeded, and counted). Tables used in
 * the window are the newest of the list, so the walk stops at the first one. */
static void trim_symbols(struct symbolizer *s)
{
	while (s->stats.symbol_bytes > s->max_symbol_bytes && s->oldest &&
	       s->oldest->used_window != s->window) {
		s->oldest->dropped = true;
		drop_symbols(s, s->oldest);
		s->stats.symbol_tables_dropped++;
	}
	if (s->stats.symbol_bytes > s->max_symbol_bytes)
		s->stats.symbol_cap_exceeded++;
}

/* The one place a binary's symbol table is read, from its pinned fd and its build-id, through
 * the symbol sources (symbol_source.h: Go's .gopclntab, .symtab, MiniDebugInfo, debug files,
 * debuginfod, .dynsym). NULL + errno. */
static struct symtab *read_binary_symbols(int fd, const char *build_id)
{
	return symtab__load(fd, build_id, NULL);
}

/* Symbols of a binary, parsed on first use (and after a drop) from its pinned fd; a table
 * waiting for debuginfod is checked again on use (symtab__refresh never blocks). */
static const struct symtab *binary_symbols(struct symbolizer *s, struct binary *bin)
{
	struct binary_symbols *bs = binary__slot(bin, s->bin_slot);
	struct symtab *es;

	if (!bs) {
		bs = calloc(1, sizeof(*bs));
		if (!bs)
			return NULL;
		bs->bin = bin;
		binary__set_slot(bin, s->bin_slot, bs);
	}
	bs->used_window = s->window;
	if (bs->syms) {
		size_t before = symtab__memory(bs->syms);

		if (symtab__refresh(bs->syms))
			s->stats.symbol_bytes += symtab__memory(bs->syms) - before;
		loaded_unlink(s, bs);
		loaded_push(s, bs);
		return bs->syms;
	}
	if (bs->load_err)
		return NULL;
	errno = 0;
	es = read_binary_symbols(bin->fd, bin->build_id);
	if (!es) {
		bs->load_err = errno ? -errno : -EIO;
		return NULL;
	}
	bs->syms = es;
	s->stats.binaries_loaded++;
	s->stats.symbol_tables_reread += bs->dropped;
	bs->dropped = false;
	s->stats.symbol_bytes += symtab__memory(es);
	loaded_push(s, bs);
	return es;
}

/* --- resolution ----------------------------------------------------------------------- */

static void process_perfmap_free(void *state, void *ctx)
{
	struct process_perfmap *pp = state;

	perfmap__free(pp->perfmap);
	free(pp);
}

static bool perfmap_changed(const struct process_perfmap *pp, const struct stat *st)
{
	return !pp->perfmap || st->st_size != pp->size || st->st_mtim.tv_sec != pp->mtime.tv_sec ||
	       st->st_mtim.tv_nsec != pp->mtime.tv_nsec;
}

/* Loads the first usable perf map of paths that changed since pp read it. */
static void reload_perfmap(struct process_perfmap *pp, const struct process *p,
			   char (*paths)[PROCMAPS_PATH_MAX], int n)
{
	for (int i = 0; i < n; i++) {
		struct perfmap *pm;
		struct stat st;

		if (stat(paths[i], &st) || !S_ISREG(st.st_mode))
			continue;
		/* As perf does: only a map written by the process's user (or root) names it. */
		if (st.st_uid != 0 && st.st_uid != p->uid)
			continue;
		if (!perfmap_changed(pp, &st))
			break;
		pm = perfmap__load(paths[i]);
		if (!pm)
			continue;
		perfmap__free(pp->perfmap);
		pp->perfmap = pm;
		pp->size = st.st_size;
		pp->mtime = st.st_mtim;
		break;
	}
}

/* The process's perf map, re-read when the file changed (JITs append), rate-limited. */
static const struct perfmap *proc_perfmap(struct symbolizer *s, struct process *p)
{
	struct process_perfmap *pp = process__slot(p, s->proc_slot);
	char paths[2][PROCMAPS_PATH_MAX];
	uint64_t now = now_ns();

	if (!pp) {
		pp = calloc(1, sizeof(*pp));
		if (!pp)
			return NULL;
		pp->wait_ns = PERFMAP_CHECK_NS;
		process__set_slot(p, s->proc_slot, pp);
	}
	if (pp->checked_ns && now - pp->checked_ns < pp->wait_ns)
		return pp->perfmap;
	pp->checked_ns = now;
	snprintf(paths[0], sizeof(paths[0]), "%s/%d/root%s/perf-%d.map",
		 process_registry__proc_root(s->reg), (int)p->pid, s->tmp_dir,
		 (int)process_registry__nspid(s->reg, p));
	snprintf(paths[1], sizeof(paths[1]), "%s/perf-%d.map", s->tmp_dir, (int)p->pid);
	reload_perfmap(pp, p, paths, 2);
	/* A JIT appends to its map: check often. No map yet: back off. */
	if (pp->perfmap)
		pp->wait_ns = PERFMAP_CHECK_NS;
	else if (pp->wait_ns < PERFMAP_ABSENT_MAX_NS)
		pp->wait_ns *= 2;
	return pp->perfmap;
}

static void set_unknown(struct symbolizer *s, struct sym_frame *ret, enum sym_unknown_reason why,
			const char *module)
{
	snprintf(ret->function, sizeof(ret->function), "%s", UNKNOWN);
	ret->file[0] = '\0';
	snprintf(ret->module, sizeof(ret->module), "%s", module ? module : "");
	ret->known = 0;
	s->stats.unknown[why]++;
}

/* The functions whose funcID (gopanic, sigpanic, panicwrap) keeps the wrapper that called
 * them: the linker gives these IDs by name. */
static int go_func_of(const char *name, uint8_t wrapper)
{
	if (wrapper)
		return SYM_GO_WRAPPER;
	if (!strcmp(name, "runtime.gopanic") || !strcmp(name, "runtime.sigpanic") ||
	    !strcmp(name, "runtime.panicwrap"))
		return SYM_GO_PANIC;
	return SYM_GO_OTHER;
}

int sym_frame__go_elided(const struct sym_frame *frame, int *callee_panics)
{
	int elided = frame->go_func == SYM_GO_WRAPPER && !*callee_panics;

	*callee_panics = frame->go_func == SYM_GO_PANIC;
	return elided;
}

static void set_known(struct symbolizer *s, struct sym_frame *ret, const char *name,
		      const char *module)
{
	demangle_cache__get(s->demangled, name, ret->function, sizeof(ret->function));
	ret->file[0] = '\0';
	snprintf(ret->module, sizeof(ret->module), "%s", module);
	ret->known = 1;
}

/* A perf-map entry: one name per function whatever its tier or source position, its file
 * apart, its runtime in the module ("[jit:v8]"). A format we do not know is kept as written
 * (demangled: some JITs write C++ symbols) under "[jit]". */
static void set_jit(struct symbolizer *s, struct sym_frame *ret, const char *perf_map_name)
{
	struct jit_name jit;
	const char *runtime;

	jitname__parse(perf_map_name, &jit);
	if (jit.runtime == JIT_RUNTIME_UNKNOWN)
		return set_known(s, ret, perf_map_name, "[jit]");
	runtime = jitname__runtime_name(jit.runtime);
	snprintf(ret->function, sizeof(ret->function), "%s", jit.function);
	snprintf(ret->file, sizeof(ret->file), "%s", jit.file);
	snprintf(ret->module, sizeof(ret->module), "[jit:%s]", runtime);
	ret->known = 1;
}

static const struct elf_symbols *vdso_symbols(struct symbolizer *s)
{
	if (!s->vdso && !s->vdso_err) {
		s->vdso = elf_symbols__load_own_vdso(&s->vdso_size);
		if (!s->vdso)
			s->vdso_err = errno ? -errno : -ENOENT;
	}
	return s->vdso;
}

/* Names addr inside an ELF image mapped at m, or NULL. */
static const char *elf_name(const struct elf_symbols *es, const struct process_mapping *m,
			    uint64_t addr)
{
	uint64_t vaddr;

	if (elf_symbols__offset_to_vaddr(es, addr - m->start + m->offset, &vaddr))
		return NULL;
	return elf_symbols__lookup(es, vaddr);
}

static const enum sym_unknown_reason unnamed_reasons[] = {
    [SYMTAB_UNNAMED_NO_SYMBOLS] = SYM_UNKNOWN_NO_SYMBOL,
    [SYMTAB_UNNAMED_DEBUGINFOD_WAITING] = SYM_UNKNOWN_DEBUGINFOD_WAITING,
    [SYMTAB_UNNAMED_DEBUGINFOD_FAILED] = SYM_UNKNOWN_DEBUGINFOD_FAILED,
};

/* A file-backed frame: its names leaf first; the first is ret, the others wait in
 * s->inlined for symbolizer__resolve_user_frames. */
static void resolve_in_file(struct symbolizer *s, const struct process_mapping *m, uint64_t addr,
			    struct sym_frame *ret)
{
	const struct symtab *t = binary_symbols(s, m->bin);
	const char *names[SYMTAB_MAX_FRAMES];
	uint8_t wrapper[SYMTAB_MAX_FRAMES];
	size_t n;

	if (!t)
		return set_unknown(s, ret, SYM_UNKNOWN_UNREADABLE, m->path);
	n = symtab__lookup_funcs(t, addr - m->start + m->offset, names, wrapper, SYMTAB_MAX_FRAMES);
	if (!n)
		return set_unknown(s, ret, unnamed_reasons[symtab__unnamed(t)], m->path);
	set_known(s, ret, names[0], m->path);
	ret->go_func = go_func_of(names[0], wrapper[0]);
	s->n_inlined = n - 1;
	memcpy(s->inlined, names + 1, (n - 1) * sizeof(*names));
	memcpy(s->inlined_wrapper, wrapper + 1, n - 1);
}

static void resolve_in_mapping(struct symbolizer *s, struct process *p,
			       const struct process_mapping *m, uint64_t addr,
			       struct sym_frame *ret)
{
	const struct elf_symbols *es;
	const struct perfmap *pm;
	const char *name;

	switch (m->kind) {
	case PROCESS_MAPPING_ANON:
		pm = proc_perfmap(s, p);
		name = pm ? perfmap__lookup(pm, addr) : NULL;
		if (name)
			return set_jit(s, ret, name);
		return set_unknown(s, ret, SYM_UNKNOWN_JIT, m->path);
	case PROCESS_MAPPING_VDSO:
		es = vdso_symbols(s);
		/* Ours stands for theirs only when it is the same image (same ABI). */
		name = es && m->end - m->start == s->vdso_size ? elf_name(es, m, addr) : NULL;
		if (name)
			return set_known(s, ret, name, m->path);
		return set_unknown(s, ret, SYM_UNKNOWN_NO_SYMBOL, m->path);
	case PROCESS_MAPPING_UNREADABLE:
		return set_unknown(s, ret, SYM_UNKNOWN_UNREADABLE, m->path);
	case PROCESS_MAPPING_FILE:
		snprintf(ret->build_id, sizeof(ret->build_id), "%s", m->bin->build_id);
		ret->file_offset = addr - m->start + m->offset;
		ret->has_offset = 1;
		return resolve_in_file(s, m, addr, ret);
	}
}

void symbolizer__resolve_user(struct symbolizer *s, pid_t pid, uint64_t addr, struct sym_frame *ret)
{
	struct process *p = process_registry__peek(s->reg, pid);

	symbolizer__resolve_user_image(s, pid, p ? p->image : 0, addr, ret);
}

void symbolizer__resolve_user_image(struct symbolizer *s, pid_t pid, uint32_t image, uint64_t addr,
				    struct sym_frame *ret)
{
	const struct process_mapping *m;
	const struct perfmap *pm;
	const char *name;
	struct process *p;

	ret->build_id[0] = '\0';
	ret->has_offset = 0;
	ret->file_offset = 0;
	ret->go_func = SYM_GO_OTHER;
	s->n_inlined = 0;
	p = process_registry__image(s->reg, pid, image);
	if (!p)
		return set_unknown(s, ret, SYM_UNKNOWN_NO_MAPPING, NULL);
	m = process_registry__find_mapping(s->reg, p, addr);
	if (m)
		return resolve_in_mapping(s, p, m, addr, ret);
	pm = proc_perfmap(s, p);
	name = pm ? perfmap__lookup(pm, addr) : NULL;
	if (name)
		return set_jit(s, ret, name);
	set_unknown(s, ret, SYM_UNKNOWN_NO_MAPPING, NULL);
}

size_t symbolizer__resolve_user_frames(struct symbolizer *s, pid_t pid, uint32_t image,
				       uint64_t addr, struct sym_frame *ret, size_t max)
{
	size_t n = 1;

	if (!max)
		return 0;
	symbolizer__resolve_user_image(s, pid, image, addr, &ret[0]);
	/* ret[0] is the innermost inlined call; its callers follow, the holder last. */
	for (size_t i = 0; i < s->n_inlined && n < max; i++, n++) {
		set_known(s, &ret[n], s->inlined[i], ret[0].module);
		ret[n].go_func = go_func_of(s->inlined[i], s->inlined_wrapper[i]);
		snprintf(ret[n].build_id, sizeof(ret[n].build_id), "%s", ret[0].build_id);
		ret[n].has_offset = 0; /* the innermost call carries the address */
		ret[n].file_offset = 0;
	}
	s->n_inlined = 0;
	return n;
}

/* Loads kallsyms on first use; again after a miss once it is a minute old (longer while
 * reloads do not name the missed address: a reload costs ~150 ms of CPU). */
static void load_kallsyms(struct symbolizer *s, bool missed)
{
	struct kallsyms *ks;
	char path[300];
	uint64_t now = now_ns();

	if (s->kallsyms_loaded_ns &&
	    (!missed || now - s->kallsyms_loaded_ns < s->kallsyms_reload_ns))
		return;
	s->kallsyms_loaded_ns = now;
	snprintf(path, sizeof(path), "%s/kallsyms", process_registry__proc_root(s->reg));
	/* The old table goes first: two at once would double the agent's peak memory. */
	kallsyms__free(s->kallsyms);
	s->kallsyms = NULL;
	ks = kallsyms__load(path);
	if (!ks)
		return; /* unreadable or hidden (kptr_restrict): kernel frames stay unknown */
	s->kallsyms = ks;
}

void symbolizer__preload_kernel(struct symbolizer *s)
{
	load_kallsyms(s, false);
}

void symbolizer__resolve_kernel(struct symbolizer *s, uint64_t addr, struct sym_frame *ret)
{
	const char *name = NULL;

	ret->build_id[0] = '\0';
	ret->has_offset = 0;
	load_kallsyms(s, false);
	if (s->kallsyms)
		name = kallsyms__lookup(s->kallsyms, addr, NULL);
	if (!name) {
		uint64_t loaded = s->kallsyms_loaded_ns;

		load_kallsyms(s, true);
		if (s->kallsyms)
			name = kallsyms__lookup(s->kallsyms, addr, NULL);
		if (loaded != s->kallsyms_loaded_ns && !name &&
		    s->kallsyms_reload_ns < KALLSYMS_RELOAD_MAX_NS)
			s->kallsyms_reload_ns *= 2;
		else if (loaded != s->kallsyms_loaded_ns && name)
			s->kallsyms_reload_ns = KALLSYMS_RELOAD_NS;
	}
	if (!name)
		return set_unknown(s, ret, SYM_UNKNOWN_KERNEL, "[kernel]");
	snprintf(ret->function, sizeof(ret->function), "%s", name);
	ret->file[0] = '\0';
	snprintf(ret->module, sizeof(ret->module), "[kernel]");
	ret->known = 1;
}

/* --- lifecycle ------------------------------------------------------------------------ */

/* The registry given, else one of our own from the options; our slots on it. */
static int attach_registry(struct symbolizer *s, const struct symbolizer_options *o)
{
	struct process_registry_options ro = {
	    .max_processes = o->max_processes,
	    .max_binaries = o->max_binaries,
	    .proc_root = o->proc_root,
	};

	s->reg = o->registry;
	if (!s->reg) {
		s->reg = process_registry__new(&ro);
		s->own_reg = true;
	}
	if (!s->reg)
		return -ENOMEM;
	s->bin_slot = process_registry__add_binary_slot(s->reg, binary_symbols_free, s);
	s->proc_slot = process_registry__add_process_slot(s->reg, process_perfmap_free, s);
	return s->bin_slot < 0 || s->proc_slot < 0 ? -ENOSPC : 0;
}

struct symbolizer *symbolizer__new(const struct symbolizer_options *opts)
{
	struct symbolizer_options o = opts ? *opts : (struct symbolizer_options){0};
	struct symbolizer *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return NULL;
	s->bin_slot = s->proc_slot = -1;
	snprintf(s->tmp_dir, sizeof(s->tmp_dir), "%s", o.tmp_dir ? o.tmp_dir : "/tmp");
	s->kallsyms_reload_ns = KALLSYMS_RELOAD_NS;
	s->max_symbol_bytes = o.max_symbol_bytes ? o.max_symbol_bytes : DEFAULT_MAX_SYMBOL_BYTES;
	s->demangled = demangle_cache__new(0);
	err = s->demangled ? attach_registry(s, &o) : -ENOMEM;
	if (err) {
		symbolizer__free(s);
		errno = -err;
		return NULL;
	}
	return s;
}

void symbolizer__free(struct symbolizer *s)
{
	if (!s)
		return;
	if (s->reg && s->proc_slot >= 0)
		process_registry__remove_process_slot(s->reg, s->proc_slot);
	if (s->reg && s->bin_slot >= 0)
		process_registry__remove_binary_slot(s->reg, s->bin_slot);
	if (s->own_reg)
		process_registry__free(s->reg);
	kallsyms__free(s->kallsyms);
	elf_symbols__free(s->vdso);
	demangle_cache__free(s->demangled);
	free(s);
}

struct process_registry *symbolizer__registry(struct symbolizer *s)
{
	return s->reg;
}

void symbolizer__end_window(struct symbolizer *s)
{
	trim_symbols(s);
	demangle_cache__end_window(s->demangled);
	s->window++;
}

void symbolizer__stats(const struct symbolizer *s, struct symbolizer_stats *ret)
{
	struct process_registry_stats rs;

	process_registry__stats(s->reg, &rs);
	*ret = s->stats;
	demangle_cache__stats(s->demangled, &ret->demangled);
	ret->processes_captured = rs.processes_captured;
	ret->processes_evicted = rs.processes_evicted;
	ret->processes_forgotten = rs.processes_forgotten;
	ret->processes_cached = rs.processes_cached;
	ret->images_replaced = rs.images_replaced;
	ret->recaptures = rs.recaptures;
	ret->binaries_opened = rs.binaries.opened;
	ret->binary_cache_hits = rs.binaries.cache_hits;
	ret->binaries_evicted = rs.binaries.evicted;
}

const char *symbolizer__reason_name(enum sym_unknown_reason reason)
{
	static const char *const names[SYM_UNKNOWN__COUNT] = {
	    [SYM_UNKNOWN_NO_MAPPING] = "no_mapping",
	    [SYM_UNKNOWN_UNREADABLE] = "unreadable",
	    [SYM_UNKNOWN_NO_SYMBOL] = "no_symbol",
	    [SYM_UNKNOWN_KERNEL] = "kernel",
	    [SYM_UNKNOWN_DEBUGINFOD_WAITING] = "debuginfod_waiting",
	    [SYM_UNKNOWN_DEBUGINFOD_FAILED] = "debuginfod_failed",
	    [SYM_UNKNOWN_JIT] = "jit_no_perf_map",
	};

	return (unsigned)reason < SYM_UNKNOWN__COUNT ? names[reason] : "invalid";
}
