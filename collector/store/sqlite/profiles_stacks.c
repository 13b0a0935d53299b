// SPDX-License-Identifier: Apache-2.0
/* The SQLite profile store's stacks dictionary and writer caches: a stack is the varint
 * function ids of its frames (function_dict.h), cached -> dictionary id; a batch's names'
 * function ids, each looked up once; series ids. Retention of function names, and the
 * conversion of databases with the older text dictionary when they are opened. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"
#include "store/sqlite/function_dict.h"
#include "store/sqlite/profiles_internal.h"
#include "store/sqlite/stacks_text_convert.h"
#include "store/sqlite/store_sqlite_db.h"
#include "store/stack_cache.h"

#define RECENT_STACKS_MAX (1u << 19)	  /* verified cache slots (at most half used) */
#define RECENT_BYTES_MAX (16u << 20)	  /* verified cache encoded stacks: 16 MiB */
#define NAMES_CACHED_MAX (1u << 18)	  /* function name ids cached */
#define NAME_BYTES_CACHED_MAX (16u << 20) /* with at most this many bytes of names */

/* Also empties the function name ids: a rollback may have removed them. */
void sqlite_profiles__forget_stack_ids(struct sqlite_profiles *p)
{
	stack_cache__clear(p->stacks.recent);
	function_dict__forget(p->functions);
}

/* --------------------------------------------------------- frame names, stack ids ---- */

void sqlite_profiles__stacks_new_group(struct sqlite_profiles *p)
{
	p->stacks.first_new = 0;
}

