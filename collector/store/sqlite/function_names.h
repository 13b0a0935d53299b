/* SPDX-License-Identifier: Apache-2.0 */
/* Function id -> name for one read of a SQLite store whose stacks are function ids
 * (function_dict.h): each name is read from `functions` once per read, and a stack's encoded
 * ids become its frames. Shared by the profile store's reads and the link store's. */
#ifndef ROOTTRACE_SQLITE_FUNCTION_NAMES_H
#define ROOTTRACE_SQLITE_FUNCTION_NAMES_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "hashtab.h"
#include "store/store.h"

struct function_names {
	sqlite3_stmt *by_id;  /* the caller's "SELECT name FROM functions WHERE id = ?1" */
	struct hashtab index; /* function id -> index into names */
	char **names;
	size_t n, cap;
	size_t name_bytes; /* of the names' text */
	int64_t *fids;	   /* scratch: one stack's function ids */
	size_t fids_cap;
};

/* Starts an empty set of names read with by_id (a statement of the read's connection). */
void function_names__init(struct function_names *fn, sqlite3_stmt *by_id);
void function_names__release(struct function_names *fn);
/* The frames of a stack stored as n_frames encoded function ids ids[0..len) into ms->frames
 * (ms->n_frames counts those filled, for merged_window__release on failure). 0, -ENOMEM or
 * -EIO (not n_frames ids, or an id `functions` lacks). */
int function_names__frames(struct function_names *fn, int64_t n_frames, const void *ids, size_t len,
			   struct merged_stack *ms);

#endif
