// SPDX-License-Identifier: Apache-2.0
/* Profile store on SQLite: a stacks dictionary (one row per distinct stack, keyed by the
 * SHA-256 of its frames) and rollups merged in place with UPSERT. Concurrent uploads are group
 * committed: one transaction (one fsync) for all waiting, each acknowledged after it. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "group_commit.h"
#include "hash.h"
#include "stack_cache.h"
#include "store.h"
#include "store_sqlite_db.h"

/*
 * A rollup record (environment, service, deployment, type, bucket) is the set of rows of
 * `rollups` with one (series_id, bucket): series_id names the first four, and each row holds
 * one stack -> value. `buckets` counts the uploads merged into each record (heap averages).
 */
static const char schema[] =
	"CREATE TABLE IF NOT EXISTS stacks("
	" id INTEGER PRIMARY KEY, hash BLOB NOT NULL UNIQUE, n_frames INTEGER NOT NULL,"
	" frames TEXT NOT NULL);"
	"CREATE TABLE IF NOT EXISTS series("
	" id INTEGER PRIMARY KEY, environment TEXT NOT NULL, service TEXT NOT NULL,"
	" profile_type TEXT NOT NULL, deployment TEXT NOT NULL,"
	" UNIQUE(environment, service, profile_type, deployment));"
	"CREATE TABLE IF NOT EXISTS buckets("
	" series_id INTEGER NOT NULL, bucket INTEGER NOT NULL, uploads INTEGER NOT NULL,"
	" period INTEGER NOT NULL, last_upload INTEGER NOT NULL,"
	" PRIMARY KEY(series_id, bucket)) WITHOUT ROWID;"
	"CREATE TABLE IF NOT EXISTS rollups("
	" series_id INTEGER NOT NULL, bucket INTEGER NOT NULL, stack_id INTEGER NOT NULL,"
	" value INTEGER NOT NULL, PRIMARY KEY(series_id, bucket, stack_id)) WITHOUT ROWID;";

/* Frames are stored joined by '\n'; ingest replaces control characters in names. */
#define FRAME_SEP '\n'

enum {
	W_BEGIN,
	W_COMMIT,
	W_ROLLBACK,
	W_SERIES_GET,
	W_SERIES_ADD,
	W_STACK_GET,
	W_STACK_ADD,
	W_BUCKET_UPSERT,
	W_ROLLUP_UPSERT,
	W_RETAIN_ROLLUPS,
	W_RETAIN_BUCKETS,
	W_RETAIN_STACKS,
	W_COUNT
};

static const char *const writer_sql[W_COUNT] = {
	[W_BEGIN] = "BEGIN IMMEDIATE",
	[W_COMMIT] = "COMMIT",
	[W_ROLLBACK] = "ROLLBACK",
	[W_SERIES_GET] = "SELECT id FROM series WHERE environment = ?1 AND service = ?2"
			 " AND profile_type = ?3 AND deployment = ?4",
	[W_SERIES_ADD] = "INSERT INTO series(environment, service, profile_type, deployment)"
			 " VALUES(?1, ?2, ?3, ?4)",
	[W_STACK_GET] = "SELECT id FROM stacks WHERE hash = ?1",
	[W_STACK_ADD] = "INSERT INTO stacks(hash, n_frames, frames) VALUES(?1, ?2, ?3)",
	[W_BUCKET_UPSERT] = "INSERT INTO buckets(series_id, bucket, uploads, period, last_upload)"
			    " VALUES(?1, ?2, 1, ?3, ?4) ON CONFLICT(series_id, bucket) DO UPDATE"
			    " SET uploads = uploads + 1, period = excluded.period,"
			    " last_upload = max(last_upload, excluded.last_upload)",
	[W_ROLLUP_UPSERT] = "INSERT INTO rollups(series_id, bucket, stack_id, value)"
			    " VALUES(?1, ?2, ?3, ?4) ON CONFLICT(series_id, bucket, stack_id)"
			    " DO UPDATE SET value = value + excluded.value",
	[W_RETAIN_ROLLUPS] = "DELETE FROM rollups WHERE bucket + 300 <= ?1",
	[W_RETAIN_BUCKETS] = "DELETE FROM buckets WHERE bucket + 300 <= ?1",
	[W_RETAIN_STACKS] = "DELETE FROM stacks WHERE id NOT IN (SELECT stack_id FROM rollups)",
};

