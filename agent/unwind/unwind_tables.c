// SPDX-License-Identifier: Apache-2.0
/* Table cache and loader: the registry's binaries -> compiled tables (cfi_compile.c) -> rows
 * in the sink, first-fit allocation of row ranges, least-recently-sampled eviction; the
 * registry's processes -> sorted mapping tables with the bias that turns a pc into its
 * table's pc. */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "unwind/cfi_compile.h"
#include "hashtab.h"
#include "process/process_registry.h"
#include "unwind/row_index.h"
#include "unwind/table_builder.h"
#include "unwind/unwind_tables.h"

#define KEY_MAX BINARY_KEY_MAX
#define SLOT_BITS 12 /* table id = generation << SLOT_BITS | slot; UNWIND_MAX_TABLES slots */
#define VDSO_KEY "vdso"
#define REFRESH_NS (10 * 1000000000ULL)	   /* a sampled process's maps, re-read after */
#define RETRY_MIN_NS (10 * 1000000000ULL)  /* a table that did not fit, tried again after */
#define RETRY_MAX_NS (600 * 1000000000ULL) /* ... doubling up to this */
/* A table from more CFI than this (python3 has 411 KB, node 2.7 MB) is not compiled on the
 * caller's thread: it takes 100 ms to seconds, and the agent's poll loop (announcements,
 * captures of short-lived processes, windows) must not wait for it. The builder thread
 * compiles it into free rows (table_builder.c); its code is walked by frame pointers until
 * unwind_tables__publish_built() publishes it. */
#define BACKGROUND_CFI_BYTES (512u << 10)
#define BIG_TABLE_ROWS (64u << 10)	    /* loads only into free rows (load_begin) */
#define BUILDER_BUSY_RETRY_NS 1000000000ULL /* builder queue full: submitted again after */

_Static_assert(UNWIND_MAX_TABLES == 1u << SLOT_BITS, "table id layout");

/* One binary's table. Slot 0 is never used: id 0 is UNWIND_NO_TABLE. */
struct table_entry {
	char key[KEY_MAX]; /* the binary's key (binary.h), VDSO_KEY; "" = free slot */
	uint32_t id;
	uint32_t generation;
	bool loaded;
	bool no_table; /* no CFI or unreadable: remembered so it is not retried per process */
	bool building; /* a big table queued for, or compiling in, the builder thread */
	uint64_t retry_ns, retry_wait_ns; /* did not fit the rows map: not before retry_ns */
	uint32_t first_row, n_rows;
	uint32_t span;	    /* rows map rows taken: the rows (to a pair) and the index after them */
	uint64_t loaded_ns; /* processes captured before this get its mapping published again */
	uint64_t last_used;
	uint64_t vaddr_base;
	struct cfi_segment segs[CFI_MAX_SEGMENTS];
	size_t n_segs;
};

struct proc_rec {
	pid_t pid;	      /* 0 = free */
	uint64_t captured_ns; /* published then: again when the registry re-read the maps */
	uint16_t n;
	uint16_t slots[UNWIND_MAX_MAPPINGS]; /* table slot of each mapping, 0 = none */
};

struct extent {
	uint32_t start, len;
};

