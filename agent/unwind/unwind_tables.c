// SPDX-License-Identifier: Apache-2.0
/* Table cache and loader: binaries -> compiled tables (cfi_compile.c) -> rows in the sink,
 * first-fit allocation of row ranges, least-recently-sampled eviction; processes -> sorted
 * mapping tables with the bias that turns a pc into its table's pc. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../procmaps.h"
#include "hashtab.h"
#include "cfi_compile.h"
#include "unwind_tables.h"

#define KEY_MAX 96
#define SLOT_BITS 12 /* table id = generation << SLOT_BITS | slot; UNWIND_MAX_TABLES slots */
#define VDSO_KEY "vdso"
#define REFRESH_NS (10 * 1000000000ULL)	   /* a sampled process's maps, re-read after */
#define RETRY_MIN_NS (10 * 1000000000ULL)  /* a table that did not fit, tried again after */
#define RETRY_MAX_NS (600 * 1000000000ULL) /* ... doubling up to this */
/* A table from more CFI than this (python3 has 411 KB, node 2.7 MB) is not compiled while
 * processes wait to be captured: it takes 100 ms to seconds, and a short-lived process queued
 * behind it would be walked with frame pointers for all of its life. It is built when the
 * capture queue is empty (unwind_tables__build_deferred), its code walked by frame pointers
 * until then. */
#define DEFER_CFI_BYTES (512u << 10)
#define UNWIND_MAX_DEFERRED 32	   /* waiting at once; past it, built at once */
#define BIG_TABLE_ROWS (64u << 10) /* loads only into free rows (load_begin) */

_Static_assert(UNWIND_MAX_TABLES == 1u << SLOT_BITS, "table id layout");

/* One binary's table. Slot 0 is never used: id 0 is UNWIND_NO_TABLE. */
struct table_entry {
	char key[KEY_MAX]; /* "" = free slot */
	uint32_t id;
	uint32_t generation;
	bool loaded;
	bool no_table;	 /* no CFI or unreadable: remembered so it is not retried per process */
	bool deferred;	 /* a big table waiting for unwind_tables__build_deferred() ... */
	int deferred_fd; /* ... compiled from this file then */
	uint64_t retry_ns, retry_wait_ns; /* did not fit the rows map: not before retry_ns */
	uint32_t first_row, n_rows;
	uint64_t loaded_ns; /* processes captured before this get its mapping published again */
	uint64_t last_used;
	uint64_t vaddr_base;
	struct cfi_segment segs[CFI_MAX_SEGMENTS];
	size_t n_segs;
};

struct proc_rec {
	pid_t pid;	      /* 0 = free */
	uint64_t captured_ns; /* maps read then: re-read while sampled (dlopen, JIT regions) */
	uint16_t n;
	uint16_t slots[UNWIND_MAX_MAPPINGS]; /* table slot of each mapping, 0 = none */
};

struct extent {
	uint32_t start, len;
};

