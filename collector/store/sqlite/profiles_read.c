// SPDX-License-Identifier: Apache-2.0
/* The SQLite profile store's read path: a pool of reader connections (WAL: never blocked by the
 * writer), a window summed per stack over its five-minute, hour and day rows, services. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "store/sqlite/function_names.h"
#include "store/sqlite/profiles_internal.h"
#include "store/sqlite/store_sqlite_db.h"

#define SERIES_MATCH                                                                               \
	"SELECT id FROM series WHERE environment = ?1 AND service = ?2 AND profile_type = ?3"      \
	" AND (?4 IS NULL OR deployment = ?4) AND (?20 IS NULL OR node = ?20)"

/* One [from, to) range of one tier of one series: each its own index range scan. */
#define TIER_RANGE(table, from, to)                                                                \
	"SELECT stack_id, value FROM " table " WHERE series_id = ?1 AND bucket >= " from           \
	" AND bucket < " to

static const char *const reader_sql[R_COUNT] = {
    [R_BEGIN] = "BEGIN",
    [R_END] = "COMMIT",
    [R_SERIES] = "SELECT s.id, coalesce(m.hour_done, 0), coalesce(m.day_done, 0) FROM series s"
		 " LEFT JOIN tier_marks m ON m.series_id = s.id WHERE s.environment = ?1"
		 " AND s.service = ?2 AND s.profile_type = ?3"
		 " AND (?4 IS NULL OR s.deployment = ?4) AND (?20 IS NULL OR s.node = ?20)",
    /* Five-minute edges, whole hours, whole days: UNION ALL of simple ranges, never
     * (range OR range), which SQLite plans as a scan of the whole series. */
    [R_TIERS] = TIER_RANGE("rollups", "?2", "?3") " UNION ALL " TIER_RANGE(
	"rollups", "?4",
	"?5") " UNION ALL " TIER_RANGE("rollups_hour", "?6",
				       "?7") " UNION ALL " TIER_RANGE("rollups_hour", "?8",
								      "?9") " UNION "
									    "ALL " TIER_RANGE("roll"
											      "ups_"
											      "day",
											      "?10",
											      "?1"
											      "1"),
    [R_STACK] = "SELECT n_frames, ids FROM stacks WHERE id = ?1",
    [R_FUNCTION] = "SELECT name FROM functions WHERE id = ?1",
    [R_UPLOADS] = "SELECT coalesce(sum(uploads), 0),"
		  " (SELECT period FROM buckets WHERE series_id IN (" SERIES_MATCH ")"
		  "  AND bucket > ?5 - 300 AND bucket < ?6 ORDER BY bucket DESC LIMIT 1)"
		  " FROM buckets WHERE series_id IN (" SERIES_MATCH ")"
		  " AND bucket > ?5 - 300 AND bucket < ?6",
    [R_SERVICES] = "SELECT s.service, s.profile_type, max(b.last_upload), sum(b.uploads)"
		   " FROM series s JOIN buckets b ON b.series_id = s.id"
		   " WHERE s.environment = ?1 GROUP BY s.service, s.profile_type"
		   " ORDER BY s.service, s.profile_type",
    [R_SERVICE_BUCKETS] = "SELECT s.service, b.bucket, max(b.last_upload)"
			  " FROM series s JOIN buckets b ON b.series_id = s.id"
			  " WHERE s.environment = ?1 AND b.bucket >= ?2 AND b.bucket < ?3"
			  " GROUP BY s.service, b.bucket ORDER BY b.bucket, s.service",
    [R_SERVICE_NODES] = "SELECT s.service, s.node, max(b.last_upload), sum(b.uploads)"
			" FROM series s JOIN buckets b ON b.series_id = s.id"
			" WHERE s.environment = ?1 GROUP BY s.service, s.node"
			" ORDER BY s.service, s.node",
};