struct unwind_tables {
	struct unwind_sink sink;
	struct process_registry *reg;
	struct table_entry **entries; /* UNWIND_MAX_TABLES slots, each allocated on first use */
	struct hashtab by_key;	      /* hash(key) -> slot (0: none) */
	struct proc_rec *procs;	      /* UNWIND_MAX_PROCESSES */
	struct hashtab proc_of_pid;   /* pid -> index + 1 (0: none) */
	size_t n_procs;
	pthread_mutex_t rows_lock; /* free_rows: the builder thread reserves rows too */
	struct extent *free_rows;  /* sorted by start, merged */
	size_t n_free, free_cap;
	struct table_builder *builder; /* NULL: big tables are built inline */
	uint64_t tick;
	struct unwind_tables_stats stats;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* --- row ranges ------------------------------------------------------------------------ */

static int extent_alloc(struct unwind_tables *ut, uint32_t n, uint32_t *ret_start)
{
	for (size_t i = 0; i < ut->n_free; i++) {
		struct extent *e = &ut->free_rows[i];

		if (e->len < n)
			continue;
		*ret_start = e->start;
		e->start += n;
		e->len -= n;
		if (!e->len) {
			memmove(e, e + 1, (ut->n_free - i - 1) * sizeof(*e));
			ut->n_free--;
		}
		return 0;
	}
	return -ENOSPC;
}

static int extent_free(struct unwind_tables *ut, uint32_t start, uint32_t len)
{
	size_t i = 0;

	while (i < ut->n_free && ut->free_rows[i].start < start)
		i++;
	if (i && ut->free_rows[i - 1].start + ut->free_rows[i - 1].len == start) {
		ut->free_rows[i - 1].len += len;
		if (i < ut->n_free && start + len == ut->free_rows[i].start) {
			ut->free_rows[i - 1].len += ut->free_rows[i].len;
			memmove(&ut->free_rows[i], &ut->free_rows[i + 1],
				(ut->n_free - i - 1) * sizeof(struct extent));
			ut->n_free--;
		}
		return 0;
	}
	if (i < ut->n_free && start + len == ut->free_rows[i].start) {
		ut->free_rows[i].start = start;
		ut->free_rows[i].len += len;
		return 0;
	}
	if (ut->n_free == ut->free_cap) {
		size_t cap = ut->free_cap ? 2 * ut->free_cap : 64;
		struct extent *tmp = realloc(ut->free_rows, cap * sizeof(*tmp));

		if (!tmp)
			return -ENOMEM;
		ut->free_rows = tmp;
		ut->free_cap = cap;
	}
	memmove(&ut->free_rows[i + 1], &ut->free_rows[i], (ut->n_free - i) * sizeof(struct extent));
	ut->free_rows[i] = (struct extent){start, len};
	ut->n_free++;
	return 0;
}

static int rows_alloc(struct unwind_tables *ut, uint32_t n, uint32_t *ret_start)
{
	int ret;

	pthread_mutex_lock(&ut->rows_lock);
	ret = extent_alloc(ut, n, ret_start);
	pthread_mutex_unlock(&ut->rows_lock);
	return ret;
}

static void rows_free(struct unwind_tables *ut, uint32_t start, uint32_t len)
{
	pthread_mutex_lock(&ut->rows_lock);
	extent_free(ut, start, len);
	pthread_mutex_unlock(&ut->rows_lock);
}

/* --- tables ------------------------------------------------------------------------------ */

static void unload(struct unwind_tables *ut, struct table_entry *e)
{
	struct unwind_table_info info = {.id = e->id};

	if (!e->loaded)
		return;
	ut->sink.set_table(ut->sink.ctx, &info); /* unpublished first ... */
	ut->sink.sync(ut->sink.ctx);		 /* ... then no walk reads the rows any more */
	rows_free(ut, e->first_row, e->span);
	e->loaded = false;
	ut->stats.tables_loaded--;
	ut->stats.rows_loaded -= e->span;
}

/* Unloads the least recently sampled loaded table not used since tick. false: none. */
static bool evict_one(struct unwind_tables *ut, uint64_t keep_tick)
{
	struct table_entry *victim = NULL;

	for (size_t i = 1; i < UNWIND_MAX_TABLES; i++) {
		struct table_entry *e = ut->entries[i];

		if (e && e->loaded && e->last_used < keep_tick &&
		    (!victim || e->last_used < victim->last_used))
			victim = e;
	}
	if (!victim)
		return false;
	unload(ut, victim);
	ut->stats.tables_evicted++;
	return true;
}

/* Streams a table being compiled into its range of the rows map. */
struct table_load {
	struct unwind_tables *ut;
	struct table_entry *e;
	uint32_t start, span;
	bool reserved;
	struct row_index ri;		/* the rows' pcs, for the index */
	struct unwind_table_info index; /* its fields (n_buckets, index_row, base_pc, shift) */
};

/* The compiled size is known: reserve a range, evicting the least recently sampled tables.
 * A table over half the map would evict everything else: frame pointers for it (-E2BIG). */
static int load_begin(void *ctx, const struct cfi_table *t)
{
	struct table_load *l = ctx;
	struct unwind_tables *ut = l->ut;

	if (t->n_rows > ut->sink.capacity / 2)
		return -E2BIG;
	if (row_index__begin_table(&l->ri, t))
		return -ENOMEM;
	/* ranges start on a row pair; the index follows the rows */
	l->span = ((t->n_rows + 1) & ~1u) + l->ri.budget;
	/* A big table takes free rows only: it never evicts others (their processes would
	 * rebuild them, and a host running several big binaries would rebuild tables without
	 * end); a small table evicts the least recently sampled, big ones included. */
	while (rows_alloc(ut, l->span, &l->start))
		if (t->n_rows > BIG_TABLE_ROWS || !evict_one(ut, ut->tick))
			return -ENOSPC;
	l->reserved = true;
	return 0;
}

static int load_write(void *ctx, size_t first, const struct unwind_row *rows, size_t n)
{
	struct table_load *l = ctx;

	row_index__add(&l->ri, rows, n);
	return l->ut->sink.write_rows(l->ut->sink.ctx, l->start + (uint32_t)first, rows, n);
}

static int sink_write(void *ctx, uint32_t first, const struct unwind_row *rows, size_t n)
{
	struct unwind_tables *ut = ctx;

	return ut->sink.write_rows(ut->sink.ctx, first, rows, n);
}

/* Publishes a table whose rows and index are all in [first, first + span) (or gives the
 * range back after a failure). */
static int publish(struct unwind_tables *ut, struct table_entry *e, const struct table_load *l,
		   const struct cfi_table *t, int ret)
{
	uint32_t first = l->start, span = l->span;
	struct unwind_table_info info = l->index;

	info.id = e->id;
	info.first_row = first;
	info.n_rows = (uint32_t)t->n_rows;
	info.pad = 0;

	if (!ret)
		ret = ut->sink.set_table(ut->sink.ctx, &info);
	if (ret) {
		rows_free(ut, first, span);
		return ret;
	}
	e->first_row = first;
	e->n_rows = t->n_rows;
	e->span = span;
	e->loaded = true;
	e->loaded_ns = now_ns();
	ut->stats.tables_loaded++;
	ut->stats.rows_loaded += span; /* the map's rows it takes: its index's too */
	return 0;
}

/* Frees a whole slot (the key is forgotten) for reuse under a new generation. */
static void drop_entry(struct unwind_tables *ut, size_t slot)
{
	struct table_entry *e = ut->entries[slot];

	unload(ut, e);
	e->building = false; /* a build in flight finds another id and gives its rows back */
	hashtab__put(&ut->by_key, hash_string(e->key), 0);
	e->key[0] = '\0';
	e->generation++;
}

static size_t free_slot(struct unwind_tables *ut)
{
	size_t lru = 0;

	for (size_t i = 1; i < UNWIND_MAX_TABLES; i++) {
		if (!ut->entries[i]) {
			ut->entries[i] = calloc(1, sizeof(*ut->entries[i]));
			return ut->entries[i] ? i : 0;
		}
		if (!ut->entries[i]->key[0])
			return i;
		if (ut->entries[i]->last_used < ut->tick &&
		    (!lru || ut->entries[i]->last_used < ut->entries[lru]->last_used))
			lru = i;
	}
	if (lru)
		drop_entry(ut, lru);
	return lru;
}

static struct table_entry *new_entry(struct unwind_tables *ut, const char *key)
{
	size_t slot = free_slot(ut);
	struct table_entry *e;

