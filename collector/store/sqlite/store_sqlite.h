/* SPDX-License-Identifier: Apache-2.0 */
/* The SQLite storage backend as the collector opens it: its options and the open functions of
 * its two stores. Only what opens the stores includes this; handlers see store.h alone. */
#ifndef ROOTTRACE_STORE_SQLITE_H
#define ROOTTRACE_STORE_SQLITE_H

#include <stddef.h>

#include "store/store.h"
#include "store/store_copy.h"

enum store_sqlite_durability {
	STORE_SQLITE_DURABILITY_FULL,	/* synchronous=FULL: a commit survives power loss */
	STORE_SQLITE_DURABILITY_NORMAL, /* synchronous=NORMAL (WAL): survives a crash of the process
					 */
};

/* Default bounds of the profile store's group-commit queue. */
#define STORE_SQLITE_INGEST_QUEUE_ENTRIES 64
#define STORE_SQLITE_INGEST_QUEUE_BYTES (64u << 20)

/* Zeroed = the defaults. */
struct store_sqlite_options {
	enum store_sqlite_durability durability; /* of every connection; FULL by default */
	/* The profile store's group-commit queue: uploads waiting for or in a commit, and the
	 * estimated bytes of their decoded stacks (0 = the defaults above). When it is full,
	 * ingest returns -EAGAIN. */
	size_t ingest_queue_entries;
	size_t ingest_queue_bytes;
};

/* Open (creating if needed) the database file at path, one store each; opts NULL = defaults.
 * 0 or -errno; *ret is NULL on failure. */
int cp_store_sqlite_open(const char *path, const struct store_sqlite_options *opts,
			 struct cp_store **ret);
int profile_store_sqlite_open(const char *path, const struct store_sqlite_options *opts,
			      struct profile_store **ret);
/* The link store lives in a database file of its own (collector/store/sqlite/links.c). */
int link_store_sqlite_open(const char *path, const struct store_sqlite_options *opts,
			   struct link_store **ret);

/* store_sqlite_export.c, for `migrate --from DIR` (store_copy.h): the control-plane tables a
 * server control plane has too, row by row (parents first); the five-minute buckets, then every
 * stack value; per-series totals (malloc'd, ordered by key). Read only; 0 or -errno. */
int store_sqlite_export_control(const char *path, copy_row_fn fn, void *ctx);
const char *const *store_sqlite_control_tables(size_t *ret_n);
int store_sqlite_export_profiles(const char *path, const struct copy_profile_fns *fns);
int store_sqlite_series_totals(const char *path, struct copy_total **ret, size_t *ret_n);

#endif