int sqlite_profiles_reader_open(struct reader *r, const char *path,
				enum store_sqlite_durability durability)
{
	return sqlite_db_open_prepared(path, NULL, durability, reader_sql, r->st, R_COUNT, &r->db);
}

/* ------------------------------------------------------------------------- reads ---- */

struct reader *sqlite_profiles__reader_acquire(struct sqlite_profiles *p)
{
	for (int i = 0; i < READERS; i++)
		if (pthread_mutex_trylock(&p->readers[i].lock) == 0)
			return &p->readers[i];
	struct reader *r =
	    &p->readers[__atomic_fetch_add(&p->next_reader, 1, __ATOMIC_RELAXED) % READERS];

	pthread_mutex_lock(&r->lock);
	return r;
}

void sqlite_profiles__reader_release(struct reader *r)
{
	pthread_mutex_unlock(&r->lock);
}

/* ?1 to ?4 and ?20: the series a window query matches (every deployment when it names none,
 * every node when it names none). */
static void bind_series_match(sqlite3_stmt *st, const struct window_query *q)
{
	sqlite3_bind_text(st, 1, q->environment, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, q->service, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, q->profile_type, -1, SQLITE_STATIC);
	if (q->deployment)
		sqlite3_bind_text(st, 4, q->deployment, -1, SQLITE_STATIC);
	if (q->node)
		sqlite3_bind_text(st, 20, q->node, -1, SQLITE_STATIC);
}

static void bind_window(sqlite3_stmt *st, const struct window_query *q)
{
	bind_series_match(st, q);
	sqlite3_bind_int64(st, 5, q->start);
	sqlite3_bind_int64(st, 6, q->end);
}

/* Stack id -> summed value over every series and tier range of a window. */
struct window_sum {
	int64_t *ids, *values;
	size_t n, cap;
	struct hashtab index; /* stack id -> index into ids and values */
};

static void window_sum_free(struct window_sum *w)
{
	free(w->ids);
	free(w->values);
	hashtab__free(&w->index);
}

static int window_sum_grow(struct window_sum *w)
{
	size_t cap = w->cap ? w->cap * 2 : 1024;
	int64_t *ids = realloc(w->ids, cap * sizeof(*ids));
	int64_t *values;

	if (!ids)
		return -ENOMEM;
	w->ids = ids;
	values = realloc(w->values, cap * sizeof(*values));
	if (!values)
		return -ENOMEM;
	w->values = values;
	w->cap = cap;
	return 0;
}

static int window_sum_add(struct window_sum *w, int64_t id, int64_t value)
{
	uint64_t i;

	if (hashtab__get(&w->index, (uint64_t)id, &i))
		return __builtin_add_overflow(w->values[i], value, &w->values[i]) ? -EOVERFLOW : 0;
	if (w->n == w->cap && window_sum_grow(w))
		return -ENOMEM;
	if (hashtab__put(&w->index, (uint64_t)id, w->n))
		return -ENOMEM;
	w->ids[w->n] = id;
	w->values[w->n++] = value;
	return 0;
}

struct series_marks {
	int64_t id, hour_done, day_done;
};

/*
 * Splits the buckets overlapping [start, end) of one series into five-minute edges, whole
 * hours and whole days (only periods its marks say are folded) and binds R_TIERS' ranges.
 */
static void bind_tiers(sqlite3_stmt *st, const struct series_marks *m, const struct window_query *q)
{
	int64_t s = floor_to(q->start, BUCKET_SECONDS), e = ceil_to(q->end, BUCKET_SECONDS);
	int64_t h0 = ceil_to(s, HOUR), h1 = floor_to(e, HOUR), d0, d1;
	int64_t r[10];

	if (h1 > m->hour_done)
		h1 = m->hour_done;
	if (h0 >= h1) /* no folded whole hour: five-minute rows only */
		h0 = h1 = e;
	d0 = ceil_to(h0, DAY);
	d1 = floor_to(h1, DAY);
	if (d1 > m->day_done)
		d1 = m->day_done;
	if (d0 >= d1)
		d0 = d1 = h1;
	r[0] = s, r[1] = h0, r[2] = h1, r[3] = e;   /* five-minute edges */
	r[4] = h0, r[5] = d0, r[6] = d1, r[7] = h1; /* whole hours */
	r[8] = d0, r[9] = d1;			    /* whole days */
	sqlite3_bind_int64(st, 1, m->id);
	for (int i = 0; i < 10; i++)
		sqlite3_bind_int64(st, 2 + i, r[i]);
}

