// SPDX-License-Identifier: Apache-2.0
/* The SQLite profile store's write path: concurrent uploads are group committed (one
 * transaction, one fsync, for all waiting), their values merged per rollup key, tiers folded. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/group_commit.h"
#include "store/sqlite/profiles_internal.h"
#include "store/sqlite/store_sqlite_db.h"

#define NAME_BYTES_EST 32     /* average function name bytes, for the queue's byte bound */
#define SERIES_CACHE_MAX 4096 /* series entries; cleared between groups past this */
/* A period is folded into its tier this long after its end (and after the series' newest
 * bucket has passed it), so that ordinary late uploads still land before the fold; a later
 * one is also added to the tier rows, just less cheaply. */
#define FOLD_LAG_S 3600

/* ---------------------------------------------------------- rollup merge of a group ---- */

/*
 * The uploads of one group commit often hit the same rollup record (one service, one bucket),
 * so their values are collected, sorted by (series, bucket, stack) and summed where the key
 * repeats; each sum is written with one statement, in key order (the rollups primary key).
 * No index while collecting: 40 bytes a value, one sort at the end.
 */
struct merge_entry {
	int64_t series_id, bucket, stack_id, value;
	enum tier tier; /* bucket is the hour's or the day's start for the coarser tiers */
};

static void merge_reset(struct sqlite_profiles *p)
{
	p->n_merge = 0;
}