	if (!slot)
		return NULL;
	e = ut->entries[slot];
	snprintf(e->key, sizeof(e->key), "%s", key);
	e->id = (e->generation << SLOT_BITS | slot) & 0x7fffffff;
	if (!e->id || e->id % UNWIND_MAX_TABLES != slot)
		e->id = slot;
	e->loaded = e->no_table = e->building = false;
	e->retry_ns = e->retry_wait_ns = 0;
	e->n_rows = 0;
	e->n_segs = 0;
	e->last_used = ut->tick;
	hashtab__put(&ut->by_key, hash_string(key), slot);
	return e;
}

static struct table_entry *find_key(struct unwind_tables *ut, const char *key)
{
	uint64_t slot;

	if (!hashtab__get(&ut->by_key, hash_string(key), &slot) || !slot)
		return NULL;
	return ut->entries[slot] && !strcmp(ut->entries[slot]->key, key) ? ut->entries[slot] : NULL;
}

/* Counts a binary left without a table, by cfi_compile's errno. */
static void count_no_table(struct unwind_tables_stats *stats, int err)
{
	switch (err) {
	case ENOENT:
		stats->no_table++;
		break;
	case EINVAL:
		stats->build_corrupt++;
		break;
	case E2BIG:
		stats->build_too_big++;
		break;
	default: /* ENOEXEC, EIO, ENOMEM */
		stats->build_unreadable++;
	}
}

static void build_counted(struct unwind_tables *ut, const struct cfi_table *t, uint64_t ns)
{
	ut->stats.tables_built++;
	ut->stats.build_ns += ns;
	if (ns > ut->stats.build_max_ns)
		ut->stats.build_max_ns = ns;
	for (int i = 0; i < UNWIND_CANNOT__COUNT; i++)
		ut->stats.cannot_rows[i] += t->cannot[i];
}

/* The map had no room for it (every loaded table in use now): back off before retrying. */
static void retry_later(struct unwind_tables *ut, struct table_entry *e)
{
	e->retry_wait_ns = e->retry_wait_ns ? 2 * e->retry_wait_ns : RETRY_MIN_NS;
	if (e->retry_wait_ns > RETRY_MAX_NS)
		e->retry_wait_ns = RETRY_MAX_NS;
	e->retry_ns = now_ns() + e->retry_wait_ns;
	ut->stats.load_failed++;
}

/* What a compile left (rows reserved or not, its result): e's table loaded, or e remembered
 * as a binary without a table, or tried again later. */
static void build_done(struct unwind_tables *ut, struct table_entry *e, const struct table_load *l,
		       const struct cfi_table *t, int ret, uint64_t ns)
{
	if (l->reserved)
		ret = publish(ut, e, l, t, ret);
	if (!l->reserved && ret && ret != -ENOSPC) { /* no table: frame pointers for it */
		e->no_table = true;
		count_no_table(&ut->stats, -ret);
		return;
	}
	build_counted(ut, t, ns);
	e->vaddr_base = t->vaddr_base;
	memcpy(e->segs, t->segs, sizeof(e->segs));
	e->n_segs = t->n_segs;
	if (ret)
		retry_later(ut, e);
	else
		e->retry_wait_ns = 0;
}

/* Compiles (fd >= 0: a file; else the vDSO) straight into the rows map, as e's table. */
static void build(struct unwind_tables *ut, struct table_entry *e, int fd)
{
	struct table_load l = {.ut = ut, .e = e};
	struct cfi_row_sink sink = {.ctx = &l, .begin = load_begin, .write = load_write};
	struct cfi_table t = {0};
	uint64_t t0 = now_ns();
	int ret = fd >= 0 ? cfi_compile_fd_to(fd, &t, &sink) : cfi_compile_own_vdso_to(&t, &sink);

	if (!ret && l.reserved)
		ret = row_index__write(&l.ri, l.start + (((uint32_t)t.n_rows + 1) & ~1u), &l.index,
				       sink_write, ut);
	row_index__free(&l.ri);
	build_done(ut, e, &l, &t, ret, now_ns() - t0);
	malloc_trim(0); /* a big table's compile memory goes back to the system now */
	if (ut->sink.between_builds)
		ut->sink.between_builds(ut->sink.ctx);
}

/* --- big tables: the builder thread -------------------------------------------------------- */

static int builder_reserve(void *ctx, uint32_t n, uint32_t *ret_first)
{
	return rows_alloc(ctx, n, ret_first); /* free rows only: big tables never evict */
}

static int builder_write_rows(void *ctx, uint32_t first, const struct unwind_row *rows, size_t n)
{
	struct unwind_tables *ut = ctx;

	return ut->sink.write_rows(ut->sink.ctx, first, rows, n);
}

/* A big table goes to the builder thread (see BACKGROUND_CFI_BYTES). false: build it here. */
static bool build_in_background(struct unwind_tables *ut, struct table_entry *e, int fd)
{
	int dup_fd;

	if (!ut->builder || cfi_bytes_fd(fd) <= BACKGROUND_CFI_BYTES)
		return false;
	dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dup_fd < 0)
		return false;
	if (table_builder__submit(ut->builder, e->id, dup_fd)) { /* full: a later touch */
		close(dup_fd);
		e->retry_ns = now_ns() + BUILDER_BUSY_RETRY_NS;
		return true;
	}
	e->building = true;
	return true;
}

