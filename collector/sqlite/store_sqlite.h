/* SPDX-License-Identifier: Apache-2.0 */
/* The SQLite storage backend as the collector opens it: its options and the open functions of
 * its two stores. Only what opens the stores includes this; handlers see store.h alone. */
#ifndef ROOTTRACE_STORE_SQLITE_H
#define ROOTTRACE_STORE_SQLITE_H

#include <stddef.h>

#include "../store.h"

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
/* The link store lives in a database file of its own (collector/sqlite/links.c). */
int link_store_sqlite_open(const char *path, const struct store_sqlite_options *opts,
			   struct link_store **ret);

#endif