static int read_series_marks(sqlite3_stmt *st, void *record)
{
	struct series_marks *m = record;

	m->id = sqlite3_column_int64(st, 0);
	m->hour_done = sqlite3_column_int64(st, 1);
	m->day_done = sqlite3_column_int64(st, 2);
	return 0;
}

static int window_series(struct reader *r, const struct window_query *q, struct series_marks **ret,
			 size_t *ret_n)
{
	static const struct sqlite_db_row_reader series_rows = {
	    .size = sizeof(struct series_marks),
	    .read = read_series_marks,
	};

	bind_series_match(r->st[R_SERIES], q);
	return sqlite_db_read_rows(r->st[R_SERIES], &series_rows, ret, ret_n);
}

static int sum_window(struct reader *r, const struct window_query *q, struct window_sum *w)
{
	struct series_marks *series = NULL;
	size_t n_series = 0;
	sqlite3_stmt *st = r->st[R_TIERS];
	int rc;

	rc = window_series(r, q, &series, &n_series);
	for (size_t i = 0; !rc && i < n_series; i++) {
		bind_tiers(st, &series[i], q);
		while (!rc && (rc = sqlite3_step(st)) == SQLITE_ROW)
			rc = window_sum_add(w, sqlite3_column_int64(st, 0),
					    sqlite3_column_int64(st, 1));
		if (rc == SQLITE_DONE)
			rc = 0;
		else if (rc > 0)
			rc = -EIO;
		sqlite_db_reset(st);
	}
	free(series);
	return rc;
}

/* The frames of every summed stack, from the dictionary. */
static int window_stacks(struct reader *r, const struct window_sum *w, struct merged_window *ret)
{
	struct function_names fn;
	sqlite3_stmt *st = r->st[R_STACK];
	int rc = 0;

	function_names__init(&fn, r->st[R_FUNCTION]);
	ret->stacks = calloc(w->n ? w->n : 1, sizeof(*ret->stacks));
	if (!ret->stacks)
		return -ENOMEM;
	for (size_t i = 0; !rc && i < w->n; i++) {
		struct merged_stack *ms = &ret->stacks[ret->n_stacks];

		sqlite3_bind_int64(st, 1, w->ids[i]);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			ret->n_stacks++;
			ms->value = w->values[i];
			rc = function_names__frames(&fn, sqlite3_column_int64(st, 0),
						    sqlite3_column_blob(st, 1),
						    (size_t)sqlite3_column_bytes(st, 1), ms);
		} else {
			rc = -EIO; /* every rollup's stack is in the dictionary */
		}
		sqlite_db_reset(st);
	}
	function_names__release(&fn);
	return rc;
}

int sqlite_profiles__merge_window(struct profile_store *s, const struct window_query *q,
				  struct merged_window *ret)
{
	struct sqlite_profiles *p = to_sqlite(s);
	struct reader *r = sqlite_profiles__reader_acquire(p);
	struct window_sum w = {0};
	sqlite3_stmt *st;
	int rc;

