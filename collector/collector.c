// SPDX-License-Identifier: Apache-2.0
/* The collector's server context: opens the SQLite-backed stores under --data and the
 * metrics, and closes them in reverse order. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "collector.h"

int collector_db_path(const char *data_dir, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s", data_dir, DATABASE_FILE);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int collector__open(const struct collector_options *opts, struct collector **ret)
{
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
	store_sqlite_set_durability(opts->sync_normal ? STORE_DURABILITY_NORMAL
						      : STORE_DURABILITY_FULL);
	store_sqlite_set_ingest_queue(opts->ingest_queue, opts->ingest_queue_bytes);
	c->metrics = metrics__new();
	err = c->metrics ? 0 : -ENOMEM;
	if (!err)
		err = cp_store_sqlite_open(path, &c->cp);
	if (!err)
		err = profile_store_sqlite_open(path, &c->profiles);
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
	if (c->profiles)
		c->profiles->ops->close(c->profiles);
	if (c->cp)
		c->cp->ops->close(c->cp);
	metrics__free(c->metrics);
	free(c);
}