/* One finished background build: published as its entry's table, unless the entry went to
 * another binary meanwhile (its rows go back then). true: a table was published. */
static bool finish_background_build(struct unwind_tables *ut, const struct table_build *b)
{
	struct table_entry *e = ut->entries[b->id % UNWIND_MAX_TABLES];
	struct table_load l = {.ut = ut,
			       .e = e,
			       .start = b->first_row,
			       .span = b->span,
			       .reserved = b->reserved,
			       .index = b->index};

	if (!e || e->id != b->id || !e->building) {
		if (b->reserved)
			rows_free(ut, b->first_row, b->span);
		return false;
	}
	e->building = false;
	build_done(ut, e, &l, &b->info, b->ret, b->build_ns);
	return e->loaded;
}

bool unwind_tables__builds_in_flight(struct unwind_tables *ut)
{
	return ut->builder && table_builder__in_flight(ut->builder) > 0;
}

int unwind_tables__publish_built(struct unwind_tables *ut)
{
	struct table_build done[4];
	int published = 0;
	size_t n;

	if (!ut->builder)
		return 0;
	while ((n = table_builder__take_done(ut->builder, done, 4)))
		for (size_t i = 0; i < n; i++)
			published += finish_background_build(ut, &done[i]);
	return published;
}

bool unwind_tables__wait_built(struct unwind_tables *ut, int timeout_ms)
{
	bool idle = !ut->builder || table_builder__wait_idle(ut->builder, timeout_ms);

	unwind_tables__publish_built(ut);
	return idle;
}