struct unwind_tables {
	struct unwind_sink sink;
	char proc_root[256];
	struct table_entry **entries; /* UNWIND_MAX_TABLES slots, each allocated on first use */
	struct hashtab by_key;	      /* hash(key) -> slot (0: none) */
	struct hashtab by_inode;      /* hash(dev, inode, size, mtime) -> table id (0: none) */
	struct proc_rec *procs;	      /* UNWIND_MAX_PROCESSES */
	struct hashtab proc_of_pid;   /* pid -> index + 1 (0: none) */
	size_t n_procs;
	struct extent *free_rows; /* sorted by start, merged */
	size_t n_free, free_cap;
	uint64_t tick;
	uint32_t deferred[UNWIND_MAX_DEFERRED]; /* ids of big tables waiting, oldest first */
	size_t n_deferred;
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

/* --- tables ------------------------------------------------------------------------------ */

static void unload(struct unwind_tables *ut, struct table_entry *e)
{
	struct unwind_table_info info = {.id = e->id};

	if (!e->loaded)
		return;
	ut->sink.set_table(ut->sink.ctx, &info); /* unpublished first ... */
	ut->sink.sync(ut->sink.ctx);		 /* ... then no walk reads the rows any more */
	extent_free(ut, e->first_row, (e->n_rows + 1) & ~1u);
	e->loaded = false;
	ut->stats.tables_loaded--;
	ut->stats.rows_loaded -= e->n_rows;
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
};

/* The compiled size is known: reserve a range, evicting the least recently sampled tables.
 * A table over half the map would evict everything else: frame pointers for it (-E2BIG). */
static int load_begin(void *ctx, const struct cfi_table *t)
{
	struct table_load *l = ctx;
	struct unwind_tables *ut = l->ut;

	if (t->n_rows > ut->sink.capacity / 2)
		return -E2BIG;
	l->span = (t->n_rows + 1) & ~1u; /* ranges start on a row pair */
	/* A big table takes free rows only: it never evicts others (their processes would
	 * rebuild them, and a host running several big binaries would rebuild tables without
	 * end); a small table evicts the least recently sampled, big ones included. */
	while (extent_alloc(ut, l->span, &l->start))
		if (t->n_rows > BIG_TABLE_ROWS || !evict_one(ut, ut->tick))
			return -ENOSPC;
	l->reserved = true;
	return 0;
}

static int load_write(void *ctx, size_t first, const struct unwind_row *rows, size_t n)
{
	struct table_load *l = ctx;

	return l->ut->sink.write_rows(l->ut->sink.ctx, l->start + (uint32_t)first, rows, n);
}

/* Publishes a table whose rows are all in (or gives its range back after a failure). */
static int load_end(struct table_load *l, const struct cfi_table *t, int ret)
{
	struct unwind_tables *ut = l->ut;
	struct table_entry *e = l->e;
	struct unwind_table_info info = {.id = e->id, .first_row = l->start, .n_rows = t->n_rows};

	if (!l->reserved)
		return ret;
	if (!ret)
		ret = ut->sink.set_table(ut->sink.ctx, &info);
	if (ret) {
		extent_free(ut, l->start, l->span);
		return ret;
	}
	e->first_row = l->start;
	e->n_rows = t->n_rows;
	e->loaded = true;
	e->loaded_ns = now_ns();
	ut->stats.tables_loaded++;
	ut->stats.rows_loaded += t->n_rows;
	return 0;
}

/* Frees a whole slot (the key is forgotten) for reuse under a new generation. */
static void drop_entry(struct unwind_tables *ut, size_t slot)
{
	struct table_entry *e = ut->entries[slot];

	unload(ut, e);
	if (e->deferred) /* its id in the deferred list is stale now */
		close(e->deferred_fd);
	e->deferred = false;
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
	e->loaded = e->no_table = false;
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

/* Compiles (fd >= 0: a file; else the vDSO) straight into the rows map, as e's table. */
static void build(struct unwind_tables *ut, struct table_entry *e, int fd)
{
	struct table_load l = {.ut = ut, .e = e};
	struct cfi_row_sink sink = {.ctx = &l, .begin = load_begin, .write = load_write};
	struct cfi_table t = {0};
	uint64_t t0 = now_ns();
	int ret = fd >= 0 ? cfi_compile_fd_to(fd, &t, &sink) : cfi_compile_own_vdso_to(&t, &sink);

	ret = load_end(&l, &t, ret);
	if (!l.reserved && ret && ret != -ENOSPC) { /* no table: frame pointers for it */
		e->no_table = true;
		count_no_table(&ut->stats, -ret);
	} else {
		build_counted(ut, &t, now_ns() - t0);
		e->vaddr_base = t.vaddr_base;
		memcpy(e->segs, t.segs, sizeof(e->segs));
		e->n_segs = t.n_segs;
		if (ret)
			retry_later(ut, e);
		else
			e->retry_wait_ns = 0;
	}
	malloc_trim(0); /* a big table's compile memory goes back to the system now */
	if (ut->sink.between_builds)
		ut->sink.between_builds(ut->sink.ctx);
}

/* A big table waits for the capture queue to empty (see DEFER_CFI_BYTES). */
static bool defer_build(struct unwind_tables *ut, struct table_entry *e, int fd)
{
	int dup_fd;

	if (ut->n_deferred == UNWIND_MAX_DEFERRED || cfi_bytes_fd(fd) <= DEFER_CFI_BYTES)
		return false;
	dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dup_fd < 0)
		return false;
	e->deferred = true;
	e->deferred_fd = dup_fd;
	ut->deferred[ut->n_deferred++] = e->id;
	return true;
}

int unwind_tables__build_deferred(struct unwind_tables *ut)
{
	while (ut->n_deferred) {
		uint32_t id = ut->deferred[0];
		struct table_entry *e = ut->entries[id % UNWIND_MAX_TABLES];
		int fd;

		memmove(ut->deferred, ut->deferred + 1, --ut->n_deferred * sizeof(*ut->deferred));
		if (!e || e->id != id || !e->deferred)
			continue; /* its slot went to another binary meanwhile */
		fd = e->deferred_fd;
		e->deferred = false;
		if (!e->loaded && !e->no_table)
			build(ut, e, fd);
		close(fd);
		return (int)ut->n_deferred + 1;
	}
	return 0;
}

/* The table of a file mapping, built when new, loaded again when it was evicted. */
static struct table_entry *file_table(struct unwind_tables *ut, int fd)
{
	char ikey[KEY_MAX], key[KEY_MAX], id[CFI_BUILD_ID_MAX];
	struct table_entry *e = NULL;
	struct stat st;
	uint64_t v;

