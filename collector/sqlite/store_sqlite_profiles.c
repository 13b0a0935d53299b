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

#include "../group_commit.h"
#include "../hash.h"
#include "../stack_cache.h"
#include "../store.h"
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
	" value INTEGER NOT NULL, PRIMARY KEY(series_id, bucket, stack_id)) WITHOUT ROWID;"
	/* Coarser tiers of the same rollups (bucket = the hour's or day's start), folded from the
	 * five-minute rows once a period is closed; tier_marks says how far: every hour before
	 * hour_done and every day before day_done is complete and exact. */
	"CREATE TABLE IF NOT EXISTS rollups_hour("
	" series_id INTEGER NOT NULL, bucket INTEGER NOT NULL, stack_id INTEGER NOT NULL,"
	" value INTEGER NOT NULL, PRIMARY KEY(series_id, bucket, stack_id)) WITHOUT ROWID;"
	"CREATE TABLE IF NOT EXISTS rollups_day("
	" series_id INTEGER NOT NULL, bucket INTEGER NOT NULL, stack_id INTEGER NOT NULL,"
	" value INTEGER NOT NULL, PRIMARY KEY(series_id, bucket, stack_id)) WITHOUT ROWID;"
	"CREATE TABLE IF NOT EXISTS tier_marks("
	" series_id INTEGER PRIMARY KEY, hour_done INTEGER NOT NULL, day_done INTEGER NOT NULL);"
	/* Upload ids already merged, per environment, so that a retried upload counts once;
	 * written in the transaction of the merge, expired by retention. */
	"CREATE TABLE IF NOT EXISTS uploads("
	" environment TEXT NOT NULL, upload_id TEXT NOT NULL, received_at INTEGER NOT NULL,"
	" PRIMARY KEY(environment, upload_id)) WITHOUT ROWID;"
	"CREATE INDEX IF NOT EXISTS uploads_received ON uploads(received_at);";

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
	W_RETAIN_UPLOADS,
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
	[W_UPLOAD_CLAIM] = "INSERT INTO uploads(environment, upload_id, received_at)"
			   " VALUES(?1, ?2, ?3) ON CONFLICT(environment, upload_id) DO NOTHING",
	[W_BUCKET_UPSERT] = "INSERT INTO buckets(series_id, bucket, uploads, period, last_upload)"
			    " VALUES(?1, ?2, 1, ?3, ?4) ON CONFLICT(series_id, bucket) DO UPDATE"
			    " SET uploads = uploads + 1, period = excluded.period,"
			    " last_upload = max(last_upload, excluded.last_upload)",
	[W_ROLLUP_UPSERT] = "INSERT INTO rollups(series_id, bucket, stack_id, value)"
			    " VALUES(?1, ?2, ?3, ?4) ON CONFLICT(series_id, bucket, stack_id)"
			    " DO UPDATE SET value = value + excluded.value",
	[W_HOUR_UPSERT] = "INSERT INTO rollups_hour(series_id, bucket, stack_id, value)"
			  " VALUES(?1, ?2, ?3, ?4) ON CONFLICT(series_id, bucket, stack_id)"
			  " DO UPDATE SET value = value + excluded.value",
	[W_DAY_UPSERT] = "INSERT INTO rollups_day(series_id, bucket, stack_id, value)"
			 " VALUES(?1, ?2, ?3, ?4) ON CONFLICT(series_id, bucket, stack_id)"
			 " DO UPDATE SET value = value + excluded.value",
	[W_ROLLUP_ADD] = "UPDATE rollups SET value = value + ?4"
			 " WHERE series_id = ?1 AND bucket = ?2 AND stack_id = ?3",
	[W_HOUR_ADD] = "UPDATE rollups_hour SET value = value + ?4"
		       " WHERE series_id = ?1 AND bucket = ?2 AND stack_id = ?3",
	[W_DAY_ADD] = "UPDATE rollups_day SET value = value + ?4"
		      " WHERE series_id = ?1 AND bucket = ?2 AND stack_id = ?3",
	[W_SERIES_SPAN] = "SELECT (SELECT min(bucket) FROM buckets WHERE series_id = ?1),"
			  " (SELECT max(bucket) FROM buckets WHERE series_id = ?1)",
	[W_MARKS_GET] = "SELECT hour_done, day_done FROM tier_marks WHERE series_id = ?1",
	[W_MARKS_PUT] = "INSERT INTO tier_marks(series_id, hour_done, day_done) VALUES(?1, ?2, ?3)"
			" ON CONFLICT(series_id) DO UPDATE SET hour_done = excluded.hour_done,"
			" day_done = excluded.day_done",
	/* Periods at or past the mark have no tier rows yet, so these only insert; a stray row
	 * is overwritten with the exact sum rather than failing the group's ingest. */
	[W_FOLD_HOURS] = "INSERT INTO rollups_hour(series_id, bucket, stack_id, value)"
			 " SELECT ?1, bucket - bucket % 3600, stack_id, sum(value) FROM rollups"
			 " WHERE series_id = ?1 AND bucket >= ?2 AND bucket < ?3 GROUP BY 2, 3"
			 " ON CONFLICT(series_id, bucket, stack_id) DO UPDATE SET value = excluded.value",
	[W_FOLD_DAYS] = "INSERT INTO rollups_day(series_id, bucket, stack_id, value)"
			" SELECT ?1, bucket - bucket % 86400, stack_id, sum(value) FROM rollups_hour"
			" WHERE series_id = ?1 AND bucket >= ?2 AND bucket < ?3 GROUP BY 2, 3"
			" ON CONFLICT(series_id, bucket, stack_id) DO UPDATE SET value = excluded.value",
	[W_UNMARKED] = "SELECT id FROM series WHERE id NOT IN (SELECT series_id FROM tier_marks)",
	[W_RETAIN_ROLLUPS] = "DELETE FROM rollups WHERE bucket + 300 <= ?1",
	[W_RETAIN_HOURS] = "DELETE FROM rollups_hour WHERE bucket < ?1",
	[W_RETAIN_DAYS] = "DELETE FROM rollups_day WHERE bucket < ?1",
	/* The hour (day) the cutoff falls in, rebuilt from its five-minute rows that remain. */
	[W_REFOLD_HOUR] = "INSERT INTO rollups_hour(series_id, bucket, stack_id, value)"
			  " SELECT r.series_id, ?1, r.stack_id, sum(r.value) FROM tier_marks m"
			  " JOIN rollups r ON r.series_id = m.series_id AND r.bucket >= ?1"
			  " AND r.bucket < ?1 + 3600 WHERE m.hour_done > ?1"
			  " GROUP BY r.series_id, r.stack_id",
	[W_REFOLD_DAY] = "INSERT INTO rollups_day(series_id, bucket, stack_id, value)"
			 " SELECT r.series_id, ?1, r.stack_id, sum(r.value) FROM tier_marks m"
			 " JOIN rollups r ON r.series_id = m.series_id AND r.bucket >= ?1"
			 " AND r.bucket < ?1 + 86400 WHERE m.day_done > ?1"
			 " GROUP BY r.series_id, r.stack_id",
	[W_RETAIN_BUCKETS] = "DELETE FROM buckets WHERE bucket + 300 <= ?1",
	[W_RETAIN_STACKS] = "DELETE FROM stacks WHERE id NOT IN (SELECT stack_id FROM rollups)",
	[W_RETAIN_UPLOADS] = "DELETE FROM uploads WHERE received_at < ?1",
};