/* The table of a binary, built when new, loaded again when it was evicted. */
static struct table_entry *file_table(struct unwind_tables *ut, const struct binary *bin)
{
	struct table_entry *e = find_key(ut, bin->key);

	if (!e && !(e = new_entry(ut, bin->key)))
		return NULL;
	e->last_used = ut->tick;
	if (!e->loaded && !e->no_table && !e->building && now_ns() >= e->retry_ns &&
	    !build_in_background(ut, e, bin->fd))
		build(ut, e, bin->fd);
	return e;
}

static struct table_entry *vdso_table(struct unwind_tables *ut)
{
	struct table_entry *e = find_key(ut, VDSO_KEY);

	if (!e && !(e = new_entry(ut, VDSO_KEY)))
		return NULL;
	e->last_used = ut->tick;
	if (!e->loaded && !e->no_table)
		build(ut, e, -1);
	return e;
}

/* --- processes --------------------------------------------------------------------------- */

struct capture {
	struct unwind_process proc;
	struct proc_rec rec;
};

/* table pc = pc - bias: through the PT_LOAD segment holding the mapping's file offset. */
static bool mapping_bias(const struct table_entry *e, const struct process_mapping *m,
			 uint64_t *ret_bias)
{
	for (size_t i = 0; i < e->n_segs; i++) {
		const struct cfi_segment *s = &e->segs[i];
		uint64_t page_start = s->offset & ~4095ULL;

		if (m->offset >= page_start && m->offset < s->offset + s->filesz) {
			*ret_bias = m->start - m->offset + s->offset - s->vaddr + e->vaddr_base;
			return true;
		}
	}
	return false;
}

static void add_mapping(struct unwind_tables *ut, struct capture *c,
			const struct process_mapping *m)
{
	struct unwind_mapping *um;
	struct table_entry *e = NULL;
	uint64_t bias = 0;

	if (c->proc.n_mappings >= UNWIND_MAX_MAPPINGS) {
		ut->stats.mappings_dropped++;
		return;
	}
	if (m->kind == PROCESS_MAPPING_VDSO)
		e = vdso_table(ut);
	else if (m->kind == PROCESS_MAPPING_FILE)
		e = file_table(ut, m->bin);
	um = &c->proc.mappings[c->proc.n_mappings];
	*um = (struct unwind_mapping){.start = m->start, .end = m->end};
	if (e && !e->no_table) /* remembered even when not loaded: touch loads it again */
		c->rec.slots[c->proc.n_mappings] = e->id % UNWIND_MAX_TABLES;
	if (e && e->loaded && mapping_bias(e, m, &bias)) {
		um->table_id = e->id;
		um->bias = bias;
	}
	c->proc.n_mappings++; /* without a table (JIT, unreadable): frame-pointer steps */
}