#define SERIES_MATCH                                                                             \
	"SELECT id FROM series WHERE environment = ?1 AND service = ?2 AND profile_type = ?3"    \
	" AND (?4 IS NULL OR deployment = ?4)"

enum { R_MERGE, R_UPLOADS, R_SERVICES, R_COUNT };

static const char *const reader_sql[R_COUNT] = {
	/* A bucket belongs to [start, end) when it overlaps it. */
	[R_MERGE] = "SELECT s.n_frames, s.frames, t.value FROM (SELECT stack_id, sum(value) AS value"
		    " FROM rollups WHERE series_id IN (" SERIES_MATCH ")"
		    " AND bucket > ?5 - 300 AND bucket < ?6 GROUP BY stack_id) t"
		    " JOIN stacks s ON s.id = t.stack_id",
	[R_UPLOADS] = "SELECT coalesce(sum(uploads), 0),"
		      " (SELECT period FROM buckets WHERE series_id IN (" SERIES_MATCH ")"
		      "  AND bucket > ?5 - 300 AND bucket < ?6 ORDER BY bucket DESC LIMIT 1)"
		      " FROM buckets WHERE series_id IN (" SERIES_MATCH ")"
		      " AND bucket > ?5 - 300 AND bucket < ?6",
	[R_SERVICES] = "SELECT s.service, s.profile_type, max(b.last_upload), sum(b.uploads)"
		       " FROM series s JOIN buckets b ON b.series_id = s.id"
		       " WHERE s.environment = ?1 GROUP BY s.service, s.profile_type"
		       " ORDER BY s.service, s.profile_type",
};

#define READERS 4
#define RECENT_STACKS_MAX (1u << 18) /* verified cache slots (at most half used) */
#define RECENT_TEXT_MAX (32u << 20)  /* verified cache frame text: 32 MiB */
#define FRAME_BYTES_EST 32 /* average frame name bytes, for the queue's byte bound */
#define STACK_CACHE_MAX (1u << 21) /* slots; cleared when more than half full */

struct reader {
	pthread_mutex_t lock;
	sqlite3 *db;
	sqlite3_stmt *st[R_COUNT];
};

struct stack_slot {
	uint8_t hash[SHA256_LEN];
	int64_t id; /* 0 = empty */
};

struct sqlite_profiles {
	struct profile_store base;
	char *path;
	pthread_mutex_t write_lock;
	sqlite3 *wdb;
	sqlite3_stmt *w[W_COUNT];
	struct stack_slot *cache; /* stack hash -> id of committed stacks */
	size_t cache_cap, cache_used;
	char *frames_buf; /* scratch for joining frames */
	size_t frames_cap;
	size_t *lens; /* scratch: frame lengths of one stack */
	size_t lens_cap;
	struct sha256_ctx *sha;
	struct stack_cache *recent; /* frames -> id of committed stacks, verified by text */
	struct merge_entry *merge; /* one group's rollup values, by (series, bucket, stack) */
	size_t n_merge, merge_cap;
	uint32_t *merge_slots; /* index + 1 into merge; 0 = empty */
	size_t merge_slots_cap;
	struct group_commit *gc;
	struct reader readers[READERS];
	unsigned int next_reader;
};

static size_t queue_max_entries = STORE_INGEST_QUEUE_ENTRIES;
static size_t queue_max_bytes = STORE_INGEST_QUEUE_BYTES;

