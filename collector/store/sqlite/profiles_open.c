// SPDX-License-Identifier: Apache-2.0
/* Profile store on SQLite: a stacks dictionary (one row per distinct stack, keyed by its
 * frames' function ids, each function name stored once) and rollups merged in place, in three
 * tiers. Here: the schema, opening and closing, retention. The write and read paths are
 * profiles_write.c and profiles_read.c. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "store/group_commit.h"
#include "store/sqlite/function_dict.h"
#include "store/sqlite/profiles_internal.h"
#include "store/sqlite/store_sqlite_db.h"

/*
 * A rollup record (environment, service, deployment, type, bucket) is the set of rows of
 * `rollups` with one (series_id, bucket): series_id names the first four, and each row holds
 * one stack -> value. `buckets` counts the uploads merged into each record (heap averages).
 */
static const char schema[] =
    "CREATE TABLE IF NOT EXISTS stacks" STACK_IDS_COLUMNS ";" FUNCTIONS_SCHEMA LINES_SCHEMA
    "CREATE TABLE IF NOT EXISTS series("
    " id INTEGER PRIMARY KEY, environment TEXT NOT NULL, service TEXT NOT NULL,"
    " profile_type TEXT NOT NULL, deployment TEXT NOT NULL, node TEXT NOT NULL DEFAULT '',"
    " UNIQUE(environment, service, profile_type, deployment, node));"
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

static const char *const writer_sql[W_COUNT] = {
    [W_BEGIN] = "BEGIN IMMEDIATE",
    [W_COMMIT] = "COMMIT",
    [W_ROLLBACK] = "ROLLBACK",
    [W_SERIES_GET] = "SELECT id FROM series WHERE environment = ?1 AND service = ?2"
		     " AND profile_type = ?3 AND deployment = ?4 AND node = ?5",
    [W_SERIES_ADD] = "INSERT INTO series(environment, service, profile_type, deployment, node)"
		     " VALUES(?1, ?2, ?3, ?4, ?5)",
    [W_STACK_GET] = "SELECT id FROM stacks WHERE ids = ?1",
    [W_STACK_ADD] = "INSERT INTO stacks(n_frames, ids) VALUES(?1, ?2) ON CONFLICT(ids) DO NOTHING",
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
    [W_FOLD_HOURS] =
	"INSERT INTO rollups_hour(series_id, bucket, stack_id, value)"
	" SELECT ?1, bucket - bucket % 3600, stack_id, sum(value) FROM rollups"
	" WHERE series_id = ?1 AND bucket >= ?2 AND bucket < ?3 GROUP BY 2, 3"
	" ON CONFLICT(series_id, bucket, stack_id) DO UPDATE SET value = excluded.value",
    [W_FOLD_DAYS] =
	"INSERT INTO rollups_day(series_id, bucket, stack_id, value)"
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
    [W_STACKS_ALL] = "SELECT n_frames, ids FROM stacks",
    [W_RETAIN_UPLOADS] = "DELETE FROM uploads WHERE received_at < ?1",
};

/* ------------------------------------------------------------------------ retention ---- */

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
		rc = retain_tier(p, W_RETAIN_HOURS, W_REFOLD_HOUR, HOUR,
				 floor_to(cutoff, BUCKET_SECONDS));
	if (!rc)
		rc = retain_tier(p, W_RETAIN_DAYS, W_REFOLD_DAY, DAY,
				 floor_to(cutoff, BUCKET_SECONDS));
	if (!rc) {
		sqlite3_bind_int64(p->w[W_RETAIN_BUCKETS], 1, cutoff);
		rc = sqlite_db_step_done(p->w[W_RETAIN_BUCKETS]);
	}
	if (!rc)
		rc = sqlite_profiles__lines_retain(p, cutoff);
	/* Stacks no rollup refers to any more leave the dictionary (and the cache), and so do
	 * the function names none of the remaining stacks has. */
	if (!rc && deleted > 0)
		rc = sqlite_db_step_done(p->w[W_RETAIN_STACKS]);
	if (!rc && deleted > 0)
		rc = function_dict__retain(p->functions, p->w[W_STACKS_ALL]);
	if (!rc)
		rc = retain_upload_ids(p, cutoff);
	if (!rc)
		rc = sqlite_db_step_done(p->w[W_COMMIT]);
	if (rc && !sqlite3_get_autocommit(p->wdb))
		sqlite_db_step_done(p->w[W_ROLLBACK]);
	if (rc || deleted > 0)
		sqlite_profiles__forget_stack_ids(p);
	pthread_mutex_unlock(&p->write_lock);
	if (!rc && ret_deleted)
		*ret_deleted = deleted;
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
	sqlite_profiles__release_caches(p); /* first: the function names' statements are on wdb */
	sqlite_profiles__lines_close(p);
	sqlite_db_close(p->wdb, p->w, W_COUNT);
	pthread_mutex_destroy(&p->write_lock);
	free(p->merge);
	free(p->path);
	free(p);
}