static struct proc_rec *find_proc(struct unwind_tables *ut, pid_t pid)
{
	uint64_t v;

	if (!hashtab__get(&ut->proc_of_pid, (uint64_t)pid, &v) || !v)
		return NULL;
	return &ut->procs[v - 1];
}

static struct proc_rec *new_proc(struct unwind_tables *ut, pid_t pid)
{
	for (size_t i = 0; i < UNWIND_MAX_PROCESSES; i++) {
		if (ut->procs[i].pid)
			continue;
		if (hashtab__put(&ut->proc_of_pid, (uint64_t)pid, i + 1))
			return NULL;
		ut->procs[i].pid = pid;
		ut->stats.processes++;
		return &ut->procs[i];
	}
	return NULL;
}

/* p's mappings as they are now but "[vsyscall]" (no code of its own to unwind), each binary
 * held: a table build polls the sampler in between (sink.between_builds), and what that
 * captures may re-read or evict p in the registry. NULL + *ret_n 0: out of memory. */
static struct process_mapping *snapshot_mappings(const struct process *p, size_t *ret_n)
{
	struct process_mapping *maps = calloc(p->n_mappings ? p->n_mappings : 1, sizeof(*maps));

	*ret_n = 0;
	for (size_t i = 0; maps && i < p->n_mappings; i++) {
		if (!strcmp(p->mappings[i].path, "[vsyscall]"))
			continue;
		maps[*ret_n] = p->mappings[i];
		maps[*ret_n].path = NULL; /* p's: not ours to read after a build */
		if (maps[*ret_n].bin)
			binary__ref(maps[*ret_n].bin);
		(*ret_n)++;
	}
	return maps;
}

static void release_mappings(struct process_mapping *maps, size_t n)
{
	for (size_t i = 0; i < n; i++)
		binary__unref(maps[i].bin);
	free(maps);
}

/* Builds (or finds) the table of each of p's mappings and publishes its mapping table. */
static int publish_process(struct unwind_tables *ut, const struct process *p)
{
	struct capture *c = calloc(1, sizeof(*c));
	pid_t pid = p->pid;
	size_t n;
	struct process_mapping *maps = snapshot_mappings(p, &n);
	struct proc_rec *rec;
	int ret;

	if (!c || !maps) {
		free(c);
		free(maps);
		return -ENOMEM;
	}
	ut->tick++;
	for (size_t i = 0; i < n; i++)
		add_mapping(ut, c, &maps[i]);
	release_mappings(maps, n);
	rec = find_proc(ut, pid);
	if (!rec)
		rec = new_proc(ut, pid);
	ret = rec ? ut->sink.set_process(ut->sink.ctx, pid, &c->proc) : -ENOSPC;
	if (!ret) {
		memcpy(rec->slots, c->rec.slots, sizeof(rec->slots));
		rec->n = c->proc.n_mappings;
		rec->captured_ns = now_ns();
	}
	free(c);
	return ret;
}

/* pid's current record in the registry, captured now on first sight. */
static int registry_process(struct unwind_tables *ut, pid_t pid, struct process **ret)
{
	int err = 0;

	*ret = process_registry__peek(ut->reg, pid);
	if (!*ret) {
		err = process_registry__capture(ut->reg, pid);
		*ret = process_registry__peek(ut->reg, pid);
	}
	if (!err && (!*ret || (*ret)->gone))
		err = -ESRCH;
	return err;
}

int unwind_tables__capture_process(struct unwind_tables *ut, pid_t pid)
{
	struct process *p = process_registry__peek(ut->reg, pid);
	int ret;

	/* Its maps as they are now: a process announced at its exec had mapped only its
	 * executable and the dynamic loader then, not its libraries. */
	if (p && !p->gone)
		ret = process_registry__refresh(ut->reg, p);
	else
		ret = registry_process(ut, pid, &p);
	return ret ? ret : publish_process(ut, p);
}

bool unwind_tables__ready(struct unwind_tables *ut, pid_t pid)
{
	const struct process *p = process_registry__peek(ut->reg, pid);

	if (!p || p->gone)
		return false;
	for (size_t i = 0; i < p->n_mappings; i++) {
		const struct process_mapping *m = &p->mappings[i];
		const struct table_entry *e;

		if (m->kind != PROCESS_MAPPING_FILE || !m->bin)
			continue;
		e = find_key(ut, m->bin->key);
		if (!e || (!e->loaded && !e->no_table && !e->building))
			return false; /* a table to build (or load again) first */
	}
	return true;
}

