/* SPDX-License-Identifier: Apache-2.0 */
/* The SQLite profile store's private header: its one struct (the writer's connection, statements
 * and caches, the reader pool) and what its four files call of each other. */
#ifndef ROOTTRACE_SQLITE_PROFILES_INTERNAL_H
#define ROOTTRACE_SQLITE_PROFILES_INTERNAL_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hashtab.h"
#include "store/line_blob.h"
#include "store/sqlite/function_dict.h"
#include "store/sqlite/store_sqlite.h"
#include "store/store.h"

/*
 * The profile store, one concern per file:
 *   profiles_open.c    schema and writer statements, open and close, retention, file size
 *   profiles_stacks.c  stacks dictionary ids (the writer's caches) and the series cache
 *   profiles_write.c   ingest: group commit, rollup merge of a group, tier folds
 *   profiles_read.c    reader pool, a window summed across the tiers, services
 * Only the functions below cross files; the rest is static in its file.
 */

/* The export joins frames by '\n'; ingest replaces control characters in names. */
#define FRAME_SEP '\n'

/* The writer connection's statements (p->w); their SQL is in profiles_open.c. */
enum {
	W_BEGIN,
	W_COMMIT,
	W_ROLLBACK,
	W_SERIES_GET,
	W_SERIES_ADD,
	W_STACK_GET,
	W_STACK_ADD,
	W_UPLOAD_CLAIM,
	W_BUCKET_UPSERT,
	W_ROLLUP_UPSERT, /* the three tiers in order: five-minute, hour, day */
	W_HOUR_UPSERT,
	W_DAY_UPSERT,
	W_ROLLUP_ADD, /* the three tiers in order again: UPDATE of an existing row */
	W_HOUR_ADD,
	W_DAY_ADD,
	W_SERIES_SPAN,
	W_MARKS_GET,
	W_MARKS_PUT,
	W_FOLD_HOURS,
	W_FOLD_DAYS,
	W_UNMARKED,
	W_RETAIN_ROLLUPS,
	W_RETAIN_HOURS,
	W_RETAIN_DAYS,
	W_REFOLD_HOUR,
	W_REFOLD_DAY,
	W_RETAIN_BUCKETS,
	W_RETAIN_STACKS,
	W_STACKS_ALL,
	W_RETAIN_UPLOADS,
	W_COUNT
};

/* The line detail's writer statements (p->lw); their SQL is in profiles_lines.c. */
enum {
	LW_SOURCE_ADD,
	LW_SOURCE_GET,
	LW_DETAIL_GET,
	LW_DETAIL_PUT,
	LW_DETAIL_TRIM,
	LW_RETAIN,
	LW_RETAIN_SOURCES,
	LW_COUNT
};

/* Line detail (store.h): a dictionary of sources (file names, build-ids), each with the latest
 * bucket a row named it in (retention drops it with that bucket), and, per series and
 * five-minute bucket, the leaf functions' values by position packed into parts
 * (store/line_blob.h) small enough to stay inside their b-tree pages. */
#define LINES_SCHEMA                                                                               \
	"CREATE TABLE IF NOT EXISTS line_sources("                                                 \
	" id INTEGER PRIMARY KEY, kind INTEGER NOT NULL, text TEXT NOT NULL,"                      \
	" last_bucket INTEGER NOT NULL DEFAULT 0, UNIQUE(kind, text));"                            \
	"CREATE TABLE IF NOT EXISTS line_rollups("                                                 \
	" series_id INTEGER NOT NULL, bucket INTEGER NOT NULL, part INTEGER NOT NULL,"             \
	" detail BLOB NOT NULL, PRIMARY KEY(series_id, bucket, part)) WITHOUT ROWID;"

/* Each reader connection's statements (r->st); their SQL is in profiles_read.c. */
enum {
	R_BEGIN,
	R_END,
	R_SERIES,
	R_TIERS,
	R_STACK,
	R_FUNCTION,
	R_UPLOADS,
	R_SERVICES,
	R_SERVICE_BUCKETS,
	R_SERVICE_NODES,
	R_COUNT
};

#define READERS 4 /* reader connections */
#define HOUR 3600
#define DAY 86400

/* One reader connection, used by one read at a time. */
struct reader {
	pthread_mutex_t lock;
	sqlite3 *db;
	sqlite3_stmt *st[R_COUNT];
};

/* The store: one writer connection (write_lock) with its caches, and the reader pool. */
struct sqlite_profiles {
	struct profile_store base;
	char *path;
	pthread_mutex_t write_lock;
	sqlite3 *wdb;
	sqlite3_stmt *w[W_COUNT];
	struct function_ids_buf stack; /* scratch: one stack's function ids and their encoding */
	int64_t *name_fids; /* the batch being written: function id of each of its names, or 0 */
	size_t name_fids_cap;
	struct function_dict *functions;
	/* `stacks` with its verified cache; stacks.first_new: the first stack id the group
	 * inserted, 0 while none. */
	struct stack_ids_table stacks;
	struct merge_entry *merge; /* one group's rollup values, summed by key at the end */
	size_t n_merge, merge_cap;
	struct hashtab series;	       /* key hash -> struct series_entry * */
	struct series_entry **touched; /* series written by the group being committed */
	size_t n_touched, touched_cap;
	struct group_commit *gc;
	struct reader readers[READERS];
	unsigned int next_reader;
	sqlite3_stmt *lw[LW_COUNT];
	struct line_entry *line_scratch; /* one bucket's line detail being merged */
	size_t line_scratch_cap;
};