static int merge_add(struct sqlite_profiles *p, enum tier tier, int64_t series, int64_t bucket,
		     int64_t stack, int64_t value)
{
	if (p->n_merge == p->merge_cap) {
		size_t cap = p->merge_cap ? p->merge_cap * 2 : 4096;
		struct merge_entry *grown = realloc(p->merge, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		p->merge = grown;
		p->merge_cap = cap;
	}
	p->merge[p->n_merge++] = (struct merge_entry){series, bucket, stack, value, tier};
	return 0;
}

static int merge_cmp(const void *a, const void *b)
{
	const struct merge_entry *x = a, *y = b;

	if (x->tier != y->tier)
		return x->tier < y->tier ? -1 : 1;
	if (x->series_id != y->series_id)
		return x->series_id < y->series_id ? -1 : 1;
	if (x->bucket != y->bucket)
		return x->bucket < y->bucket ? -1 : 1;
	return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

static void bind_entry(sqlite3_stmt *st, const struct merge_entry *e)
{
	sqlite3_bind_int64(st, 1, e->series_id);
	sqlite3_bind_int64(st, 2, e->bucket);
	sqlite3_bind_int64(st, 3, e->stack_id);
	sqlite3_bind_int64(st, 4, e->value);
}

static bool same_rollup_key(const struct merge_entry *a, const struct merge_entry *b)
{
	return a->tier == b->tier && a->series_id == b->series_id && a->bucket == b->bucket &&
	       a->stack_id == b->stack_id;
}

/* Sorts the group's values by key and sums the ones of one key into the first; the number of
 * distinct keys. */
static int merge_sum(struct sqlite_profiles *p, size_t *ret_n)
{
	size_t n = 0;

	if (p->n_merge > 1) /* merge may be NULL for a profile without samples */
		qsort(p->merge, p->n_merge, sizeof(*p->merge), merge_cmp);
	for (size_t i = 0; i < p->n_merge; i++) {
		if (n && same_rollup_key(&p->merge[n - 1], &p->merge[i])) {
			if (__builtin_add_overflow(p->merge[n - 1].value, p->merge[i].value,
						   &p->merge[n - 1].value))
				return -EOVERFLOW;
			continue;
		}
		p->merge[n++] = p->merge[i];
	}
	*ret_n = n;
	return 0;
}

/* Most values add to a row that exists (uploads keep hitting the current bucket), so each is
 * an UPDATE first (one index seek), and an UPSERT only when no row was there; a stack the
 * group inserted into the dictionary has no row yet: straight to the UPSERT. */
static int merge_flush(struct sqlite_profiles *p)
{
	size_t n = 0;
	int rc = merge_sum(p, &n);

	for (size_t i = 0; !rc && i < n; i++) {
		const struct merge_entry *e = &p->merge[i];
		sqlite3_stmt *st = p->w[W_ROLLUP_ADD + e->tier];

		if (p->stacks.first_new && e->stack_id >= p->stacks.first_new)
			goto upsert;
		bind_entry(st, e);
		rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
		sqlite3_reset(st);
		if (rc || sqlite3_changes(p->wdb) > 0)
			continue;
	upsert:
		st = p->w[W_ROLLUP_UPSERT + e->tier];
		bind_entry(st, e);
		rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
		sqlite3_reset(st);
	}
	return rc;
}

/* Each value goes to its five-minute row, and also to its hour's and day's rows when that
 * period was already folded (a late or backdated upload). */
static int merge_value(struct sqlite_profiles *p, const struct series_entry *e, int64_t bucket,
		       int64_t stack, int64_t value)
{
	int rc = merge_add(p, TIER_5MIN, e->id, bucket, stack, value);

	if (!rc && bucket < e->hour_done)
		rc = merge_add(p, TIER_HOUR, e->id, floor_to(bucket, HOUR), stack, value);
	if (!rc && bucket < e->day_done)
		rc = merge_add(p, TIER_DAY, e->id, floor_to(bucket, DAY), stack, value);
	return rc;
}

/* Records the batch's upload id; *ret_duplicate when the store already had it (committed
 * earlier, or by a batch before this one in the same group). */
static int upload_claim(struct sqlite_profiles *p, const struct profile_batch *b, int64_t now,
			bool *ret_duplicate)
{
	sqlite3_stmt *st = p->w[W_UPLOAD_CLAIM];
	int rc;

	sqlite3_bind_text(st, 1, b->environment, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, b->upload_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, now);
	rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
	*ret_duplicate = !rc && sqlite3_changes(p->wdb) == 0;
	sqlite_db_reset(st);
	return rc;
}

static int ingest_batch(struct sqlite_profiles *p, const struct profile_batch *b, int64_t now)
{
	struct series_entry *e;
	sqlite3_stmt *st;
	bool duplicate = false;
	int rc;

	if (b->upload_id) {
		rc = upload_claim(p, b, now, &duplicate);
		if (b->ret_duplicate)
			*b->ret_duplicate = duplicate;
		if (rc || duplicate)
			return rc; /* a duplicate adds nothing, not even to the bucket's upload
				      count */
	}
	rc = sqlite_profiles__series_get(p, b, &e);
	if (!rc)
		rc = sqlite_profiles__series_touch(p, e);
	if (rc)
		return rc;
	if (b->bucket_start > e->newest)
		e->newest = b->bucket_start;
	st = p->w[W_BUCKET_UPSERT];
	sqlite3_bind_int64(st, 1, e->id);
	sqlite3_bind_int64(st, 2, b->bucket_start);
	sqlite3_bind_int64(st, 3, b->period);
	sqlite3_bind_int64(st, 4, now);
	rc = sqlite_db_step_done(st);
	if (!rc)
		rc = sqlite_profiles__names_new_batch(p, b);
	for (size_t i = 0; !rc && i < b->n_stacks; i++) {
		int64_t stack = 0;

		rc = sqlite_profiles__stack_id(p, b, &b->stacks[i], &stack);
		if (!rc)
			rc = merge_value(p, e, b->bucket_start, stack, b->stacks[i].value);
	}
	if (!rc && b->n_lines)
		rc = sqlite_profiles__lines_merge(p, b, e->id);
	return rc;
}

/* ------------------------------------------------------------------ tier folding ---- */

static int fold_range(struct sqlite_profiles *p, int stmt, int64_t series, int64_t from, int64_t to)
{
	sqlite3_stmt *st = p->w[stmt];

	sqlite3_bind_int64(st, 1, series);
	sqlite3_bind_int64(st, 2, from);
	sqlite3_bind_int64(st, 3, to);
	return sqlite_db_step_done(st);
}

/*
 * Folds the series' closed hours into rollups_hour and its closed days (from those hours)
 * into rollups_day, then moves its marks. Runs inside the writer's transaction after the
 * group's values were written, so a period is folded with everything that reached it; the
 * periods below the old marks already received their values through merge_value().
 */
static int fold_series(struct sqlite_profiles *p, struct series_entry *e, int64_t now)
{
	int64_t newest_end = e->newest + BUCKET_SECONDS;
	int64_t hours, days;
	bool moved = false;
	int rc = 0;

	if (e->newest < 0)
		return 0;
	if (e->hour_done < 0) { /* first fold: start at the day of the oldest bucket */
		sqlite3_stmt *st = p->w[W_SERIES_SPAN];

		sqlite3_bind_int64(st, 1, e->id);
		rc = sqlite3_step(st) == SQLITE_ROW ? 0 : -EIO;
		if (!rc)
			e->hour_done = e->day_done = floor_to(sqlite3_column_int64(st, 0), DAY);
		sqlite_db_reset(st);
		if (rc)
			return rc;
		moved = true;
	}
	hours = floor_to((now < newest_end ? now : newest_end) - FOLD_LAG_S, HOUR);
	if (hours > e->hour_done) {
		rc = fold_range(p, W_FOLD_HOURS, e->id, e->hour_done, hours);
		e->hour_done = hours;
		moved = true;
	}
	days = floor_to(e->hour_done, DAY);
	if (!rc && days > e->day_done) {
		rc = fold_range(p, W_FOLD_DAYS, e->id, e->day_done, days);
		e->day_done = days;
	}
	if (!rc && moved) {
		sqlite3_stmt *st = p->w[W_MARKS_PUT];

		sqlite3_bind_int64(st, 1, e->id);
		sqlite3_bind_int64(st, 2, e->hour_done);
		sqlite3_bind_int64(st, 3, e->day_done);
		rc = sqlite_db_step_done(st);
	}
	return rc;
}

/* Folds every series the group wrote; cheap when none of them closed an hour. */
static int fold_touched(struct sqlite_profiles *p, int64_t now)
{
	int rc = 0;

	for (size_t i = 0; i < p->n_touched; i++) {
		if (!rc)
			rc = fold_series(p, p->touched[i], now);
		p->touched[i]->touched = false;
	}
	p->n_touched = 0;
	return rc;
}

/* What one ingest call hands to the group commit. */
struct ingest_call {
	const struct profile_batch *batches;
	size_t n;
};

/* One transaction for items[0..n); 0 only when it committed. Called with write_lock held. */
static int write_group(struct sqlite_profiles *p, struct gc_item **items, size_t n)
{
	int64_t now = time(NULL);
	int rc;

	merge_reset(p);
	sqlite_profiles__stacks_new_group(p);
	if (hashtab__count(&p->series) > SERIES_CACHE_MAX)
		sqlite_profiles__forget_series(p); /* bounded; entries are reloaded on use */
	for (size_t i = 0; i < n; i++) { /* a failed group is retried item by item: start clean */
		const struct ingest_call *call = items[i]->data;

		for (size_t b = 0; b < call->n; b++) {
			if (call->batches[b].ret_duplicate)
				*call->batches[b].ret_duplicate = false;
			if (call->batches[b].ret_lines_dropped)
				memset(call->batches[b].ret_lines_dropped, 0, 3 * sizeof(uint64_t));
		}
	}
	rc = sqlite_db_step_done(p->w[W_BEGIN]);
	for (size_t i = 0; !rc && i < n; i++) {
		const struct ingest_call *call = items[i]->data;

		for (size_t b = 0; !rc && b < call->n; b++)
			rc = ingest_batch(p, &call->batches[b], now);
	}
	if (!rc)
		rc = merge_flush(p);
	if (!rc)
		rc = fold_touched(p, now); /* after the flush: folds read the rows just written */
	if (!rc)
		rc = sqlite_db_step_done(p->w[W_COMMIT]);
	rc = sqlite_db_write_result(p->wdb, rc); /* a full disk named before the rollback */
	if (rc) {
		if (!sqlite3_get_autocommit(p->wdb))
			sqlite_db_step_done(p->w[W_ROLLBACK]);
		sqlite_profiles__forget_stack_ids(p);
		sqlite_profiles__forget_series(p);
	}
	merge_reset(p);
	return rc;
}

/* The group commit's commit function: all items in one transaction; when that fails, each
 * item alone, so that one bad upload cannot fail the others. */
void sqlite_profiles__commit_group(void *ctx, struct gc_item **items, size_t n)
{
	struct sqlite_profiles *p = ctx;
	int rc;

	pthread_mutex_lock(&p->write_lock);
	rc = write_group(p, items, n);
	for (size_t i = 0; i < n; i++)
		items[i]->rc = rc && n > 1 ? write_group(p, &items[i], 1) : rc;
	pthread_mutex_unlock(&p->write_lock);
}

/* What a queued call counts against the queue's byte bound: the decoded stacks it holds. */
static size_t call_bytes(const struct profile_batch *batches, size_t n)
{
	size_t bytes = sizeof(struct ingest_call);

	for (size_t b = 0; b < n; b++) {
		bytes += sizeof(batches[b]) + batches[b].n_stacks * sizeof(struct stack_value) +
			 batches[b].n_names * (sizeof(char *) + NAME_BYTES_EST);
		for (size_t i = 0; i < batches[b].n_stacks; i++)
			bytes += batches[b].stacks[i].frames_len;
		bytes += batches[b].n_lines * sizeof(struct line_value);
	}
	return bytes;
}

int sqlite_profiles__ingest(struct profile_store *s, const struct profile_batch *batches, size_t n)
{
	struct sqlite_profiles *p = to_sqlite(s);
	struct ingest_call call = {.batches = batches, .n = n};

	if (!n)
		return 0;
	return group_commit__submit(p->gc, &call, call_bytes(batches, n));
}

/* ---------------------------------------------------------- back-fill on open ---- */

static int read_series_id(sqlite3_stmt *st, void *record)
{
	*(int64_t *)record = sqlite3_column_int64(st, 0);
	return 0;
}

static int unmarked_series(struct sqlite_profiles *p, int64_t **ret, size_t *ret_n)
{
	static const struct sqlite_db_row_reader id_rows = {
	    .size = sizeof(int64_t),
	    .read = read_series_id,
	};

	return sqlite_db_read_rows(p->w[W_UNMARKED], &id_rows, ret, ret_n);
}

/* A database written before the tiers existed (or series that never had a fold): fold all
 * their closed periods now, once, so that reads can use the tiers at once. */
int sqlite_profiles__backfill_tiers(struct sqlite_profiles *p)
{
	int64_t *ids = NULL, now = time(NULL);
	size_t n = 0;
	int rc;

	rc = unmarked_series(p, &ids, &n);
	if (rc || !n) {
		free(ids);
		return rc;
	}
	rc = sqlite_db_step_done(p->w[W_BEGIN]);
	for (size_t i = 0; !rc && i < n; i++) {
		struct series_entry e = {
		    .id = ids[i], .hour_done = -1, .day_done = -1, .newest = -1};
		sqlite3_stmt *st = p->w[W_SERIES_SPAN];

		sqlite3_bind_int64(st, 1, e.id);
		rc = sqlite3_step(st) == SQLITE_ROW ? 0 : -EIO;
		if (!rc && sqlite3_column_type(st, 1) != SQLITE_NULL)
			e.newest = sqlite3_column_int64(st, 1);
		sqlite_db_reset(st);
		if (!rc)
			rc = fold_series(p, &e, now);
	}
	if (!rc)
		rc = sqlite_db_step_done(p->w[W_COMMIT]);
	if (rc && !sqlite3_get_autocommit(p->wdb))
		sqlite_db_step_done(p->w[W_ROLLBACK]);
	free(ids);
	return rc;
}