/* The options with their zeroes replaced by the defaults. */
static struct store_sqlite_options options_or_defaults(const struct store_sqlite_options *opts)
{
	struct store_sqlite_options o = opts ? *opts : (struct store_sqlite_options){0};

	if (!o.ingest_queue_entries)
		o.ingest_queue_entries = STORE_SQLITE_INGEST_QUEUE_ENTRIES;
	if (!o.ingest_queue_bytes)
		o.ingest_queue_bytes = STORE_SQLITE_INGEST_QUEUE_BYTES;
	return o;
}

static void prof_ingest_stats(struct profile_store *s, struct gc_stats *ret,
			      const char **ret_backend)
{
	group_commit__stats(to_sqlite(s)->gc, ret);
	*ret_backend = "sqlite";
}

static const struct profile_store_ops sqlite_profile_ops = {
    .close = prof_close,
    .ingest = sqlite_profiles__ingest,
    .merge_window = sqlite_profiles__merge_window,
    .services = sqlite_profiles__services,
    .service_buckets = sqlite_profiles__service_buckets,
    .service_nodes = sqlite_profiles__service_nodes,
    .retention = prof_retention,
    .size_bytes = prof_size_bytes,
    .ingest_stats = prof_ingest_stats,
    .lines_window = sqlite_profiles__lines_window,
};

/* A series table made before series had a node: rebuilt with the node in its key (every
 * existing series keeps its id, with node ""). Its UNIQUE constraint cannot be altered. */
static int series_node_migrate(sqlite3 *db, void *arg)
{
	(void)arg;
	return sqlite_db_exec(
	    db, "CREATE TABLE series_with_node("
		" id INTEGER PRIMARY KEY, environment TEXT NOT NULL, service TEXT NOT NULL,"
		" profile_type TEXT NOT NULL, deployment TEXT NOT NULL,"
		" node TEXT NOT NULL DEFAULT '',"
		" UNIQUE(environment, service, profile_type, deployment, node));"
		"INSERT INTO series_with_node(id, environment, service, profile_type, deployment)"
		" SELECT id, environment, service, profile_type, deployment FROM series;"
		"DROP TABLE series;"
		"ALTER TABLE series_with_node RENAME TO series;");
}

static int series_add_node(sqlite3 *db)
{
	bool has;
	int err = sqlite_db_has_column(db, "series", "node", &has);

	if (err || has)
		return err;
	return sqlite_db_in_transaction(db, series_node_migrate, NULL);
}

int profile_store_sqlite_open(const char *path, const struct store_sqlite_options *opts,
			      struct profile_store **ret)
{
	struct store_sqlite_options o = options_or_defaults(opts);
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
		err = sqlite_db_open(path, schema, o.durability, &p->wdb);
	if (!err)
		err = series_add_node(p->wdb);
	if (!err)
		err = sqlite_profiles_stacks_migrate(p->wdb);
	if (!err)
		err = sqlite_db_prepare_all(p->wdb, writer_sql, p->w, W_COUNT);
	if (!err)
		err = sqlite_profiles__lines_open(p);
	if (!err)
		err = sqlite_profiles__backfill_tiers(p);
	if (!err)
		err = sqlite_profiles__init_caches(p);
	if (!err) {
		p->gc = group_commit__new(o.ingest_queue_entries, o.ingest_queue_bytes,
					  sqlite_profiles__commit_group, p);
		err = p->gc ? 0 : -ENOMEM;
	}
	for (int i = 0; !err && i < READERS; i++)
		err = sqlite_profiles_reader_open(&p->readers[i], path, o.durability);
	if (err) {
		prof_close(&p->base);
		return err;
	}
	*ret = &p->base;
	return 0;
}
