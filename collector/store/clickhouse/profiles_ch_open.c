// SPDX-License-Identifier: Apache-2.0
/* The ClickHouse profile store: open and close, retention by dropping whole-day partitions,
 * size on disk. The write and read paths are profiles_ch_write.c and profiles_ch_read.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto.h"
#include "store/clickhouse/ch_ddl.h"
#include "store/clickhouse/ch_internal.h"
#include "store/group_commit.h"

/* The tables partitioned by day (intDiv(bucket, 86400)); the stacks and series dictionaries
 * are partitioned by a day of their own (ch_stacks.c, ch_series.c) and pruned after them. */
static const char *const day_tables[] = {
    "rollups",	     "rollups_hour",	     "rollups_day",	   "uploads",
    "profile_lines", "rollups_hour_staging", "rollups_day_staging"};

static void ch_close(struct profile_store *s)
{
	struct ch_profiles *p = to_ch(s);

	if (!p)
		return;
	ch_tiers__stop(p->tiers);
	ch_line_servers__free(p->line_servers);
	group_commit__free(p->gc);
	ch_route__free(p->route);
	hashtab__free(&p->known_stacks);
	hashtab__free(&p->known_series);
	sha256_ctx__free(p->sha);
	ch_buf__release(&p->frames);
	free(p->digests);
	ch_client__release(&p->client);
	pthread_mutex_destroy(&p->stacks_lock);
	free(p);
}

/* Retention drops whole UTC days: data of the day the cutoff falls in stays until the day has
 * passed entirely (up to one day longer than SQLite, which deletes five-minute buckets). */
static int ch_retention(struct profile_store *s, int64_t cutoff, int64_t *ret_deleted)
{
	struct ch_profiles *p = to_ch(s);
	int64_t dropped = 0, oldest_id = time(NULL) - UPLOAD_ID_TTL_S;
	int rc = 0;

	for (size_t i = 0; !rc && i < sizeof(day_tables) / sizeof(day_tables[0]); i++)
		rc = ch_drop_days(&p->client, day_tables[i], cutoff, i ? NULL : &dropped);
	if (!rc)
		rc = ch_stacks_prune(&p->client, time(NULL), NULL);
	if (!rc)
		rc = ch_series_prune(&p->client, time(NULL), NULL);
	if (!rc)
		rc = p->ledger->ops->expire(p->ledger, cutoff > oldest_id ? cutoff : oldest_id);
	if (ret_deleted)
		*ret_deleted = dropped;
	return rc;
}

static int ch_size_bytes(struct profile_store *s, int64_t *ret_bytes)
{
	struct ch_profiles *p = to_ch(s);
	struct ch_buf out = {0};
	uint64_t bytes = 0;
	int rc;

	rc = ch_client__run_template(&p->client,
				     "SELECT toUInt64(sum(bytes_on_disk)) FROM {parts}"
				     " WHERE database = '{db}' AND active FORMAT RowBinary",
				     &out, NULL, 0);
	if (!rc)
		rc = ch_buf__get_u64(&out, &bytes);
	*ret_bytes = (int64_t)bytes;
	ch_buf__release(&out);
	return rc;
}

static void ch_ingest_stats(struct profile_store *s, struct gc_stats *ret, const char **ret_backend)
{
	group_commit__stats(to_ch(s)->gc, ret);
	*ret_backend = "clickhouse";
}

static const struct profile_store_ops ch_ops = {
    .close = ch_close,
    .ingest = ch_profiles__ingest,
    .merge_window = ch_profiles__merge_window,
    .services = ch_profiles__services,
    .service_buckets = ch_profiles__service_buckets,
    .service_nodes = ch_profiles__service_nodes,
    .retention = ch_retention,
    .size_bytes = ch_size_bytes,
    .ingest_stats = ch_ingest_stats,
    .lines_window = ch_profiles__lines_window,
};

static struct ch_profiles *ch_new(const struct store_ch_options *opts)
{
	struct ch_profiles *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->base.ops = &ch_ops;
	p->ledger = opts->ledger;
	pthread_mutex_init(&p->stacks_lock, NULL);
	p->sha = sha256_ctx__new();
	p->gc = group_commit__new_pipelined(
	    opts->ingest_queue_entries ? opts->ingest_queue_entries : STORE_CH_INGEST_QUEUE_ENTRIES,
	    opts->ingest_queue_bytes ? opts->ingest_queue_bytes : STORE_CH_INGEST_QUEUE_BYTES,
	    opts->ingest_in_flight ? opts->ingest_in_flight : STORE_CH_INGEST_IN_FLIGHT,
	    ch_profiles__commit_group, p);
	if (p->gc)
		group_commit__set_linger(p->gc, opts->ingest_linger_us ? opts->ingest_linger_us
								       : STORE_CH_INGEST_LINGER_US);
	if (!p->sha || !p->gc) {
		ch_close(&p->base);
		return NULL;
	}
	return p;
}

