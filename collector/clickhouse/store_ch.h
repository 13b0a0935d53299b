/* SPDX-License-Identifier: Apache-2.0 */
/* The ClickHouse profile store as the collector opens it. url is
 * clickhouse+http://[user@]host:port/database; the password comes from a file or the
 * environment (the caller reads it), never from the URL. Upload ids are claimed in ledger (the
 * PostgreSQL control plane), which ClickHouse's inserts cannot do transactionally. */
#ifndef ROOTTRACE_STORE_CH_H
#define ROOTTRACE_STORE_CH_H

#include <stddef.h>

#include "../store.h"
#include "../upload_ledger.h"

#define STORE_CH_INGEST_QUEUE_ENTRIES 256
#define STORE_CH_INGEST_QUEUE_BYTES (256u << 20)

struct store_ch_options {
	const char *password;	      /* NULL = none */
	struct upload_ledger *ledger; /* borrowed; required */
	size_t ingest_queue_entries;  /* 0 = the defaults above */
	size_t ingest_queue_bytes;
};

/* -ENOTSUP when the schema is older than this collector's (run migrate), -EPROTO when newer,
 * -EIO when the server cannot be reached, -EINVAL (why set) for a bad URL. */
int profile_store_ch_open(const char *url, const struct store_ch_options *opts,
			  struct profile_store **ret, char *why, size_t why_len);

/* The span links in the same ClickHouse database (fleet mode: shared by every collector);
 * the same errors as profile_store_ch_open(). */
int link_store_ch_open(const char *url, const char *password, struct link_store **ret, char *why,
		       size_t why_len);

/* Creates the database and applies every pending migration; versions before and after. */
int store_ch_migrate(const char *url, const char *password, int *ret_from, int *ret_to, char *why,
		     size_t why_len);

#endif
