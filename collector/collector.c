// SPDX-License-Identifier: Apache-2.0
/* The collector's server context: opens the stores (SQLite under --data by default; PostgreSQL
 * and ClickHouse in fleet mode) and the metrics, and closes them in reverse order. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "collector.h"
#include "lines/line_resolver.h"
#include "control/cp_cache.h"
#include "store/clickhouse/store_ch.h"
#include "store/postgresql/store_pg.h"
#include "store/sqlite/store_sqlite.h"

int collector_db_path(const char *data_dir, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s", data_dir, DATABASE_FILE);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int links_path(const char *data_dir, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s", data_dir, LINKS_FILE);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* The SQLite backend's options from the command line's. */
static struct store_sqlite_options sqlite_options(const struct collector_options *opts)
{
	return (struct store_sqlite_options){
	    .durability =
		opts->sync_normal ? STORE_SQLITE_DURABILITY_NORMAL : STORE_SQLITE_DURABILITY_FULL,
	    .ingest_queue_entries = opts->ingest_queue,
	    .ingest_queue_bytes = opts->ingest_queue_bytes,
	};
}

static int open_cp(struct collector *c, const char *db_path)
{
	struct store_sqlite_options sqlite = sqlite_options(&c->opts);
	struct cp_store *pg;
	int err;

	if (c->opts.control_store) {
		/* Fleet mode: config reads survive a short PostgreSQL outage (cp_cache.h). */
		err = cp_store_pg_open(c->opts.control_store, &pg);
		if (!err && (err = cp_cache_wrap(pg, &c->cp)))
			pg->ops->close(pg);
		return err;
	}
	return cp_store_sqlite_open(db_path, &sqlite, &c->cp);
}

static int open_profiles(struct collector *c, const char *db_path)
{
	struct store_sqlite_options sqlite = sqlite_options(&c->opts);
	struct store_ch_options ch = {
	    .password = c->opts.clickhouse_password,
	    .ingest_queue_entries = c->opts.ingest_queue,
	    .ingest_queue_bytes = c->opts.ingest_queue_bytes,
	    .ingest_in_flight = c->opts.ingest_in_flight,
	    .ingest_linger_us = c->opts.ingest_linger_us,
	    .cluster = c->opts.clickhouse_cluster,
	    .servers = c->opts.clickhouse_servers,
	    /* Only serve builds tiers: init and the other commands open the store briefly. */
	    .tier_interval_ms = c->opts.tier_interval_ms > 0 ? c->opts.tier_interval_ms : -1,
	    .tier_delay_s = c->opts.tier_delay_s,
	    .tier_pause_ms = c->opts.tier_pause_ms,
	    .retention_days = c->opts.retention_days,
	};
	char why[256];
	int err;

	if (!c->opts.profile_store)
		return profile_store_sqlite_open(db_path, &sqlite, &c->profiles);
	if (!c->opts.control_store)
		return -EINVAL;
	err = upload_ledger_pg_open(c->opts.control_store, &c->ledger);
	if (err)
		return err;
	ch.ledger = c->ledger;
	err = profile_store_ch_open(c->opts.profile_store, &ch, &c->profiles, why, sizeof(why));
	if (err == -EINVAL)
		fprintf(stderr, "roottrace-collector: --profile-store %s\n", why);
	return err;
}

static int open_ch_links(struct collector *c)
{
	char why[256];
	int err = link_store_ch_open(c->opts.profile_store, c->opts.clickhouse_password, &c->links,
				     why, sizeof(why));

	if (err == -EINVAL)
		fprintf(stderr, "roottrace-collector: --profile-store %s\n", why);
	return err;
}

/* The lines route's resolver of agent frames; it reads nothing until asked. */
static int open_resolver(struct collector *c)
{
	struct line_resolver_config config = {
	    .debug_dir = c->opts.debug_dir,
	    .debuginfod_urls = c->opts.debuginfod_urls,
	};

	return line_resolver__new(&config, &c->resolver);
}

int collector__open(const struct collector_options *opts, struct collector **ret)
{
	struct collector *c;
	char path[4096] = "";
	int err = 0;

	*ret = NULL;
	if (opts->data_dir)
		err = collector_db_path(opts->data_dir, path, sizeof(path));
	if (err)
		return err;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->opts = *opts;
	c->decode.limit =
	    opts->max_decode_memory ? opts->max_decode_memory : DEFAULT_MAX_DECODE_MEMORY;
	c->metrics = metrics__new();
	err = c->metrics ? 0 : -ENOMEM;
	if (!err)
		err = open_cp(c, path);
	if (!err)
		err = open_profiles(c, path);
	/* Span links: in ClickHouse in fleet mode (every collector answers every span query),
	 * else in a SQLite file of their own under --data. */
	if (!err && opts->profile_store)
		err = open_ch_links(c);
	else if (!err && opts->data_dir)
		err = links_path(opts->data_dir, path, sizeof(path));
	if (!err && !opts->profile_store && opts->data_dir) {
		struct store_sqlite_options sqlite = sqlite_options(opts);

		err = link_store_sqlite_open(path, &sqlite, &c->links);
	}
	if (!err)
		err = open_resolver(c);
	if (err) {
		collector__close(c);
		return err;
	}
	*ret = c;
	return 0;
}

void collector__close(struct collector *c)
{
	if (!c)
		return;
	if (c->links)
		c->links->ops->close(c->links);
	if (c->profiles)
		c->profiles->ops->close(c->profiles);
	if (c->ledger)
		c->ledger->ops->close(c->ledger);
	if (c->cp)
		c->cp->ops->close(c->cp);
	line_resolver__free(c->resolver);
	metrics__free(c->metrics);
	free(c);
}
