// SPDX-License-Identifier: Apache-2.0
/* Function names of one read: a hash table from function id to the name read once from
 * `functions`, and the decoding of a stack's function ids into its frames. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/sqlite/function_dict.h"
#include "store/sqlite/function_names.h"
#include "store/sqlite/store_sqlite_db.h"

void function_names__init(struct function_names *fn, sqlite3_stmt *by_id)
{
	memset(fn, 0, sizeof(*fn));
	fn->by_id = by_id;
}

void function_names__release(struct function_names *fn)
{
	for (size_t i = 0; i < fn->n; i++)
		free(fn->names[i]);
	free(fn->names);
	free(fn->fids);
	hashtab__free(&fn->index);
	memset(fn, 0, sizeof(*fn));
}

/* Reads the name of function id from the table into fn. */
static int function_name_load(struct function_names *fn, int64_t id)
{
	sqlite3_stmt *st = fn->by_id;
	char *name = NULL;
	int rc;

	if (fn->n == fn->cap) {
		size_t cap = fn->cap ? fn->cap * 2 : 256;
		char **grown = realloc(fn->names, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		fn->names = grown;
		fn->cap = cap;
	}
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st) == SQLITE_ROW ? 0 : -EIO; /* every stack's function is there */
	if (!rc) {
		name = strdup((const char *)sqlite3_column_text(st, 0));
		rc = name ? 0 : -ENOMEM;
	}
	sqlite_db_reset(st);
	if (!rc)
		rc = hashtab__put(&fn->index, (uint64_t)id, fn->n);
	if (rc) {
		free(name);
		return rc;
	}
	fn->names[fn->n++] = name;
	fn->name_bytes += strlen(name) + 1;
	return 0;
}

static int function_name(struct function_names *fn, int64_t id, const char **ret)
{
	uint64_t index;
	int rc;

	if (!hashtab__get(&fn->index, (uint64_t)id, &index)) {
		rc = function_name_load(fn, id);
		if (rc)
			return rc;
		index = fn->n - 1;
	}
	*ret = fn->names[index];
	return 0;
}

int function_names__frames(struct function_names *fn, int64_t n_frames, const void *ids, size_t len,
			   struct merged_stack *ms)
{
	int rc = function_ids_decode_row(n_frames, ids, len, &fn->fids, &fn->fids_cap);

	if (rc)
		return rc;
	ms->frames = calloc(n_frames ? (size_t)n_frames : 1, sizeof(char *));
	if (!ms->frames)
		return -ENOMEM;
	for (int64_t i = 0; i < n_frames; i++) {
		const char *name;

		rc = function_name(fn, fn->fids[i], &name);
		if (rc)
			return rc;
		ms->frames[i] = strdup(name);
		if (!ms->frames[i])
			return -ENOMEM;
		ms->n_frames++;
	}
	return 0;
}