	if (fstat(fd, &st))
		return NULL;
	snprintf(ikey, sizeof(ikey), "i:%" PRIu64 ":%" PRIu64 ":%" PRIu64 ":%" PRId64 ".%09ld",
		 (uint64_t)st.st_dev, (uint64_t)st.st_ino, (uint64_t)st.st_size,
		 (int64_t)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	if (hashtab__get(&ut->by_inode, hash_string(ikey), &v) && v) {
		e = ut->entries[v % UNWIND_MAX_TABLES];
		if (e && (e->id != v || !e->key[0]))
			e = NULL; /* the slot holds another binary now */
	}
	if (!e) {
		if (cfi_build_id_fd(fd, id, sizeof(id)) == 0)
			snprintf(key, sizeof(key), "b:%s", id);
		else
			snprintf(key, sizeof(key), "%s", ikey);
		e = find_key(ut, key);
		if (!e && !(e = new_entry(ut, key)))
			return NULL;
		hashtab__put(&ut->by_inode, hash_string(ikey), e->id);
	}
	e->last_used = ut->tick;
	if (!e->loaded && !e->no_table && !e->deferred && now_ns() >= e->retry_ns &&
	    !defer_build(ut, e, fd))
		build(ut, e, fd);
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
	struct unwind_tables *ut;
	pid_t pid;
	struct unwind_process proc;
	struct proc_rec rec;
};

/* The file behind a mapping: map_files (exact, also when deleted), else the path. */
static int open_mapping(const struct capture *c, const struct procmap_entry *m)
{
	char path[PROCMAPS_PATH_MAX + 300];
	int fd;

	snprintf(path, sizeof(path), "%s/%d/map_files/%" PRIx64 "-%" PRIx64, c->ut->proc_root,
		 (int)c->pid, m->start, m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 || m->deleted)
		return fd;
	snprintf(path, sizeof(path), "%s/%d/root%s", c->ut->proc_root, (int)c->pid, m->path);
	return open(path, O_RDONLY | O_CLOEXEC);
}

/* table pc = pc - bias: through the PT_LOAD segment holding the mapping's file offset. */
static bool mapping_bias(const struct table_entry *e, const struct procmap_entry *m,
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

static int add_mapping(const struct procmap_entry *m, void *ctx)
{
	struct capture *c = ctx;
	struct unwind_tables *ut = c->ut;
	struct unwind_mapping *um;
	struct table_entry *e = NULL;
	uint64_t bias = 0;
	int fd;

	if (!m->executable || !strcmp(m->path, "[vsyscall]"))
		return 0;
	if (c->proc.n_mappings >= UNWIND_MAX_MAPPINGS) {
		ut->stats.mappings_dropped++;
		return 0;
	}
	if (!strcmp(m->path, "[vdso]")) {
		e = vdso_table(ut);
	} else if (procmaps__is_file(m) && (fd = open_mapping(c, m)) >= 0) {
		e = file_table(ut, fd);
		close(fd);
	}
	um = &c->proc.mappings[c->proc.n_mappings];
	*um = (struct unwind_mapping){.start = m->start, .end = m->end};
	if (e && !e->no_table) /* remembered even when not loaded: touch loads it again */
		c->rec.slots[c->proc.n_mappings] = e->id % UNWIND_MAX_TABLES;
	if (e && e->loaded && mapping_bias(e, m, &bias)) {
		um->table_id = e->id;
		um->bias = bias;
	}
	c->proc.n_mappings++; /* without a table (JIT, unreadable): frame-pointer steps */
	return 0;
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

int unwind_tables__capture_process(struct unwind_tables *ut, pid_t pid)
{
	struct capture *c = calloc(1, sizeof(*c));
	struct proc_rec *rec;
	int ret;

	if (!c)
		return -ENOMEM;
	c->ut = ut;
	c->pid = pid;
	ut->tick++;
	ret = procmaps__foreach(ut->proc_root, pid, add_mapping, c);
	if (!ret) {
		rec = find_proc(ut, pid);
		if (!rec)
			rec = new_proc(ut, pid);
		ret = rec ? ut->sink.set_process(ut->sink.ctx, pid, &c->proc) : -ENOSPC;
		if (!ret) {
			memcpy(rec->slots, c->rec.slots, sizeof(rec->slots));
			rec->n = c->proc.n_mappings;
			rec->captured_ns = now_ns();
		}
	}
	free(c);
	return ret;
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
	bool reload = false;

	if (!rec)
		return;
	ut->tick++;
	for (size_t i = 0; i < rec->n && i < UNWIND_MAX_MAPPINGS; i++) {
		struct table_entry *e = rec->slots[i] ? ut->entries[rec->slots[i]] : NULL;

		if (!e)
			continue;
		e->last_used = ut->tick;
		reload |= !e->loaded && !e->no_table && !e->deferred;
		reload |=
		    e->loaded && e->loaded_ns > rec->captured_ns; /* built after its capture */
	}
	/* Some of its tables were evicted: load them again (same ids). Or it may have mapped
	 * new code since (dlopen): its pcs there would end its stacks ("no_mapping"). */
	if (reload || now_ns() - rec->captured_ns >= REFRESH_NS)
		unwind_tables__capture_process(ut, pid);
}

void unwind_tables__stats(const struct unwind_tables *ut, struct unwind_tables_stats *ret)
{
	*ret = ut->stats;
	ret->rows_capacity = ut->sink.capacity;
	ret->tables_deferred = 0;
	for (size_t i = 0; i < ut->n_deferred; i++) {
		const struct table_entry *e = ut->entries[ut->deferred[i] % UNWIND_MAX_TABLES];

		ret->tables_deferred += e && e->id == ut->deferred[i] && e->deferred;
	}
}

struct unwind_tables *unwind_tables__new(const struct unwind_sink *sink, const char *proc_root)
{
	struct unwind_tables *ut = calloc(1, sizeof(*ut));

	if (!ut)
		return NULL;
	ut->sink = *sink;
	snprintf(ut->proc_root, sizeof(ut->proc_root), "%s", proc_root ? proc_root : "/proc");
	ut->entries = calloc(UNWIND_MAX_TABLES, sizeof(*ut->entries));
	ut->procs = calloc(UNWIND_MAX_PROCESSES, sizeof(*ut->procs));
	if (!ut->entries || !ut->procs ||
	    (sink->capacity && extent_free(ut, 0, (uint32_t)sink->capacity & ~1u))) {
		unwind_tables__free(ut);
		errno = ENOMEM;
		return NULL;
	}
	return ut;
}

void unwind_tables__free(struct unwind_tables *ut)
{
	if (!ut)
		return;
	hashtab__free(&ut->by_key);
	hashtab__free(&ut->by_inode);
	hashtab__free(&ut->proc_of_pid);
	for (size_t i = 0; ut->entries && i < UNWIND_MAX_TABLES; i++) {
		if (ut->entries[i] && ut->entries[i]->deferred)
			close(ut->entries[i]->deferred_fd);
		free(ut->entries[i]);
	}
	free(ut->entries);
	free(ut->procs);
	free(ut->free_rows);
	free(ut);
}