#define SERIES_MATCH                                                                             \
	"SELECT id FROM series WHERE environment = ?1 AND service = ?2 AND profile_type = ?3"    \
	" AND (?4 IS NULL OR deployment = ?4)"

/* One [from, to) range of one tier of one series: each its own index range scan. */
#define TIER_RANGE(table, from, to)                                                              \
	"SELECT stack_id, value FROM " table " WHERE series_id = ?1 AND bucket >= " from         \
	" AND bucket < " to

enum { R_BEGIN, R_END, R_SERIES, R_TIERS, R_STACK, R_UPLOADS, R_SERVICES, R_COUNT };

static const char *const reader_sql[R_COUNT] = {
	[R_BEGIN] = "BEGIN",
	[R_END] = "COMMIT",
	[R_SERIES] = "SELECT s.id, coalesce(m.hour_done, 0), coalesce(m.day_done, 0) FROM series s"
		     " LEFT JOIN tier_marks m ON m.series_id = s.id WHERE s.environment = ?1"
		     " AND s.service = ?2 AND s.profile_type = ?3"
		     " AND (?4 IS NULL OR s.deployment = ?4)",
	/* Five-minute edges, whole hours, whole days: UNION ALL of simple ranges, never
	 * (range OR range), which SQLite plans as a scan of the whole series. */
	[R_TIERS] = TIER_RANGE("rollups", "?2", "?3") " UNION ALL " TIER_RANGE("rollups", "?4", "?5")
		    " UNION ALL " TIER_RANGE("rollups_hour", "?6", "?7")
		    " UNION ALL " TIER_RANGE("rollups_hour", "?8", "?9")
		    " UNION ALL " TIER_RANGE("rollups_day", "?10", "?11"),
	[R_STACK] = "SELECT n_frames, frames FROM stacks WHERE id = ?1",
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
#define SERIES_CACHE_MAX 4096	   /* series entries; cleared between groups past this */
#define HOUR 3600
#define DAY 86400
/* A period is folded into its tier this long after its end (and after the series' newest
 * bucket has passed it), so that ordinary late uploads still land before the fold; a later
 * one is also added to the tier rows, just less cheaply. */
#define FOLD_LAG_S 3600

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
	uint64_t *name_hashes; /* scratch: frame name hashes of one stack */
	size_t lens_cap;
	struct name_memo *memo; /* frame name pointer -> length and hash, for one group */
	size_t memo_cap, memo_used;
	uint32_t memo_gen;
	struct sha256_ctx *sha;
	struct stack_cache *recent; /* frames -> id of committed stacks, verified by text */
	struct merge_entry *merge; /* one group's rollup values, by (series, bucket, stack) */
	size_t n_merge, merge_cap;
	uint32_t *merge_slots; /* index + 1 into merge; 0 = empty */
	size_t merge_slots_cap;
	struct series_entry **series; /* open addressing by key hash */
	size_t series_cap, n_series;
	struct series_entry **touched; /* series written by the group being committed */
	size_t n_touched, touched_cap;
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

/*
 * An upload's stacks share their frame name strings (one pointer per distinct name), so each
 * name is measured and hashed once per group, found again by its pointer. Valid for one group
 * only (the uploads' memory lives until they are acknowledged): a new generation forgets it.
 */
struct name_memo {
	const char *ptr;
	uint64_t hash;
	uint32_t len;
	uint32_t gen;
};

static void memo_new_group(struct sqlite_profiles *p)
{
	p->memo_used = 0;
	if (++p->memo_gen == 0) { /* wrapped: old slots could look current */
		memset(p->memo, 0, p->memo_cap * sizeof(*p->memo));
		p->memo_gen = 1;
	}
}

static size_t memo_index(const char *ptr, size_t mask)
{
	uint64_t h = (uint64_t)(uintptr_t)ptr * 0x9e3779b97f4a7c15ull;

	return (h ^ (h >> 32)) & mask;
}

static int memo_grow(struct sqlite_profiles *p)
{
	size_t cap = p->memo_cap ? p->memo_cap * 2 : 4096;
	struct name_memo *memo = calloc(cap, sizeof(*memo));

	if (!memo)
		return -ENOMEM;
	for (size_t i = 0; i < p->memo_cap; i++) {
		const struct name_memo *m = &p->memo[i];
		size_t s;

		if (m->gen != p->memo_gen)
			continue;
		for (s = memo_index(m->ptr, cap - 1); memo[s].gen; s = (s + 1) & (cap - 1))
			;
		memo[s] = *m;
	}
	free(p->memo);
	p->memo = memo;
	p->memo_cap = cap;
	return 0;
}

static int memo_get(struct sqlite_profiles *p, const char *name, size_t *ret_len,
		    uint64_t *ret_hash)
{
	struct name_memo *m;
	size_t mask, s, len;

	if ((p->memo_used + 1) * 2 > p->memo_cap && memo_grow(p))
		return -ENOMEM;
	mask = p->memo_cap - 1;
	for (s = memo_index(name, mask); p->memo[s].gen == p->memo_gen; s = (s + 1) & mask) {
		m = &p->memo[s];
		if (m->ptr == name) {
			*ret_len = m->len;
			*ret_hash = m->hash;
			return 0;
		}
	}
	len = strlen(name);
	if (len > UINT32_MAX)
		return -E2BIG;
	m = &p->memo[s];
	*m = (struct name_memo){ .ptr = name, .hash = stack_cache__name_hash(name, len),
				 .len = (uint32_t)len, .gen = p->memo_gen };
	p->memo_used++;
	*ret_len = len;
	*ret_hash = m->hash;
	return 0;
}

/* Frame lengths and name hashes of one stack into p->lens and p->name_hashes; returns the
 * joined length. */
static int frame_lengths(struct sqlite_profiles *p, const struct stack_value *sv, size_t *ret_len)
{
	size_t len = sv->n_frames ? sv->n_frames - 1 : 0;

	if (sv->n_frames > p->lens_cap) {
		size_t *lens = realloc(p->lens, sv->n_frames * sizeof(*lens));
		uint64_t *hashes;

		if (!lens)
			return -ENOMEM;
		p->lens = lens;
		hashes = realloc(p->name_hashes, sv->n_frames * sizeof(*hashes));
		if (!hashes)
			return -ENOMEM;
		p->name_hashes = hashes;
		p->lens_cap = sv->n_frames;
	}
	for (size_t i = 0; i < sv->n_frames; i++) {
		int rc = memo_get(p, sv->frames[i], &p->lens[i], &p->name_hashes[i]);

		if (rc)
			return rc;
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
	sqlite_db_reset(st);
	if (rc == SQLITE_DONE) {
		st = p->w[W_STACK_ADD];
		sqlite3_bind_blob(st, 1, hash, SHA256_LEN, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, (int64_t)sv->n_frames);
		sqlite3_bind_text(st, 3, p->frames_buf, (int)len, SQLITE_STATIC);
		rc = sqlite3_step(st);
		if (rc == SQLITE_DONE)
			*ret_id = sqlite3_last_insert_rowid(p->wdb);
		sqlite_db_reset(st);
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
	fast = stack_cache__hash_names(p->name_hashes, sv->n_frames);
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

/* ------------------------------------------------------------------- series cache ---- */

/* A series' id and tier marks, kept while the writer runs so that an upload costs no series
 * lookup. Emptied after a rollback (the id or the marks may not have been committed). */
struct series_entry {
	uint64_t hash;
	int64_t id;
	int64_t hour_done, day_done; /* tier marks; -1 until the series has a tier_marks row */
	int64_t newest;		     /* newest bucket written, -1 when none */
	bool touched;
	size_t key_len;
	char key[]; /* environment, service, profile type, deployment; each NUL-terminated */
};

static int64_t floor_to(int64_t t, int64_t unit)
{
	return t - ((t % unit) + unit) % unit;
}

static int64_t ceil_to(int64_t t, int64_t unit)
{
	return -floor_to(-t, unit);
}

static void series_cache_clear(struct sqlite_profiles *p)
{
	for (size_t i = 0; i < p->series_cap; i++) {
		free(p->series[i]);
		p->series[i] = NULL;
	}
	p->n_series = 0;
	p->n_touched = 0;
}

static size_t series_key(const struct profile_batch *b, char *buf, size_t len)
{
	const char *parts[4] = { b->environment, b->service, b->profile_type,
				 b->deployment ? b->deployment : "" };
	size_t at = 0;

	for (int i = 0; i < 4; i++) {
		size_t n = strlen(parts[i]) + 1;

		if (n > len - at)
			return 0;
		memcpy(buf + at, parts[i], n);
		at += n;
	}
	return at;
}

static uint64_t key_hash(const char *key, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)key[i]) * 0x100000001b3ull;
	return h ^ (h >> 31);
}

static struct series_entry **series_slot(struct series_entry **table, size_t cap, uint64_t h,
					 const char *key, size_t len)
{
	for (size_t i = h & (cap - 1);; i = (i + 1) & (cap - 1)) {
		struct series_entry *e = table[i];

		if (!e || (e->hash == h && e->key_len == len && memcmp(e->key, key, len) == 0))
			return &table[i];
	}
}

static int series_cache_grow(struct sqlite_profiles *p)
{
	size_t cap = p->series_cap ? p->series_cap * 2 : 64;
	struct series_entry **table = calloc(cap, sizeof(*table));

	if (!table)
		return -ENOMEM;
	for (size_t i = 0; i < p->series_cap; i++) {
		struct series_entry *e = p->series[i];

		if (e)
			*series_slot(table, cap, e->hash, e->key, e->key_len) = e;
	}
	free(p->series);
	p->series = table;
	p->series_cap = cap;
	return 0;
}

/* The series' id (created when new), its tier marks and its newest bucket, from the store. */
static int series_load(struct sqlite_profiles *p, const struct profile_batch *b,
		       struct series_entry *e)
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
			e->id = sqlite3_column_int64(st, 0);
		else if (pass == 1 && rc == SQLITE_DONE)
			e->id = sqlite3_last_insert_rowid(p->wdb);
		sqlite_db_reset(st);
		if ((pass == 0 && rc == SQLITE_ROW) || pass == 1)
			break;
		if (rc != SQLITE_DONE)
			return -EIO;
		st = p->w[W_SERIES_ADD];
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return -EIO;
	e->hour_done = e->day_done = e->newest = -1;
	st = p->w[W_MARKS_GET];
	sqlite3_bind_int64(st, 1, e->id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		e->hour_done = sqlite3_column_int64(st, 0);
		e->day_done = sqlite3_column_int64(st, 1);
	}
	sqlite_db_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return -EIO;
	st = p->w[W_SERIES_SPAN];
	sqlite3_bind_int64(st, 1, e->id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 1) != SQLITE_NULL)
		e->newest = sqlite3_column_int64(st, 1);
	sqlite_db_reset(st);
	return rc == SQLITE_ROW ? 0 : -EIO;
}