	memset(ret, 0, sizeof(*ret));
	/* One read transaction: the marks, the tier rows and the counts of one snapshot. */
	rc = sqlite_db_step_done(r->st[R_BEGIN]);
	if (!rc)
		rc = sum_window(r, q, &w);
	if (!rc)
		rc = window_stacks(r, &w, ret);
	if (!rc) {
		st = r->st[R_UPLOADS];
		bind_window(st, q);
		rc = sqlite3_step(st) == SQLITE_ROW ? 0 : -EIO;
		if (!rc) {
			ret->uploads = sqlite3_column_int64(st, 0);
			ret->period = sqlite3_column_int64(st, 1);
		}
		sqlite_db_reset(st);
	}
	if (!sqlite3_get_autocommit(r->db))
		sqlite_db_step_done(r->st[R_END]);
	sqlite_profiles__reader_release(r);
	window_sum_free(&w);
	if (rc)
		merged_window__release(ret);
	return rc;
}

static int read_service_summary(sqlite3_stmt *st, void *record)
{
	struct service_summary *summary = record;

	sqlite_db_column_copy(st, 0, summary->service, sizeof(summary->service));
	sqlite_db_column_copy(st, 1, summary->profile_type, sizeof(summary->profile_type));
	summary->last_upload = sqlite3_column_int64(st, 2);
	summary->uploads = sqlite3_column_int64(st, 3);
	return 0;
}

static int read_service_bucket(sqlite3_stmt *st, void *record)
{
	struct service_bucket *b = record;

	sqlite_db_column_copy(st, 0, b->service, sizeof(b->service));
	b->bucket = sqlite3_column_int64(st, 1);
	b->last_upload = sqlite3_column_int64(st, 2);
	return 0;
}

static int read_service_node(sqlite3_stmt *st, void *record)
{
	struct service_node *n = record;

	sqlite_db_column_copy(st, 0, n->service, sizeof(n->service));
	sqlite_db_column_copy(st, 1, n->node, sizeof(n->node));
	n->last_upload = sqlite3_column_int64(st, 2);
	n->uploads = sqlite3_column_int64(st, 3);
	return 0;
}

/* Rows of one reader statement about an environment (?1), within [start, end) as ?2 and ?3
 * when the statement takes them (has_range). */
static int environment_rows(struct profile_store *s, int stmt, const char *environment,
			    bool has_range, int64_t start, int64_t end,
			    const struct sqlite_db_row_reader *rows, void *ret, size_t *ret_n)
{
	struct reader *r = sqlite_profiles__reader_acquire(to_sqlite(s));
	sqlite3_stmt *st = r->st[stmt];
	int rc;

	sqlite3_bind_text(st, 1, environment, -1, SQLITE_STATIC);
	if (has_range) {
		sqlite3_bind_int64(st, 2, start);
		sqlite3_bind_int64(st, 3, end);
	}
	rc = sqlite_db_read_rows(st, rows, ret, ret_n);
	sqlite_profiles__reader_release(r);
	return rc;
}

int sqlite_profiles__services(struct profile_store *s, const char *environment,
			      struct service_summary **ret, size_t *ret_n)
{
	static const struct sqlite_db_row_reader rows = {.size = sizeof(**ret),
							 .read = read_service_summary};

	return environment_rows(s, R_SERVICES, environment, false, 0, 0, &rows, ret, ret_n);
}

int sqlite_profiles__service_buckets(struct profile_store *s, const char *environment,
				     int64_t start, int64_t end, struct service_bucket **ret,
				     size_t *ret_n)
{
	static const struct sqlite_db_row_reader rows = {.size = sizeof(**ret),
							 .read = read_service_bucket};

	return environment_rows(s, R_SERVICE_BUCKETS, environment, true, start, end, &rows, ret,
				ret_n);
}

int sqlite_profiles__service_nodes(struct profile_store *s, const char *environment,
				   struct service_node **ret, size_t *ret_n)
{
	static const struct sqlite_db_row_reader rows = {.size = sizeof(**ret),
							 .read = read_service_node};

	return environment_rows(s, R_SERVICE_NODES, environment, false, 0, 0, &rows, ret, ret_n);
}