static struct ch_tier_options tier_options(long delay_s, long interval_ms, long pause_ms,
					   int retention_days, const char *servers)
{
	return (struct ch_tier_options){
	    .delay_s = delay_s < 0 ? 0
		       : delay_s   ? delay_s
				   : STORE_CH_TIER_DELAY_S,
	    .interval_ms = interval_ms ? interval_ms : STORE_CH_TIER_INTERVAL_MS,
	    .pause_ms = pause_ms,
	    .retention_days = retention_days ? retention_days : 30,
	    .servers = servers,
	};
}

static int start_tiers(struct ch_profiles *p, const struct store_ch_options *opts)
{
	struct ch_tier_options o =
	    tier_options(opts->tier_delay_s, opts->tier_interval_ms, opts->tier_pause_ms,
			 opts->retention_days, opts->servers);

	return ch_tiers__start(&p->client, p->ledger, &o, &p->tiers);
}

/* On a cluster, the shards' own tables for the rollups; a cluster whose shards cannot be
 * made out (system.clusters unreadable) is written through its Distributed table. */
static int open_route(struct ch_profiles *p, const struct store_ch_options *opts)
{
	int rc = ch_route__open(&p->client, opts->servers, &p->route);

	return rc == -ENOMEM ? rc : 0;
}

int profile_store_ch_open(const char *url, const struct store_ch_options *opts,
			  struct profile_store **ret, char *why, size_t why_len)
{
	struct ch_profiles *p;
	int err;

	*ret = NULL;
	if (!opts->ledger) {
		snprintf(why, why_len,
			 "the ClickHouse profile store needs a PostgreSQL control store");
		return -EINVAL;
	}
	p = ch_new(opts);
	if (!p)
		return -ENOMEM;
	err = ch_client__init(&p->client, url, opts->password, why, why_len);
	if (!err)
		err = ch_schema_check(&p->client);
	if (!err && opts->cluster && strcmp(opts->cluster, p->client.cluster) != 0) {
		snprintf(why, why_len, "cluster %s: the database's tables %s%s", opts->cluster,
			 p->client.cluster[0] ? "spread over cluster " : "are on one server",
			 p->client.cluster);
		err = -EINVAL;
	}
	if (!err && p->client.cluster[0]) /* no server asked yet: one may be down now */
		if ((err = ch_line_servers__open(&p->client, opts->servers, &p->line_servers)))
			snprintf(why, why_len, "cluster %s: its servers not listed: %s",
				 p->client.cluster, strerror(-err));
	if (!err)
		err = open_route(p, opts);
	if (!err && opts->tier_interval_ms >= 0)
		err = start_tiers(p, opts);
	if (err) {
		ch_close(&p->base);
		return err;
	}
	*ret = &p->base;
	return 0;
}

int store_ch_migrate(const char *url, const char *password, const char *cluster, int *ret_from,
		     int *ret_to, char *why, size_t why_len)
{
	struct ch_client c;
	int err = ch_client__init(&c, url, password, why, why_len);

	if (err)
		return err;
	err = ch_schema_migrate(&c, cluster, ret_from, ret_to, why, why_len);
	ch_client__release(&c);
	return err;
}

int store_ch_build_tiers(const char *url, const char *password, const char *servers,
			 struct upload_ledger *ledger, long delay_s, int days, int *ret_built,
			 char *why, size_t why_len)
{
	struct ch_tier_options o = tier_options(delay_s, 0, 0, days, servers);
	int64_t now = time(NULL);
	struct ch_client c;
	int err = ch_client__init(&c, url, password, why, why_len);

	if (err)
		return err;
	*ret_built = 0;
	err = ch_schema_check(&c);
	if (!err)
		err = ch_tiers__pass(&c, ledger, &o, now - (int64_t)o.retention_days * DAY, now,
				     ret_built, why, why_len);
	ch_client__release(&c);
	return err;
}