static int series_get(struct sqlite_profiles *p, const struct profile_batch *b,
		      struct series_entry **ret)
{
	char key[4 * STORE_NAME_MAX + 4];
	size_t len = series_key(b, key, sizeof(key));
	struct series_entry **slot, *e;
	uint64_t h;
	int rc;

	if (!len)
		return -EINVAL;
	h = key_hash(key, len);
	if ((p->n_series + 1) * 2 > p->series_cap && series_cache_grow(p))
		return -ENOMEM;
	slot = series_slot(p->series, p->series_cap, h, key, len);
	if (*slot) {
		*ret = *slot;
		return 0;
	}
	e = calloc(1, sizeof(*e) + len);
	if (!e)
		return -ENOMEM;
	e->hash = h;
	e->key_len = len;
	memcpy(e->key, key, len);
	rc = series_load(p, b, e);
	if (rc) {
		free(e);
		return rc;
	}
	*slot = e;
	p->n_series++;
	*ret = e;
	return 0;
}

static int series_touch(struct sqlite_profiles *p, struct series_entry *e)
{
	if (e->touched)
		return 0;
	if (p->n_touched == p->touched_cap) {
		size_t cap = p->touched_cap ? p->touched_cap * 2 : 16;
		struct series_entry **grown = realloc(p->touched, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		p->touched = grown;
		p->touched_cap = cap;
	}
	p->touched[p->n_touched++] = e;
	e->touched = true;
	return 0;
}

/* ---------------------------------------------------------- rollup merge of a group ---- */

/*
 * The uploads of one group commit often hit the same rollup record (one service, one bucket),
 * so their values are summed per (series, bucket, stack) in memory first and each sum is
 * written with one UPSERT, in key order (the rollups primary key), after all of them.
 */
enum tier { TIER_5MIN, TIER_HOUR, TIER_DAY, TIERS };

struct merge_entry {
	int64_t series_id, bucket, stack_id, value;
	enum tier tier; /* bucket is the hour's or the day's start for the coarser tiers */
};

static uint64_t merge_hash(enum tier tier, int64_t series, int64_t bucket, int64_t stack)
{
	uint64_t h = ((uint64_t)series * 0x9e3779b97f4a7c15ull ^ (uint64_t)bucket) + tier;

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
		size_t s = merge_hash(e->tier, e->series_id, e->bucket, e->stack_id) & (cap * 2 - 1);

		while (slots[s])
			s = (s + 1) & (cap * 2 - 1);
		slots[s] = (uint32_t)(i + 1);
	}
	return 0;
}

