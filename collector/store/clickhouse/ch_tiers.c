// SPDX-License-Identifier: Apache-2.0
/* The hour and day tiers, built after their period closed instead of at ingest: a build of one
 * UTC day, under that day's lock in PostgreSQL (one collector of the fleet builds it), sums the
 * day's five-minute rows of the hours that need it into a staging table, copies the hours
 * still complete, and replaces the tier's partition of that day with the staging one (ALTER
 * TABLE ... REPLACE PARTITION is atomic: a read sees the old partition or the new one). Then
 * the same for the day tier, from the hour tier. A build counts its uploads (mark rows), so it
 * is idempotent, a killed build is redone by whoever comes next, and a late upload into a built
 * period makes it incomplete (ch_tier_counts.c) until the next pass builds it again.
 *
 * On a cluster the same build runs on each shard's own tables, on one replica of it
 * (ch_shards.c; replication carries the REPLACE to the others): a series' rows are on one
 * shard, so a shard's tier sums only its own five-minute rows. Reads count the tier through
 * the Distributed tables, so a period is complete only once every shard has built it. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/clickhouse/ch_internal.h"

/* A pass looks this far back; every FULL_PASS_EVERY passes (and the first), as far back as
 * retention keeps, for what arrived late or was copied in (migrate --from). */
#define RECENT_DAYS 2
#define FULL_PASS_EVERY 60
/* The lock of one day's tiers: "RTtiers" tagged, the day number below. */
#define LOCK_KEY(day) ((int64_t)0x52547469 << 32 | (int64_t)(day))

struct ch_tiers {
	struct ch_client *client;
	struct upload_ledger *ledger;
	struct ch_tier_options opts;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stopping;
};

/* What one pass works with; t is NULL outside the thread (nothing to wake a pause). shard is
 * the server whose tables a build writes, local the suffix of their names there: client and
 * "" on one server, one shard's client and "_local" on a cluster. */
struct build {
	struct ch_client *client;
	struct upload_ledger *ledger;
	const struct ch_tier_options *opts;
	struct ch_tiers *t;
	int64_t now;
	struct ch_client *shards, *shard; /* every shard's client (n_shards), the one building */
	size_t n_shards;
	const char *local;
};

static bool complete(const struct ch_period *p)
{
	return p->uploads == p->built;
}

/* The first hour not closed yet: a period is built once it ended opts->delay_s ago. */
static int64_t closed_before(const struct build *b)
{
	return ch_floor_to(b->now - b->opts->delay_s, HOUR);
}

/* Waits out a test's pause; false when the thread is stopping (the build is given up). */
static bool pause_before_replace(const struct build *b)
{
	struct timespec until;
	bool go;

	if (!b->t || b->opts->pause_ms <= 0)
		return true;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += b->opts->pause_ms / 1000;
	until.tv_nsec += (b->opts->pause_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&b->t->lock);
	while (!b->t->stopping &&
	       pthread_cond_timedwait(&b->t->wake, &b->t->lock, &until) != ETIMEDOUT)
		;
	go = !b->t->stopping;
	pthread_mutex_unlock(&b->t->lock);
	return go;
}

