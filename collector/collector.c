// SPDX-License-Identifier: Apache-2.0
/* The collector's server context: opens the SQLite-backed stores under --data and the
 * metrics, and closes them in reverse order. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "collector.h"
#include "sqlite/store_sqlite.h"

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

int collector__open(const struct collector_options *opts, struct collector **ret)
{
	struct store_sqlite_options sqlite;
	struct collector *c;
	char path[4096];
	int err;

	*ret = NULL;
	err = collector_db_path(opts->data_dir, path, sizeof(path));
	if (err)
		return err;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->opts = *opts;
	sqlite = sqlite_options(opts);
	c->metrics = metrics__new();
	err = c->metrics ? 0 : -ENOMEM;
	if (!err)
		err = cp_store_sqlite_open(path, &sqlite, &c->cp);
	if (!err)
		err = profile_store_sqlite_open(path, &sqlite, &c->profiles);
	if (!err)
		err = links_path(opts->data_dir, path, sizeof(path));
	if (!err)
		err = link_store_sqlite_open(path, &sqlite, &c->links);
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
	if (c->cp)
		c->cp->ops->close(c->cp);
	metrics__free(c->metrics);
	free(c);
}