static int merge_add(struct sqlite_profiles *p, enum tier tier, int64_t series, int64_t bucket,
		     int64_t stack, int64_t value)
{
	size_t mask, s;

	if (p->n_merge == p->merge_cap && merge_grow(p))
		return -ENOMEM;
	mask = p->merge_slots_cap - 1;
	for (s = merge_hash(tier, series, bucket, stack) & mask; p->merge_slots[s];
	     s = (s + 1) & mask) {
		struct merge_entry *e = &p->merge[p->merge_slots[s] - 1];

		if (e->tier == tier && e->series_id == series && e->bucket == bucket &&
		    e->stack_id == stack)
			return __builtin_add_overflow(e->value, value, &e->value) ? -EOVERFLOW : 0;
	}
	p->merge[p->n_merge] = (struct merge_entry){ series, bucket, stack, value, tier };
	p->merge_slots[s] = (uint32_t)++p->n_merge;
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

/* Most values add to a row that exists (uploads keep hitting the current bucket), so each is
 * an UPDATE first (one index seek), and an UPSERT only when no row was there. */
static int merge_flush(struct sqlite_profiles *p)
{
	int rc = 0;

	if (p->n_merge > 1) /* merge may be NULL for a profile without samples */
		qsort(p->merge, p->n_merge, sizeof(*p->merge), merge_cmp);
	for (size_t i = 0; !rc && i < p->n_merge; i++) {
		const struct merge_entry *e = &p->merge[i];
		sqlite3_stmt *st = p->w[W_ROLLUP_ADD + e->tier];

		bind_entry(st, e);
		rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
		sqlite3_reset(st);
		if (rc || sqlite3_changes(p->wdb) > 0)
			continue;
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
			return rc; /* a duplicate adds nothing, not even to the bucket's upload count */
	}
	rc = series_get(p, b, &e);
	if (!rc)
		rc = series_touch(p, e);
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
	for (size_t i = 0; !rc && i < b->n_stacks; i++) {
		int64_t stack = 0;

		rc = stack_id(p, &b->stacks[i], &stack);
		if (!rc)
			rc = merge_value(p, e, b->bucket_start, stack, b->stacks[i].value);
	}
	return rc;
}

/* ------------------------------------------------------------------ tier folding ---- */

static int fold_range(struct sqlite_profiles *p, int stmt, int64_t series, int64_t from,
		      int64_t to)
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
	memo_new_group(p);
	if (p->n_series > SERIES_CACHE_MAX)
		series_cache_clear(p); /* bounded; entries are reloaded on use */
	for (size_t i = 0; i < n; i++) { /* a failed group is retried item by item: start clean */
		const struct ingest_call *call = items[i]->data;

		for (size_t b = 0; b < call->n; b++)
			if (call->batches[b].ret_duplicate)
				*call->batches[b].ret_duplicate = false;
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
	if (rc) {
		if (!sqlite3_get_autocommit(p->wdb))
			sqlite_db_step_done(p->w[W_ROLLBACK]);
		cache_clear(p);
		series_cache_clear(p);
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

/* After the five-minute rows before `kept` went: drops the tier rows of periods that began
 * before it, and rebuilds the one period it cuts from its remaining rows. */
static int retain_tier(struct sqlite_profiles *p, int del, int refold, int64_t unit, int64_t kept)
{
	int64_t cut = floor_to(kept, unit);
	int rc;

	sqlite3_bind_int64(p->w[del], 1, ceil_to(kept, unit));
	rc = sqlite_db_step_done(p->w[del]);
	if (!rc && cut < kept) {
		sqlite3_bind_int64(p->w[refold], 1, cut);
		rc = sqlite_db_step_done(p->w[refold]);
	}
	return rc;
}

/* Upload ids are needed only while a sender may still retry: at most UPLOAD_ID_TTL_S. */
static int retain_upload_ids(struct sqlite_profiles *p, int64_t cutoff)
{
	int64_t ttl_cutoff = (int64_t)time(NULL) - UPLOAD_ID_TTL_S;

	sqlite3_bind_int64(p->w[W_RETAIN_UPLOADS], 1, cutoff > ttl_cutoff ? cutoff : ttl_cutoff);
	return sqlite_db_step_done(p->w[W_RETAIN_UPLOADS]);
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
	if (!rc)
		rc = retain_tier(p, W_RETAIN_HOURS, W_REFOLD_HOUR, HOUR, floor_to(cutoff, BUCKET_SECONDS));
	if (!rc)
		rc = retain_tier(p, W_RETAIN_DAYS, W_REFOLD_DAY, DAY, floor_to(cutoff, BUCKET_SECONDS));
	if (!rc) {
		sqlite3_bind_int64(p->w[W_RETAIN_BUCKETS], 1, cutoff);
		rc = sqlite_db_step_done(p->w[W_RETAIN_BUCKETS]);
	}
	/* Stacks no rollup refers to any more leave the dictionary (and the cache). */
	if (!rc && deleted > 0)
		rc = sqlite_db_step_done(p->w[W_RETAIN_STACKS]);
	if (!rc)
		rc = retain_upload_ids(p, cutoff);
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

/* ?1 to ?4: the series a window query matches (every deployment when it names none). */
static void bind_series_match(sqlite3_stmt *st, const struct window_query *q)
{
	sqlite3_bind_text(st, 1, q->environment, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, q->service, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, q->profile_type, -1, SQLITE_STATIC);
	if (q->deployment)
		sqlite3_bind_text(st, 4, q->deployment, -1, SQLITE_STATIC);
}

static void bind_window(sqlite3_stmt *st, const struct window_query *q)
{
	bind_series_match(st, q);
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

/* Stack id -> summed value over every series and tier range of a window. */
struct window_sum {
	int64_t *ids, *values;
	size_t n, cap;
	uint32_t *slots; /* index + 1; 0 = empty */
	size_t n_slots;
};

static void window_sum_free(struct window_sum *w)
{
	free(w->ids);
	free(w->values);
	free(w->slots);
}

static int window_sum_grow(struct window_sum *w)
{
	size_t cap = w->cap ? w->cap * 2 : 1024;
	int64_t *ids = realloc(w->ids, cap * sizeof(*ids));
	int64_t *values;
	uint32_t *slots;

	if (!ids)
		return -ENOMEM;
	w->ids = ids;
	values = realloc(w->values, cap * sizeof(*values));
	if (!values)
		return -ENOMEM;
	w->values = values;
	slots = calloc(cap * 2, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < w->n; i++) {
		size_t s = merge_hash(0, 0, 0, w->ids[i]) & (cap * 2 - 1);

		while (slots[s])
			s = (s + 1) & (cap * 2 - 1);
		slots[s] = (uint32_t)(i + 1);
	}
	free(w->slots);
	w->slots = slots;
	w->n_slots = cap * 2;
	w->cap = cap;
	return 0;
}

static int window_sum_add(struct window_sum *w, int64_t id, int64_t value)
{
	size_t s, mask;

	if (w->n == w->cap && window_sum_grow(w))
		return -ENOMEM;
	mask = w->n_slots - 1;
	for (s = merge_hash(0, 0, 0, id) & mask; w->slots[s]; s = (s + 1) & mask) {
		size_t i = w->slots[s] - 1;

		if (w->ids[i] == id)
			return __builtin_add_overflow(w->values[i], value, &w->values[i]) ? -EOVERFLOW
											     : 0;
	}
	w->ids[w->n] = id;
	w->values[w->n] = value;
	w->slots[s] = (uint32_t)++w->n;
	return 0;
}

struct series_marks {
	int64_t id, hour_done, day_done;
};

/*
 * Splits the buckets overlapping [start, end) of one series into five-minute edges, whole
 * hours and whole days (only periods its marks say are folded) and binds R_TIERS' ranges.
 */
static void bind_tiers(sqlite3_stmt *st, const struct series_marks *m,
		       const struct window_query *q)
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
	r[0] = s, r[1] = h0, r[2] = h1, r[3] = e; /* five-minute edges */
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

static int window_series(struct reader *r, const struct window_query *q,
			 struct series_marks **ret, size_t *ret_n)
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
	sqlite3_stmt *st = r->st[R_STACK];
	int rc = 0;

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
			rc = split_frames((const char *)sqlite3_column_text(st, 1),
					  sqlite3_column_int64(st, 0), ms);
		} else {
			rc = -EIO; /* every rollup's stack is in the dictionary */
		}
		sqlite_db_reset(st);
	}
	return rc;
}

static int prof_merge_window(struct profile_store *s, const struct window_query *q,
			     struct merged_window *ret)
{
	struct sqlite_profiles *p = to_sqlite(s);
	struct reader *r = reader_acquire(p);
	struct window_sum w = { 0 };
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
	reader_release(r);
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

static int prof_services(struct profile_store *s, const char *environment,
			 struct service_summary **ret, size_t *ret_n)
{
	static const struct sqlite_db_row_reader service_rows = {
		.size = sizeof(struct service_summary),
		.read = read_service_summary,
	};
	struct reader *r = reader_acquire(to_sqlite(s));
	int rc;

	sqlite3_bind_text(r->st[R_SERVICES], 1, environment, -1, SQLITE_STATIC);
	rc = sqlite_db_read_rows(r->st[R_SERVICES], &service_rows, ret, ret_n);
	reader_release(r);
	return rc;
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
static int backfill_tiers(struct sqlite_profiles *p)
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
		struct series_entry e = { .id = ids[i], .hour_done = -1, .day_done = -1, .newest = -1 };
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


static void prof_close(struct profile_store *s)
{
	struct sqlite_profiles *p = to_sqlite(s);

	if (!p)
		return;
	for (int i = 0; i < READERS; i++) {
		sqlite_db_close(p->readers[i].db, p->readers[i].st, R_COUNT);
		pthread_mutex_destroy(&p->readers[i].lock);
	}
	group_commit__free(p->gc);
	sqlite_db_close(p->wdb, p->w, W_COUNT);
	pthread_mutex_destroy(&p->write_lock);
	free(p->cache);
	free(p->frames_buf);
	free(p->lens);
	free(p->name_hashes);
	free(p->memo);
	free(p->merge);
	free(p->merge_slots);
	series_cache_clear(p);
	free(p->series);
	free(p->touched);
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
		err = sqlite_db_open_prepared(path, schema, writer_sql, p->w, W_COUNT, &p->wdb);
	if (!err)
		err = backfill_tiers(p);
	if (!err)
		err = cache_grow(p);
	if (!err) {
		p->sha = sha256_ctx__new();
		p->recent = stack_cache__new(RECENT_STACKS_MAX, RECENT_TEXT_MAX);
		p->gc = group_commit__new(queue_max_entries, queue_max_bytes, commit_group, p);
		err = p->sha && p->recent && p->gc ? 0 : -ENOMEM;
	}
	for (int i = 0; !err && i < READERS; i++)
		err = sqlite_db_open_prepared(path, NULL, reader_sql, p->readers[i].st, R_COUNT,
					      &p->readers[i].db);
	if (err) {
		prof_close(&p->base);
		return err;
	}
	*ret = &p->base;
	return 0;
}