void store_sqlite_set_ingest_queue(size_t max_entries, size_t max_bytes)
{
	queue_max_entries = max_entries ? max_entries : STORE_INGEST_QUEUE_ENTRIES;
	queue_max_bytes = max_bytes ? max_bytes : STORE_INGEST_QUEUE_BYTES;
}

static struct sqlite_profiles *to_sqlite(struct profile_store *s)
{
	return (struct sqlite_profiles *)s;
}

static void reset_stmt(sqlite3_stmt *st)
{
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

/* ------------------------------------------------------------------ stack id cache ---- */

static struct stack_slot *cache_slot(struct sqlite_profiles *p, const uint8_t *hash)
{
	uint64_t h;
	size_t mask = p->cache_cap - 1;

	memcpy(&h, hash, sizeof(h));
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		struct stack_slot *slot = &p->cache[i];

		if (!slot->id || memcmp(slot->hash, hash, SHA256_LEN) == 0)
			return slot;
	}
}

/* Also empties the verified cache: both may hold ids a rollback or retention removed. */
static void cache_clear(struct sqlite_profiles *p)
{
	memset(p->cache, 0, p->cache_cap * sizeof(*p->cache));
	p->cache_used = 0;
	stack_cache__clear(p->recent);
}

static int cache_grow(struct sqlite_profiles *p)
{
	struct stack_slot *old = p->cache;
	size_t old_cap = p->cache_cap;
	size_t new_cap = old_cap ? old_cap * 2 : 4096;

	if (new_cap > STACK_CACHE_MAX) {
		memset(p->cache, 0, p->cache_cap * sizeof(*p->cache)); /* bounded memory: forget, */
		p->cache_used = 0;					/* the dictionary has them */
		return 0;
	}
	p->cache = calloc(new_cap, sizeof(*p->cache));
	if (!p->cache) {
		p->cache = old;
		return -ENOMEM;
	}
	p->cache_cap = new_cap;
	p->cache_used = 0;
	for (size_t i = 0; i < old_cap; i++) {
		if (old[i].id) {
			*cache_slot(p, old[i].hash) = old[i];
			p->cache_used++;
		}
	}
	free(old);
	return 0;
}

static int cache_put(struct sqlite_profiles *p, const uint8_t *hash, int64_t id)
{
	struct stack_slot *slot;

	if ((p->cache_used + 1) * 2 > p->cache_cap && cache_grow(p))
		return -ENOMEM;
	slot = cache_slot(p, hash);
	if (!slot->id)
		p->cache_used++;
	memcpy(slot->hash, hash, SHA256_LEN);
	slot->id = id;
	return 0;
}

/* ------------------------------------------------------------------------ ingest ---- */

/* Frame lengths of one stack into p->lens; returns the joined length. */
static int frame_lengths(struct sqlite_profiles *p, const struct stack_value *sv, size_t *ret_len)
{
	size_t len = sv->n_frames ? sv->n_frames - 1 : 0;

	if (sv->n_frames > p->lens_cap) {
		size_t *lens = realloc(p->lens, sv->n_frames * sizeof(*lens));

		if (!lens)
			return -ENOMEM;
		p->lens = lens;
		p->lens_cap = sv->n_frames;
	}
	for (size_t i = 0; i < sv->n_frames; i++) {
		p->lens[i] = strlen(sv->frames[i]);
		len += p->lens[i];
	}
	*ret_len = len;
	return 0;
}

/* Joins the frames with FRAME_SEP into p->frames_buf. */
static int join_frames(struct sqlite_profiles *p, const struct stack_value *sv, size_t len)
{
	size_t at = 0;

	if (len + 1 > p->frames_cap) {
		char *buf = realloc(p->frames_buf, len + 1);

		if (!buf)
			return -ENOMEM;
		p->frames_buf = buf;
		p->frames_cap = len + 1;
	}
	for (size_t i = 0; i < sv->n_frames; i++) {
		if (i)
			p->frames_buf[at++] = FRAME_SEP;
		memcpy(p->frames_buf + at, sv->frames[i], p->lens[i]);
		at += p->lens[i];
	}
	p->frames_buf[at] = '\0';
	return 0;
}