void unwind_tables__forget_process(struct unwind_tables *ut, pid_t pid)
{
	struct proc_rec *rec = find_proc(ut, pid);

	ut->sink.forget_process(ut->sink.ctx, pid);
	if (!rec)
		return;
	hashtab__put(&ut->proc_of_pid, (uint64_t)pid, 0);
	memset(rec, 0, sizeof(*rec));
	ut->stats.processes--;
}

void unwind_tables__touch_process(struct unwind_tables *ut, pid_t pid)
{
	struct proc_rec *rec = find_proc(ut, pid);
	struct process *p;
	bool reload = false;
	uint64_t now = now_ns();

	if (!rec || registry_process(ut, pid, &p))
		return;
	ut->tick++;
	for (size_t i = 0; i < rec->n && i < UNWIND_MAX_MAPPINGS; i++) {
		struct table_entry *e = rec->slots[i] ? ut->entries[rec->slots[i]] : NULL;

		if (!e)
			continue;
		e->last_used = ut->tick;
		reload |= !e->loaded && !e->no_table && !e->building;
		reload |=
		    e->loaded && e->loaded_ns > rec->captured_ns; /* built after its capture */
	}
	/* The registry re-read its maps since (a symbolizer miss): publish what it read. */
	reload |= p->captured_ns > rec->captured_ns;
	/* Some of its tables were evicted (load them again, same ids), or built since; or it may
	 * have mapped new code (dlopen, JIT regions) whose pcs would end its stacks
	 * ("no_mapping"): its maps as they are now, unless the registry just read them. */
	if (!reload && now - rec->captured_ns < REFRESH_NS)
		return;
	if (p->captured_ns <= rec->captured_ns)
		process_registry__refresh(ut->reg, p);
	publish_process(ut, p);
}

void unwind_tables__stats(const struct unwind_tables *ut, struct unwind_tables_stats *ret)
{
	*ret = ut->stats;
	ret->rows_capacity = ut->sink.capacity;
	ret->tables_building = 0;
	for (size_t i = 1; i < UNWIND_MAX_TABLES; i++)
		ret->tables_building += ut->entries[i] && ut->entries[i]->building;
}

/* The builder thread: big tables off the caller's thread. Without it (no thread could be
 * started), they are built inline, as small ones are. */
static void start_builder(struct unwind_tables *ut)
{
	struct table_builder_ops ops = {
	    .ctx = ut,
	    .reserve = builder_reserve,
	    .write_rows = builder_write_rows,
	    .capacity = ut->sink.capacity,
	};

	ut->builder = table_builder__new(&ops);
}

struct unwind_tables *unwind_tables__new(const struct unwind_sink *sink,
					 struct process_registry *reg)
{
	struct unwind_tables *ut = calloc(1, sizeof(*ut));

	if (!ut)
		return NULL;
	ut->sink = *sink;
	pthread_mutex_init(&ut->rows_lock, NULL);
	ut->reg = reg;
	ut->entries = calloc(UNWIND_MAX_TABLES, sizeof(*ut->entries));
	ut->procs = calloc(UNWIND_MAX_PROCESSES, sizeof(*ut->procs));
	if (!ut->entries || !ut->procs ||
	    (sink->capacity && extent_free(ut, 0, (uint32_t)sink->capacity & ~1u))) {
		unwind_tables__free(ut);
		errno = ENOMEM;
		return NULL;
	}
	start_builder(ut);
	return ut;
}

void unwind_tables__free(struct unwind_tables *ut)
{
	if (!ut)
		return;
	table_builder__free(ut->builder); /* first: its thread reserves rows through ut */
	hashtab__free(&ut->by_key);
	hashtab__free(&ut->proc_of_pid);
	for (size_t i = 0; ut->entries && i < UNWIND_MAX_TABLES; i++)
		free(ut->entries[i]);
	free(ut->entries);
	free(ut->procs);
	free(ut->free_rows);
	pthread_mutex_destroy(&ut->rows_lock);
	free(ut);
}