int sqlite_profiles__names_new_batch(struct sqlite_profiles *p, const struct profile_batch *b)
{
	if (b->n_names > p->name_fids_cap) {
		int64_t *grown = realloc(p->name_fids, b->n_names * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		p->name_fids = grown;
		p->name_fids_cap = b->n_names;
	}
	if (b->n_names)
		memset(p->name_fids, 0, b->n_names * sizeof(*p->name_fids));
	return 0;
}

/* The function id of the batch's name `index`, looked up once per batch. */
int sqlite_profiles__name_function_id(struct sqlite_profiles *p, const struct profile_batch *b,
				      uint32_t index, int64_t *ret_id)
{
	if (index >= b->n_names)
		return -EINVAL;
	if (!p->name_fids[index]) {
		int rc = function_dict__id(p->functions, b->names[index], &p->name_fids[index]);

		if (rc)
			return rc;
	}
	*ret_id = p->name_fids[index];
	return 0;
}

/* The stack's frames as function ids, encoded into p->stack.bytes; *ret_len its length. */
static int stack_encode(struct sqlite_profiles *p, const struct profile_batch *b,
			const struct stack_value *sv, size_t *ret_len)
{
	const uint8_t *pos = sv->frames;
	int rc = function_ids_buf__reserve(&p->stack, sv->n_frames);

	for (size_t i = 0; !rc && i < sv->n_frames; i++)
		rc = sqlite_profiles__name_function_id(p, b, stack_frame_next(&pos),
						       &p->stack.ids[i]);
	if (!rc)
		*ret_len = function_ids_encode(p->stack.ids, sv->n_frames, p->stack.bytes);
	return rc;
}

/* The stack's dictionary id: its frames' function ids, encoded, are its key. A stack seen
 * recently is found in the verified cache, without a statement; a stack enters the cache the
 * second time it is seen (an upload of stacks never seen before, however large, fills none). */
int sqlite_profiles__stack_id(struct sqlite_profiles *p, const struct profile_batch *b,
			      const struct stack_value *sv, int64_t *ret_id)
{
	size_t len;
	int rc = stack_encode(p, b, sv, &len);

	return rc ? rc
		  : stack_ids_table__find(&p->stacks, sv->n_frames, p->stack.bytes, len, ret_id);
}

/* ------------------------------------------------- text dictionary conversion ---- */

static int text_dictionary_convert(sqlite3 *db, void *arg)
{
	(void)arg;
	return sqlite_stacks_convert_text(db, "stacks", STACK_IDS_COLUMNS);
}

int sqlite_profiles_stacks_migrate(sqlite3 *db)
{
	bool has_text;
	int rc = sqlite_db_has_column(db, "stacks", "frames", &has_text);

	if (rc || !has_text)
		return rc;
	return sqlite_db_in_transaction(db, text_dictionary_convert, NULL);
}

/* ------------------------------------------------------------------- series cache ---- */

void sqlite_profiles__forget_series(struct sqlite_profiles *p)
{
	size_t iter = 0;
	uint64_t e;

	while (hashtab__next(&p->series, &iter, &e))
		free((struct series_entry *)(uintptr_t)e);
	hashtab__clear(&p->series);
	p->n_touched = 0;
}

static size_t series_key(const struct profile_batch *b, char *buf, size_t len)
{
	const char *parts[5] = {b->environment, b->service, b->profile_type,
				b->deployment ? b->deployment : "", b->node ? b->node : ""};
	size_t at = 0;

	for (int i = 0; i < 5; i++) {
		size_t n = strlen(parts[i]) + 1;

		if (n > len - at)
			return 0;
		memcpy(buf + at, parts[i], n);
		at += n;
	}
	return at;
}

static uint64_t key_hash(const char *key, size_t len)
{
	return hash_bytes(key, len);
}

/* What series_is() compares a cached series with. */
struct series_lookup {
	const char *key;
	size_t len;
};

static bool series_is(uint64_t entry, const void *key)
{
	const struct series_entry *e = (const struct series_entry *)(uintptr_t)entry;
	const struct series_lookup *k = key;

	return e->key_len == k->len && memcmp(e->key, k->key, k->len) == 0;
}

/* The series' id (created when new), its tier marks and its newest bucket, from the store. */
static int series_load(struct sqlite_profiles *p, const struct profile_batch *b,
		       struct series_entry *e)
{
	sqlite3_stmt *st = p->w[W_SERIES_GET];
	int rc;

	for (int pass = 0; pass < 2; pass++) {
		sqlite3_bind_text(st, 1, b->environment, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, b->service, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, b->profile_type, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, b->deployment ? b->deployment : "", -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 5, b->node ? b->node : "", -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
		if (pass == 0 && rc == SQLITE_ROW)
			e->id = sqlite3_column_int64(st, 0);
		else if (pass == 1 && rc == SQLITE_DONE)
			e->id = sqlite3_last_insert_rowid(p->wdb);
		sqlite_db_reset(st);
		if ((pass == 0 && rc == SQLITE_ROW) || pass == 1)
			break;
		if (rc != SQLITE_DONE)
			return -EIO;
		st = p->w[W_SERIES_ADD];
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return -EIO;
	e->hour_done = e->day_done = e->newest = -1;
	st = p->w[W_MARKS_GET];
	sqlite3_bind_int64(st, 1, e->id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		e->hour_done = sqlite3_column_int64(st, 0);
		e->day_done = sqlite3_column_int64(st, 1);
	}
	sqlite_db_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return -EIO;
	st = p->w[W_SERIES_SPAN];
	sqlite3_bind_int64(st, 1, e->id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 1) != SQLITE_NULL)
		e->newest = sqlite3_column_int64(st, 1);
	sqlite_db_reset(st);
	return rc == SQLITE_ROW ? 0 : -EIO;
}

/* A new series entry for the key, loaded from the store and cached. */
static int series_add(struct sqlite_profiles *p, const struct profile_batch *b,
		      const struct series_lookup *k, uint64_t h, struct series_entry **ret)
{
	struct series_entry *e = calloc(1, sizeof(*e) + k->len);
	int rc;

	if (!e)
		return -ENOMEM;
	e->key_len = k->len;
	memcpy(e->key, k->key, k->len);
	rc = series_load(p, b, e);
	if (!rc)
		rc = hashtab__add(&p->series, h, (uintptr_t)e);
	if (rc) {
		free(e);
		return rc;
	}
	*ret = e;
	return 0;
}

int sqlite_profiles__series_get(struct sqlite_profiles *p, const struct profile_batch *b,
				struct series_entry **ret)
{
	char key[5 * STORE_NAME_MAX + 5];
	struct series_lookup k = {.key = key, .len = series_key(b, key, sizeof(key))};
	uint64_t h, found;

	if (!k.len)
		return -EINVAL;
	h = key_hash(key, k.len);
	if (hashtab__find(&p->series, h, series_is, &k, &found)) {
		*ret = (struct series_entry *)(uintptr_t)found;
		return 0;
	}
	return series_add(p, b, &k, h, ret);
}

int sqlite_profiles__series_touch(struct sqlite_profiles *p, struct series_entry *e)
{
	if (e->touched)
		return 0;
	if (p->n_touched == p->touched_cap) {
		size_t cap = p->touched_cap ? p->touched_cap * 2 : 16;
		struct series_entry **grown = realloc(p->touched, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		p->touched = grown;
		p->touched_cap = cap;
	}
	p->touched[p->n_touched++] = e;
	e->touched = true;
	return 0;
}

/* ------------------------------------------------------------------ create / free ---- */

int sqlite_profiles__init_caches(struct sqlite_profiles *p)
{
	p->functions = function_dict__new(p->wdb, NAMES_CACHED_MAX, NAME_BYTES_CACHED_MAX);
	if (!p->functions)
		return -ENOMEM;
	return stack_ids_table__init(&p->stacks, p->wdb, p->w[W_STACK_ADD], p->w[W_STACK_GET],
				     RECENT_STACKS_MAX, RECENT_BYTES_MAX);
}

void sqlite_profiles__release_caches(struct sqlite_profiles *p)
{
	function_ids_buf__release(&p->stack);
	free(p->name_fids);
	sqlite_profiles__forget_series(p);
	hashtab__free(&p->series);
	free(p->touched);
	function_dict__free(p->functions);
	stack_ids_table__release(&p->stacks);
}