/* Looks the stack (joined in p->frames_buf) up in the dictionary, inserting it the first time
 * it is seen. */
static int stack_lookup_or_add(struct sqlite_profiles *p, const struct stack_value *sv,
			       const uint8_t *hash, size_t len, int64_t *ret_id)
{
	sqlite3_stmt *st = p->w[W_STACK_GET];
	int rc;

	sqlite3_bind_blob(st, 1, hash, SHA256_LEN, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*ret_id = sqlite3_column_int64(st, 0);
	reset_stmt(st);
	if (rc == SQLITE_DONE) {
		st = p->w[W_STACK_ADD];
		sqlite3_bind_blob(st, 1, hash, SHA256_LEN, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, (int64_t)sv->n_frames);
		sqlite3_bind_text(st, 3, p->frames_buf, (int)len, SQLITE_STATIC);
		rc = sqlite3_step(st);
		if (rc == SQLITE_DONE)
			*ret_id = sqlite3_last_insert_rowid(p->wdb);
		reset_stmt(st);
	}
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -EIO;
}

/* The stack's dictionary id. A stack seen recently is found by its frames in the verified
 * cache; otherwise its frames are joined and hashed with SHA-256 (the dictionary's key). */
static int stack_id(struct sqlite_profiles *p, const struct stack_value *sv, int64_t *ret_id)
{
	uint8_t hash[SHA256_LEN];
	struct stack_slot *slot;
	uint64_t fast;
	size_t len;
	int rc;

	rc = frame_lengths(p, sv, &len);
	if (rc)
		return rc;
	if (len > INT32_MAX)
		return -E2BIG;
	fast = stack_cache__hash(sv->frames, p->lens, sv->n_frames);
	*ret_id = stack_cache__get(p->recent, fast, sv->frames, p->lens, sv->n_frames);
	if (*ret_id)
		return 0;
	rc = join_frames(p, sv, len);
	if (!rc)
		rc = sha256_with(p->sha, p->frames_buf, len, hash);
	if (rc)
		return rc;
	slot = cache_slot(p, hash);
	if (slot->id)
		*ret_id = slot->id;
	else if ((rc = stack_lookup_or_add(p, sv, hash, len, ret_id)) ||
		 (rc = cache_put(p, hash, *ret_id)))
		return rc;
	/* Cached before commit; a rollback clears both caches. */
	return stack_cache__put(p->recent, fast, p->frames_buf, len, sv->n_frames, *ret_id);
}

static int series_id(struct sqlite_profiles *p, const struct profile_batch *b, int64_t *ret_id)
{
	sqlite3_stmt *st = p->w[W_SERIES_GET];
	int rc;

	for (int pass = 0; pass < 2; pass++) {
		sqlite3_bind_text(st, 1, b->environment, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, b->service, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, b->profile_type, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, b->deployment ? b->deployment : "", -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
		if (pass == 0 && rc == SQLITE_ROW)
			*ret_id = sqlite3_column_int64(st, 0);
		else if (pass == 1 && rc == SQLITE_DONE)
			*ret_id = sqlite3_last_insert_rowid(p->wdb);
		reset_stmt(st);
		if (pass == 0 && rc == SQLITE_ROW)
			return 0;
		if (pass == 1)
			return rc == SQLITE_DONE ? 0 : -EIO;
		if (rc != SQLITE_DONE)
			return -EIO;
		st = p->w[W_SERIES_ADD];
	}
	return -EIO;
}

/* ---------------------------------------------------------- rollup merge of a group ---- */

/*
 * The uploads of one group commit often hit the same rollup record (one service, one bucket),
 * so their values are summed per (series, bucket, stack) in memory first and each sum is
 * written with one UPSERT, in key order (the rollups primary key), after all of them.
 */
struct merge_entry {
	int64_t series_id, bucket, stack_id, value;
};

static uint64_t merge_hash(int64_t series, int64_t bucket, int64_t stack)
{
	uint64_t h = (uint64_t)series * 0x9e3779b97f4a7c15ull ^ (uint64_t)bucket;

	h = (h ^ (uint64_t)stack) * 0xff51afd7ed558ccdull;
	return h ^ (h >> 29);
}

static void merge_reset(struct sqlite_profiles *p)
{
	if (p->n_merge)
		memset(p->merge_slots, 0, p->merge_slots_cap * sizeof(*p->merge_slots));
	p->n_merge = 0;
}

static int merge_grow(struct sqlite_profiles *p)
{
	size_t cap = p->merge_cap ? p->merge_cap * 2 : 4096;
	struct merge_entry *entries = realloc(p->merge, cap * sizeof(*entries));
	uint32_t *slots;

	if (!entries)
		return -ENOMEM;
	p->merge = entries;
	slots = calloc(cap * 2, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	free(p->merge_slots);
	p->merge_slots = slots;
	p->merge_slots_cap = cap * 2;
	p->merge_cap = cap;
	for (size_t i = 0; i < p->n_merge; i++) {
		const struct merge_entry *e = &p->merge[i];
		size_t s = merge_hash(e->series_id, e->bucket, e->stack_id) & (cap * 2 - 1);

		while (slots[s])
			s = (s + 1) & (cap * 2 - 1);
		slots[s] = (uint32_t)(i + 1);
	}
	return 0;
}

static int merge_add(struct sqlite_profiles *p, int64_t series, int64_t bucket, int64_t stack,
		     int64_t value)
{
	size_t mask, s;

	if (p->n_merge == p->merge_cap && merge_grow(p))
		return -ENOMEM;
	mask = p->merge_slots_cap - 1;
	for (s = merge_hash(series, bucket, stack) & mask; p->merge_slots[s]; s = (s + 1) & mask) {
		struct merge_entry *e = &p->merge[p->merge_slots[s] - 1];

		if (e->series_id == series && e->bucket == bucket && e->stack_id == stack)
			return __builtin_add_overflow(e->value, value, &e->value) ? -EOVERFLOW : 0;
	}
	p->merge[p->n_merge] = (struct merge_entry){ series, bucket, stack, value };
	p->merge_slots[s] = (uint32_t)++p->n_merge;
	return 0;
}

static int merge_cmp(const void *a, const void *b)
{
	const struct merge_entry *x = a, *y = b;

	if (x->series_id != y->series_id)
		return x->series_id < y->series_id ? -1 : 1;
	if (x->bucket != y->bucket)
		return x->bucket < y->bucket ? -1 : 1;
	return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

static int merge_flush(struct sqlite_profiles *p)
{
	sqlite3_stmt *st = p->w[W_ROLLUP_UPSERT];
	int rc = 0;

	if (p->n_merge > 1) /* merge may be NULL for a profile without samples */
		qsort(p->merge, p->n_merge, sizeof(*p->merge), merge_cmp);
	for (size_t i = 0; !rc && i < p->n_merge; i++) {
		sqlite3_bind_int64(st, 1, p->merge[i].series_id);
		sqlite3_bind_int64(st, 2, p->merge[i].bucket);
		sqlite3_bind_int64(st, 3, p->merge[i].stack_id);
		sqlite3_bind_int64(st, 4, p->merge[i].value);
		rc = sqlite_db_step_done(st);
	}
	return rc;
}

static int ingest_batch(struct sqlite_profiles *p, const struct profile_batch *b, int64_t now)
{
	sqlite3_stmt *st;
	int64_t sid = 0;
	int rc;

	rc = series_id(p, b, &sid);
	if (rc)
		return rc;
	st = p->w[W_BUCKET_UPSERT];
	sqlite3_bind_int64(st, 1, sid);
	sqlite3_bind_int64(st, 2, b->bucket_start);
	sqlite3_bind_int64(st, 3, b->period);
	sqlite3_bind_int64(st, 4, now);
	rc = sqlite_db_step_done(st);
	for (size_t i = 0; !rc && i < b->n_stacks; i++) {
		int64_t stack = 0;

		rc = stack_id(p, &b->stacks[i], &stack);
		if (!rc)
			rc = merge_add(p, sid, b->bucket_start, stack, b->stacks[i].value);
	}
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
	rc = sqlite_db_step_done(p->w[W_BEGIN]);
	for (size_t i = 0; !rc && i < n; i++) {
		const struct ingest_call *call = items[i]->data;

		for (size_t b = 0; !rc && b < call->n; b++)
			rc = ingest_batch(p, &call->batches[b], now);
	}
	if (!rc)
		rc = merge_flush(p);
	if (!rc)
		rc = sqlite_db_step_done(p->w[W_COMMIT]);
	if (rc) {
		if (!sqlite3_get_autocommit(p->wdb))
			sqlite_db_step_done(p->w[W_ROLLBACK]);
		cache_clear(p);
	}
	merge_reset(p);
	return rc;
}

/* The group commit's commit function: all items in one transaction; when that fails, each
 * item alone, so that one bad upload cannot fail the others. */
static void commit_group(void *ctx, struct gc_item **items, size_t n)
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
		bytes += sizeof(batches[b]) + batches[b].n_stacks * sizeof(struct stack_value);
		for (size_t i = 0; i < batches[b].n_stacks; i++)
			bytes += batches[b].stacks[i].n_frames * (sizeof(char *) + FRAME_BYTES_EST);
	}
	return bytes;
}

static int prof_ingest(struct profile_store *s, const struct profile_batch *batches, size_t n)
{
	struct sqlite_profiles *p = to_sqlite(s);
	struct ingest_call call = { .batches = batches, .n = n };

	if (!n)
		return 0;
	return group_commit__submit(p->gc, &call, call_bytes(batches, n));
}

static int prof_retention(struct profile_store *s, int64_t cutoff, int64_t *ret_deleted)
{
	struct sqlite_profiles *p = to_sqlite(s);
	int64_t deleted = 0;
	int rc;

	pthread_mutex_lock(&p->write_lock);
	rc = sqlite_db_step_done(p->w[W_BEGIN]);
	if (!rc) {
		sqlite3_bind_int64(p->w[W_RETAIN_ROLLUPS], 1, cutoff);
		rc = sqlite_db_step_done(p->w[W_RETAIN_ROLLUPS]);
		deleted = sqlite3_changes(p->wdb);
	}
	if (!rc) {
		sqlite3_bind_int64(p->w[W_RETAIN_BUCKETS], 1, cutoff);
		rc = sqlite_db_step_done(p->w[W_RETAIN_BUCKETS]);
	}
	/* Stacks no rollup refers to any more leave the dictionary (and the cache). */
	if (!rc && deleted > 0)
		rc = sqlite_db_step_done(p->w[W_RETAIN_STACKS]);
	if (!rc)
		rc = sqlite_db_step_done(p->w[W_COMMIT]);
	if (rc && !sqlite3_get_autocommit(p->wdb))
		sqlite_db_step_done(p->w[W_ROLLBACK]);
	if (rc || deleted > 0)
		cache_clear(p);
	pthread_mutex_unlock(&p->write_lock);
	if (!rc && ret_deleted)
		*ret_deleted = deleted;
	return rc;
}

/* ------------------------------------------------------------------------- reads ---- */

static struct reader *reader_acquire(struct sqlite_profiles *p)
{
	for (int i = 0; i < READERS; i++)
		if (pthread_mutex_trylock(&p->readers[i].lock) == 0)
			return &p->readers[i];
	struct reader *r = &p->readers[__atomic_fetch_add(&p->next_reader, 1, __ATOMIC_RELAXED) % READERS];

	pthread_mutex_lock(&r->lock);
	return r;
}

static void reader_release(struct reader *r)
{
	pthread_mutex_unlock(&r->lock);
}

static void bind_window(sqlite3_stmt *st, const struct window_query *q)
{
	sqlite3_bind_text(st, 1, q->environment, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, q->service, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, q->profile_type, -1, SQLITE_STATIC);
	if (q->deployment)
		sqlite3_bind_text(st, 4, q->deployment, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, q->start);
	sqlite3_bind_int64(st, 6, q->end);
}

static int split_frames(const char *text, int64_t n_frames, struct merged_stack *ms)
{
	const char *cur = text;

	ms->frames = calloc(n_frames > 0 ? (size_t)n_frames : 1, sizeof(char *));
	if (!ms->frames)
		return -ENOMEM;
	for (int64_t i = 0; i < n_frames; i++) {
		const char *end = strchr(cur, FRAME_SEP);
		size_t len = end ? (size_t)(end - cur) : strlen(cur);

		ms->frames[i] = strndup(cur, len);
		if (!ms->frames[i])
			return -ENOMEM;
		ms->n_frames++;
		if (!end)
			break;
		cur = end + 1;
	}
	return 0;
}

static int merge_rows(sqlite3_stmt *st, struct merged_window *ret)
{
	size_t cap = 0;
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct merged_stack *ms;

		if (ret->n_stacks == cap) {
			size_t new_cap = cap ? cap * 2 : 256;
			void *grown = realloc(ret->stacks, new_cap * sizeof(*ret->stacks));

			if (!grown)
				return -ENOMEM;
			ret->stacks = grown;
			cap = new_cap;
		}
		ms = &ret->stacks[ret->n_stacks++];
		memset(ms, 0, sizeof(*ms));
		ms->value = sqlite3_column_int64(st, 2);
		if (split_frames((const char *)sqlite3_column_text(st, 1), sqlite3_column_int64(st, 0),
				 ms))
			return -ENOMEM;
	}
	return rc == SQLITE_DONE ? 0 : -EIO;
}

static int prof_merge_window(struct profile_store *s, const struct window_query *q,
			     struct merged_window *ret)
{
	struct sqlite_profiles *p = to_sqlite(s);
	struct reader *r = reader_acquire(p);
	sqlite3_stmt *st;
	int rc;

	memset(ret, 0, sizeof(*ret));
	st = r->st[R_MERGE];
	bind_window(st, q);
	rc = merge_rows(st, ret);
	reset_stmt(st);
	if (!rc) {
		st = r->st[R_UPLOADS];
		bind_window(st, q);
		rc = sqlite3_step(st) == SQLITE_ROW ? 0 : -EIO;
		if (!rc) {
			ret->uploads = sqlite3_column_int64(st, 0);
			ret->period = sqlite3_column_int64(st, 1);
		}
		reset_stmt(st);
	}
	reader_release(r);
	if (rc)
		merged_window__release(ret);
	return rc;
}

static int prof_services(struct profile_store *s, const char *environment,
			 struct service_summary **ret, size_t *ret_n)
{
	struct sqlite_profiles *p = to_sqlite(s);
	struct reader *r = reader_acquire(p);
	sqlite3_stmt *st = r->st[R_SERVICES];
	struct service_summary *arr = NULL;
	size_t n = 0, cap = 0;
	int rc;

	sqlite3_bind_text(st, 1, environment, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == cap) {
			size_t new_cap = cap ? cap * 2 : 16;
			void *grown = realloc(arr, new_cap * sizeof(*arr));

			if (!grown) {
				rc = SQLITE_NOMEM;
				break;
			}
			arr = grown;
			cap = new_cap;
		}
		memset(&arr[n], 0, sizeof(arr[n]));
		sqlite_db_column_copy(st, 0, arr[n].service, sizeof(arr[n].service));
		sqlite_db_column_copy(st, 1, arr[n].profile_type, sizeof(arr[n].profile_type));
		arr[n].last_upload = sqlite3_column_int64(st, 2);
		arr[n].uploads = sqlite3_column_int64(st, 3);
		n++;
	}
	reset_stmt(st);
	reader_release(r);
	if (rc != SQLITE_DONE) {
		free(arr);
		return rc == SQLITE_NOMEM ? -ENOMEM : -EIO;
	}
	*ret = arr;
	*ret_n = n;
	return 0;
}