/* A series' id and tier marks, kept while the writer runs so that an upload costs no series
 * lookup. Emptied after a rollback (the id or the marks may not have been committed). */
struct series_entry {
	int64_t id;
	int64_t hour_done, day_done; /* tier marks; -1 until the series has a tier_marks row */
	int64_t newest;		     /* newest bucket written, -1 when none */
	bool touched;
	size_t key_len;
	char key[]; /* environment, service, profile type, deployment, node; each NUL-terminated */
};

/* The rollup tiers, in the order of their writer statements (W_ROLLUP_UPSERT + tier, ...). */
enum tier { TIER_5MIN, TIER_HOUR, TIER_DAY, TIERS };

static inline struct sqlite_profiles *to_sqlite(struct profile_store *s)
{
	return (struct sqlite_profiles *)s;
}

static inline int64_t floor_to(int64_t t, int64_t unit)
{
	return t - ((t % unit) + unit) % unit;
}

static inline int64_t ceil_to(int64_t t, int64_t unit)
{
	return -floor_to(-t, unit);
}

/* profiles_stacks.c: the writer's caches. Called with write_lock held (or while opening). */
int sqlite_profiles__init_caches(struct sqlite_profiles *p);
void sqlite_profiles__release_caches(struct sqlite_profiles *p);
/* Converts a database whose stacks dictionary holds joined frame text (before function ids):
 * same stack ids, in one transaction. Before the writer's statements are prepared. */
int sqlite_profiles_stacks_migrate(sqlite3 *db);
/* Forgets every cached stack id: a rollback or retention may have removed them. */
void sqlite_profiles__forget_stack_ids(struct sqlite_profiles *p);
/* Starts a group (no stack inserted by it yet). */
void sqlite_profiles__stacks_new_group(struct sqlite_profiles *p);
/* Starts a batch: its names' function ids are looked up as its stacks need them. */
int sqlite_profiles__names_new_batch(struct sqlite_profiles *p, const struct profile_batch *b);
/* The dictionary id of a stack of batch b, inserting the stack the first time it is seen. */
int sqlite_profiles__stack_id(struct sqlite_profiles *p, const struct profile_batch *b,
			      const struct stack_value *sv, int64_t *ret_id);
/* Empties the series cache (entries are reloaded on use). */
void sqlite_profiles__forget_series(struct sqlite_profiles *p);
/* The batch's series (created when new) with its tier marks and newest bucket. */
int sqlite_profiles__series_get(struct sqlite_profiles *p, const struct profile_batch *b,
				struct series_entry **ret);
/* Adds the series to those the group being committed wrote (once). */
int sqlite_profiles__series_touch(struct sqlite_profiles *p, struct series_entry *e);

/* The function id of batch b's name `index` (looked up once per batch). */
int sqlite_profiles__name_function_id(struct sqlite_profiles *p, const struct profile_batch *b,
				      uint32_t index, int64_t *ret_id);

/* profiles_lines.c */
/* Prepares the line detail's writer statements (after the schema). */
int sqlite_profiles__lines_open(struct sqlite_profiles *p);
void sqlite_profiles__lines_close(struct sqlite_profiles *p);
/* Merges batch b's lines into its bucket of series_id (after its stacks: their names have
 * function ids), in the writer's transaction. */
int sqlite_profiles__lines_merge(struct sqlite_profiles *p, const struct profile_batch *b,
				 int64_t series_id);
/* Deletes the line detail of buckets ending at or before cutoff. */
int sqlite_profiles__lines_retain(struct sqlite_profiles *p, int64_t cutoff);
int sqlite_profiles__lines_window(struct profile_store *s, const struct window_query *q,
				  const char *function, struct line_window *ret);

/* profiles_write.c */
struct gc_item;
int sqlite_profiles__ingest(struct profile_store *s, const struct profile_batch *batches, size_t n);
/* The group commit's commit function (ctx is the store). */
void sqlite_profiles__commit_group(void *ctx, struct gc_item **items, size_t n);
/* Folds the closed periods of every series without tier marks, once, when opening. */
int sqlite_profiles__backfill_tiers(struct sqlite_profiles *p);

/* profiles_read.c */
/* A reader connection for one read (waits when all are busy), and its release. */
struct reader *sqlite_profiles__reader_acquire(struct sqlite_profiles *p);
void sqlite_profiles__reader_release(struct reader *r);
/* Opens one reader connection and prepares its statements; 0 or -errno. */
int sqlite_profiles_reader_open(struct reader *r, const char *path,
				enum store_sqlite_durability durability);
int sqlite_profiles__merge_window(struct profile_store *s, const struct window_query *q,
				  struct merged_window *ret);
int sqlite_profiles__services(struct profile_store *s, const char *environment,
			      struct service_summary **ret, size_t *ret_n);
int sqlite_profiles__service_nodes(struct profile_store *s, const char *environment,
				   struct service_node **ret, size_t *ret_n);
int sqlite_profiles__service_buckets(struct profile_store *s, const char *environment,
				     int64_t start, int64_t end, struct service_bucket **ret,
				     size_t *ret_n);

#endif