static int run_sql(struct ch_client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int run_sql(struct ch_client *c, const char *fmt, ...)
{
	char text[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return ch_client__exec(c, text, NULL, NULL, NULL, 0);
}

/* " IN (h1, h2, ...)" of the day's complete hours before limit; false when there is none. */
static bool put_complete_hours(struct ch_buf *b, const struct ch_tier_counts *k, int64_t day,
			       int64_t limit)
{
	bool any = false;

	for (size_t i = 0; i < k->n_hours; i++) {
		const struct ch_period *h = &k->hours[i];

		if (h->start < day || h->start >= limit || !complete(h))
			continue;
		ch_buf__printf(b, "%s%u", any ? ", " : " IN (", h->start);
		any = true;
	}
	if (any)
		ch_buf__printf(b, ")");
	return any;
}

/* The hour tier of [day, limit) staged: its complete hours copied, the others summed from
 * the five-minute rows, into the staging partition (replace_hours() swaps it in). */
static int stage_hours(const struct build *b, const struct ch_tier_counts *k, int64_t day,
		       int64_t limit)
{
	const char *db = b->client->database, *l = b->local;
	struct ch_buf sql = {0}, hours = {0};
	bool copy = put_complete_hours(&hours, k, day, limit);
	uint32_t part = (uint32_t)(day / DAY);
	int rc;

	/* A build killed before its REPLACE left rows here: they go first. */
	rc = run_sql(b->shard, "ALTER TABLE %s.rollups_hour_staging%s DROP PARTITION %u", db, l,
		     part);
	if (!rc && copy) {
		ch_buf__printf(&sql,
			       "INSERT INTO %s.rollups_hour_staging%s SELECT * FROM"
			       " %s.rollups_hour%s WHERE bucket",
			       db, l, db, l);
		ch_buf__put_bytes(&sql, hours.data, hours.len);
		rc = ch_client__run(b->shard, &sql, NULL);
	}
	if (!rc) {
		ch_buf__reset(&sql);
		ch_buf__printf(
		    &sql,
		    "INSERT INTO %s.rollups_hour_staging%s SELECT series_id,"
		    " toUInt32(intDiv(bucket, 3600) * 3600)"
		    " AS hour, stack_hash, sum(value) FROM %s.rollups%s WHERE bucket >= %lld"
		    " AND bucket < %lld",
		    db, l, db, l, (long long)day, (long long)limit);
		if (copy) {
			ch_buf__printf(&sql, " AND intDiv(bucket, 3600) * 3600 NOT");
			ch_buf__put_bytes(&sql, hours.data, hours.len);
		}
		ch_buf__printf(&sql, " GROUP BY series_id, hour, stack_hash");
		rc = ch_client__run(b->shard, &sql, NULL);
	}
	ch_buf__release(&sql);
	ch_buf__release(&hours);
	return rc;
}

/* The staged day replaces the hour tier's partition of it, atomically for this shard. */
static int replace_hours(const struct build *b, int64_t day)
{
	const char *db = b->client->database, *l = b->local;
	uint32_t part = (uint32_t)(day / DAY);

	return run_sql(b->shard,
		       "ALTER TABLE %s.rollups_hour%s REPLACE PARTITION %u FROM"
		       " %s.rollups_hour_staging%s",
		       db, l, part, db, l)
		   ?: run_sql(b->shard, "ALTER TABLE %s.rollups_hour_staging%s DROP PARTITION %u",
			      db, l, part);
}

/* The day tier of a closed day, summed from its hour tier (complete: built just before). */
static int build_day(const struct build *b, int64_t day)
{
	const char *db = b->client->database, *l = b->local;
	uint32_t part = (uint32_t)(day / DAY);

	return run_sql(b->shard, "ALTER TABLE %s.rollups_day_staging%s DROP PARTITION %u", db, l,
		       part)
	    ?: run_sql(b->shard,
		       "INSERT INTO %s.rollups_day_staging%s SELECT series_id, toUInt32(%lld),"
		       " stack_hash, sum(value) FROM %s.rollups_hour%s WHERE bucket >= %lld"
		       " AND bucket < %lld GROUP BY series_id, stack_hash",
		       db, l, (long long)day, db, l, (long long)day, (long long)(day + DAY))
	    ?: run_sql(b->shard,
		       "ALTER TABLE %s.rollups_day%s REPLACE PARTITION %u FROM"
		       " %s.rollups_day_staging%s",
		       db, l, part, db, l)
	    ?: run_sql(b->shard, "ALTER TABLE %s.rollups_day_staging%s DROP PARTITION %u", db, l,
		       part);
}

/* step on each shard in turn (on one server, once). */
static int on_every_shard(const struct build *b, int64_t day,
			  int (*step)(const struct build *, int64_t))
{
	int rc = 0;

	for (size_t i = 0; !rc && i < b->n_shards; i++) {
		struct build on = *b;

		on.shard = &b->shards[i];
		rc = step(&on, day);
	}
	return rc;
}

/* The hour tier of [day, limit), staged on every shard, then swapped in shard after shard:
 * reads see the day from its tiers once the last shard swapped (its counts are complete). */
static int build_hours(const struct build *b, const struct ch_tier_counts *k, int64_t day,
		       int64_t limit)
{
	int rc = 0;

	for (size_t i = 0; !rc && i < b->n_shards; i++) {
		struct build on = *b;

		on.shard = &b->shards[i];
		rc = stage_hours(&on, k, day, limit);
	}
	if (!rc && !pause_before_replace(b))
		rc = -ECANCELED;
	return rc ?: on_every_shard(b, day, replace_hours);
}

/* What the day's counts ask for: its closed hours that are incomplete, the day itself once
 * closed and incomplete. */
static void due(const struct build *b, const struct ch_tier_counts *k, int64_t day, bool *ret_hours,
		bool *ret_day)
{
	int64_t limit = closed_before(b);
	const struct ch_period *d = ch_tier_counts__find(k->days, k->n_days, (uint32_t)day);

	*ret_hours = false;
	for (size_t i = 0; i < k->n_hours; i++)
		if (k->hours[i].start >= day && k->hours[i].start < day + DAY &&
		    k->hours[i].start < limit && !complete(&k->hours[i]))
			*ret_hours = true;
	*ret_day = day + DAY <= limit && d && !complete(d);
}

/* One day, under its lock: its counts read again (another collector may have built it since
 * the pass looked), then what is due. -EBUSY when another collector holds the lock. */
static int build_one_day(const struct build *b, int64_t day, int *ret_built)
{
	struct upload_claim *lock = NULL;
	struct ch_tier_counts k;
	bool hours, whole_day;
	int64_t limit = closed_before(b);
	int rc = b->ledger->ops->try_lock(b->ledger, LOCK_KEY(day / DAY), &lock);

	if (rc)
		return rc;
	rc = ch_tier_counts__read(b->client, NULL, day, day + DAY, &k);
	if (!rc) {
		due(b, &k, day, &hours, &whole_day);
		if (hours)
			rc = build_hours(b, &k, day, limit < day + DAY ? limit : day + DAY);
		if (!rc && (whole_day || (hours && day + DAY <= limit)))
			rc = on_every_shard(b, day, build_day);
		if (!rc && (hours || whole_day))
			(*ret_built)++;
		ch_tier_counts__release(&k);
	}
	b->ledger->ops->abort(lock);
	return rc;
}

/* The days due in [from, now), built one by one. */
static int build_days(struct build *b, int64_t from, int *ret_built)
{
	struct ch_tier_counts k;
	int rc = ch_tier_counts__read(b->client, NULL, ch_floor_to(from, DAY), b->now, &k);

	for (size_t i = 0; !rc && i < k.n_days; i++) {
		bool hours, whole_day;

		due(b, &k, k.days[i].start, &hours, &whole_day);
		if (!hours && !whole_day)
			continue;
		rc = build_one_day(b, k.days[i].start, ret_built);
		if (rc == -EBUSY) /* another collector builds it */
			rc = 0;
	}
	ch_tier_counts__release(&k);
	return rc;
}

/* Every day of the counts that has uploads; on a cluster, on every shard (ClickHouse 18.16
 * refuses REPLACE PARTITION ON CLUSTER: each shard's is run on one of its servers). */
static int run_pass(struct ch_client *c, struct upload_ledger *ledger,
		    const struct ch_tier_options *o, struct ch_tiers *t, int64_t from, int64_t now,
		    int *ret_built, char *why, size_t why_len)
{
	struct build b = {c, ledger, o, t, now, c, c, 1, ""};
	struct ch_shards shards = {0};
	int rc;

	if (c->cluster[0]) {
		rc = ch_shards__open(c, o->servers, &shards, why, why_len);
		if (rc)
			return rc;
		b.shards = shards.clients;
		b.n_shards = shards.n;
		b.local = "_local";
	}
	rc = build_days(&b, from, ret_built);
	ch_shards__release(&shards);
	return rc;
}

int ch_tiers__pass(struct ch_client *c, struct upload_ledger *ledger,
		   const struct ch_tier_options *o, int64_t from, int64_t now, int *ret_built,
		   char *why, size_t why_len)
{
	return run_pass(c, ledger, o, NULL, from, now, ret_built, why, why_len);
}

static void *tiers_main(void *arg)
{
	struct ch_tiers *t = arg;
	struct timespec until;
	unsigned long pass = 0;

	pthread_mutex_lock(&t->lock);
	while (!t->stopping) {
		int64_t now = (int64_t)time(NULL);
		int days = pass++ % FULL_PASS_EVERY ? RECENT_DAYS : t->opts.retention_days + 1;
		int built = 0, rc;
		char why[512] = "";

		pthread_mutex_unlock(&t->lock);
		rc = run_pass(t->client, t->ledger, &t->opts, t, now - (int64_t)days * DAY, now,
			      &built, why, sizeof(why));
		if (rc && rc != -ECANCELED)
			fprintf(stderr, "roottrace-collector: tier build: %s\n",
				why[0] ? why : strerror(-rc));
		pthread_mutex_lock(&t->lock);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += t->opts.interval_ms / 1000;
		until.tv_nsec += (t->opts.interval_ms % 1000) * 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		while (!t->stopping &&
		       pthread_cond_timedwait(&t->wake, &t->lock, &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

int ch_tiers__start(struct ch_client *c, struct upload_ledger *ledger,
		    const struct ch_tier_options *o, struct ch_tiers **ret)
{
	struct ch_tiers *t = calloc(1, sizeof(*t));
	int err;

	if (!t)
		return -ENOMEM;
	t->client = c;
	t->ledger = ledger;
	t->opts = *o;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->wake, NULL);
	err = pthread_create(&t->thread, NULL, tiers_main, t);
	if (err) {
		pthread_cond_destroy(&t->wake);
		pthread_mutex_destroy(&t->lock);
		free(t);
		return -err;
	}
	*ret = t;
	return 0;
}

void ch_tiers__stop(struct ch_tiers *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	t->stopping = true;
	pthread_cond_signal(&t->wake);
	pthread_mutex_unlock(&t->lock);
	pthread_join(t->thread, NULL);
	pthread_cond_destroy(&t->wake);
	pthread_mutex_destroy(&t->lock);
	free(t);
}