static int prof_size_bytes(struct profile_store *s, int64_t *ret_bytes)
{
	struct sqlite_profiles *p = to_sqlite(s);
	char wal[4096];
	struct stat sb;
	int64_t total = 0;

	if (stat(p->path, &sb) == 0)
		total += sb.st_size;
	snprintf(wal, sizeof(wal), "%s-wal", p->path);
	if (stat(wal, &sb) == 0)
		total += sb.st_size;
	*ret_bytes = total;
	return 0;
}

/* ------------------------------------------------------------------ open / close ---- */

static void prof_close(struct profile_store *s)
{
	struct sqlite_profiles *p = to_sqlite(s);

	if (!p)
		return;
	for (int i = 0; i < READERS; i++) {
		sqlite_db_finalize_all(p->readers[i].st, R_COUNT);
		sqlite3_close(p->readers[i].db);
		pthread_mutex_destroy(&p->readers[i].lock);
	}
	group_commit__free(p->gc);
	sqlite_db_finalize_all(p->w, W_COUNT);
	sqlite3_close(p->wdb);
	pthread_mutex_destroy(&p->write_lock);
	free(p->cache);
	free(p->frames_buf);
	free(p->lens);
	free(p->merge);
	free(p->merge_slots);
	sha256_ctx__free(p->sha);
	stack_cache__free(p->recent);
	free(p->path);
	free(p);
}

static const struct profile_store_ops sqlite_profile_ops = {
	.close = prof_close,
	.ingest = prof_ingest,
	.merge_window = prof_merge_window,
	.services = prof_services,
	.retention = prof_retention,
	.size_bytes = prof_size_bytes,
};

int profile_store_sqlite_open(const char *path, struct profile_store **ret)
{
	struct sqlite_profiles *p;
	int err;

	*ret = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->base.ops = &sqlite_profile_ops;
	pthread_mutex_init(&p->write_lock, NULL);
	for (int i = 0; i < READERS; i++)
		pthread_mutex_init(&p->readers[i].lock, NULL);
	p->path = strdup(path);
	err = p->path ? 0 : -ENOMEM;
	if (!err)
		err = sqlite_db_open(path, schema, &p->wdb);
	if (!err)
		err = sqlite_db_prepare_all(p->wdb, writer_sql, p->w, W_COUNT);
	if (!err)
		err = cache_grow(p);
	if (!err) {
		p->sha = sha256_ctx__new();
		p->recent = stack_cache__new(RECENT_STACKS_MAX, RECENT_TEXT_MAX);
		p->gc = group_commit__new(queue_max_entries, queue_max_bytes, commit_group, p);
		err = p->sha && p->recent && p->gc ? 0 : -ENOMEM;
	}
	for (int i = 0; !err && i < READERS; i++) {
		err = sqlite_db_open(path, NULL, &p->readers[i].db);
		if (!err)
			err = sqlite_db_prepare_all(p->readers[i].db, reader_sql, p->readers[i].st,
						    R_COUNT);
	}
	if (err) {
		prof_close(&p->base);
		return err;
	}
	*ret = &p->base;
	return 0;
}
