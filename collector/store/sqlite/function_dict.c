// SPDX-License-Identifier: Apache-2.0
/* Function name ids of the `functions` table, cached by name with lib/intern (a dense index ->
 * the name's id), retention of the names no stack uses, and the varint encoding of a stack's
 * ids. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"
#include "intern.h"
#include "protowire.h"
#include "store/sqlite/function_dict.h"
#include "store/sqlite/store_sqlite_db.h"
#include "store/stack_cache.h"

struct function_dict {
	sqlite3 *db;
	sqlite3_stmt *get, *add, *all, *del;
	struct intern *names; /* name -> dense index into ids */
	int64_t *ids;	      /* the name's id in `functions`; 0 while not known */
	size_t ids_cap;
	size_t name_bytes;		  /* held by names */
	size_t max_names, max_name_bytes; /* all forgotten past either */
	int64_t *stack_ids;		  /* retention's scratch: one stack's function ids */
	size_t stack_ids_cap;
};

struct function_dict *function_dict__new(sqlite3 *db, size_t max_names, size_t max_name_bytes)
{
	struct function_dict *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->db = db;
	d->max_names = max_names;
	d->max_name_bytes = max_name_bytes;
	d->names = intern__new();
	if (!d->names ||
	    sqlite3_prepare_v2(db, "SELECT id FROM functions WHERE name = ?1", -1, &d->get, NULL) ||
	    sqlite3_prepare_v2(db, "INSERT INTO functions(name) VALUES(?1)", -1, &d->add, NULL) ||
	    sqlite3_prepare_v2(db, "SELECT id FROM functions", -1, &d->all, NULL) ||
	    sqlite3_prepare_v2(db, "DELETE FROM functions WHERE id = ?1", -1, &d->del, NULL)) {
		function_dict__free(d);
		errno = ENOMEM;
		return NULL;
	}
	return d;
}

void function_dict__free(struct function_dict *d)
{
	if (!d)
		return;
	sqlite3_finalize(d->get);
	sqlite3_finalize(d->add);
	sqlite3_finalize(d->all);
	sqlite3_finalize(d->del);
	intern__free(d->names);
	free(d->ids);
	free(d->stack_ids);
	free(d);
}

void function_dict__forget(struct function_dict *d)
{
	size_t n = intern__count(d->names);
	struct intern *fresh;

	if (!n)
		return;
	memset(d->ids, 0, (n < d->ids_cap ? n : d->ids_cap) * sizeof(*d->ids));
	fresh = intern__new();
	if (fresh) { /* else the names stay, their ids looked up again */
		intern__free(d->names);
		d->names = fresh;
		d->name_bytes = 0;
	}
}

/* The name's id from the table, inserting it when it is not there. */
static int lookup_or_add(struct function_dict *d, const char *name, int64_t *ret_id)
{
	sqlite3_stmt *st = d->get;
	int rc;

	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*ret_id = sqlite3_column_int64(st, 0);
	sqlite_db_reset(st);
	if (rc == SQLITE_DONE) {
		st = d->add;
		sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
		if (rc == SQLITE_DONE)
			*ret_id = sqlite3_last_insert_rowid(d->db);
		sqlite_db_reset(st);
	}
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -EIO;
}

static int ids_reserve(struct function_dict *d, size_t index)
{
	size_t cap = d->ids_cap ? d->ids_cap : 1024;
	int64_t *grown;

	if (index < d->ids_cap)
		return 0;
	while (cap <= index)
		cap *= 2;
	grown = realloc(d->ids, cap * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	for (size_t i = d->ids_cap; i < cap; i++)
		grown[i] = 0;
	d->ids = grown;
	d->ids_cap = cap;
	return 0;
}

int function_dict__id(struct function_dict *d, const char *name, int64_t *ret_id)
{
	size_t count = intern__count(d->names);
	int64_t index;
	int rc;

	if (count >= d->max_names || d->name_bytes >= d->max_name_bytes) {
		function_dict__forget(d); /* bounded memory: the table has them */
		count = intern__count(d->names);
	}
	index = intern__add(d->names, name);
	if (index < 0)
		return (int)index;
	if ((size_t)index == count) /* new: copied in */
		d->name_bytes += strlen(name) + 1;
	rc = ids_reserve(d, (size_t)index);
	if (rc)
		return rc;
	if (!d->ids[index]) {
		rc = lookup_or_add(d, name, &d->ids[index]);
		if (rc)
			return rc;
	}
	*ret_id = d->ids[index];
	return 0;
}

/* ------------------------------------------------------------------ retention ---- */

/* Every function id the stacks (stacks_all: n_frames, ids) use, into the set `used`. */
static int used_functions(struct function_dict *d, sqlite3_stmt *stacks_all, struct hashtab *used)
{
	int rc = 0, step;

	while (!rc && (step = sqlite3_step(stacks_all)) == SQLITE_ROW) {
		int64_t n = sqlite3_column_int64(stacks_all, 0);

		rc = function_ids_decode_row(n, sqlite3_column_blob(stacks_all, 1),
					     (size_t)sqlite3_column_bytes(stacks_all, 1),
					     &d->stack_ids, &d->stack_ids_cap);
		for (int64_t i = 0; !rc && i < n; i++)
			rc = hashtab__put(used, (uint64_t)d->stack_ids[i], 1);
	}
	if (!rc && step != SQLITE_DONE)
		rc = -EIO;
	sqlite_db_reset(stacks_all);
	return rc;
}

/* The function ids not in `used`, into *ret (realloc'd) and *ret_n. */
static int unused_functions(struct function_dict *d, const struct hashtab *used, int64_t **ret,
			    size_t *ret_n)
{
	sqlite3_stmt *st = d->all;
	size_t cap = 0;
	uint64_t one;
	int rc = 0, step;

	while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);

		if (hashtab__get(used, (uint64_t)id, &one))
			continue;
		if (*ret_n == cap) {
			int64_t *grown =
			    realloc(*ret, (cap = cap ? cap * 2 : 256) * sizeof(*grown));

			if (!grown) {
				rc = -ENOMEM;
				break;
			}
			*ret = grown;
		}
		(*ret)[(*ret_n)++] = id;
	}
	if (!rc && step != SQLITE_DONE)
		rc = -EIO;
	sqlite_db_reset(st);
	return rc;
}

int function_dict__retain(struct function_dict *d, sqlite3_stmt *stacks_all)
{
	struct hashtab used = {0};
	int64_t *unused = NULL;
	size_t n = 0;
	int rc = used_functions(d, stacks_all, &used);

	if (!rc)
		rc = unused_functions(d, &used, &unused, &n);
	for (size_t i = 0; !rc && i < n; i++) {
		sqlite3_bind_int64(d->del, 1, unused[i]);
		rc = sqlite_db_step_done(d->del);
	}
	hashtab__free(&used);
	free(unused);
	function_dict__forget(d);
	return rc;
}

/* ------------------------------------------------------------------- encoding ---- */

size_t function_ids_encode(const int64_t *ids, size_t n, uint8_t *out)
{
	size_t len = 0;

	for (size_t i = 0; i < n; i++)
		len += protowire__put_varint(out + len, (uint64_t)ids[i]);
	return len;
}

int function_ids_buf__reserve(struct function_ids_buf *b, size_t n)
{
	size_t need = function_ids_max_bytes(n) + 1; /* + 1: room even for no id */

	if (n > b->ids_cap) {
		int64_t *ids = realloc(b->ids, n * sizeof(*ids));

		if (!ids)
			return -ENOMEM;
		b->ids = ids;
		b->ids_cap = n;
	}
	if (need > b->bytes_cap) {
		uint8_t *bytes = realloc(b->bytes, need);

		if (!bytes)
			return -ENOMEM;
		b->bytes = bytes;
		b->bytes_cap = need;
	}
	return 0;
}

void function_ids_buf__release(struct function_ids_buf *b)
{
	free(b->ids);
	free(b->bytes);
	memset(b, 0, sizeof(*b));
}

int function_ids_decode(const uint8_t *bytes, size_t len, int64_t *ids, size_t n)
{
	const uint8_t *pos = bytes, *end = bytes + len;

	for (size_t i = 0; i < n; i++) {
		uint64_t v;

		if (protowire__varint(&pos, end, &v) || v > INT64_MAX)
			return -EINVAL;
		ids[i] = (int64_t)v;
	}
	return pos == end ? 0 : -EINVAL;
}

int stack_ids_table__init(struct stack_ids_table *t, sqlite3 *db, sqlite3_stmt *add,
			  sqlite3_stmt *get, size_t max_slots, size_t max_bytes)
{
	*t = (struct stack_ids_table){.db = db, .add = add, .get = get};
	t->recent = stack_cache__new(max_slots, max_bytes);
	return t->recent ? 0 : -ENOMEM;
}

void stack_ids_table__release(struct stack_ids_table *t)
{
	stack_cache__free(t->recent);
	t->recent = NULL;
}

/* The id of the encoded stack: inserted, or read when it is there already; *ret_new says
 * which. */
static int stack_ids_row(struct stack_ids_table *t, size_t n_frames, const uint8_t *bytes,
			 size_t len, int64_t *ret_id, bool *ret_new)
{
	int rc;

	*ret_id = 0;
	*ret_new = false;
	sqlite3_bind_int64(t->add, 1, (int64_t)n_frames);
	sqlite3_bind_blob(t->add, 2, bytes, (int)len, SQLITE_STATIC);
	rc = sqlite3_step(t->add);
	if (rc == SQLITE_DONE && sqlite3_changes(t->db) > 0) {
		*ret_id = sqlite3_last_insert_rowid(t->db);
		*ret_new = true;
	}
	sqlite_db_reset(t->add);
	if (rc != SQLITE_DONE)
		return -EIO;
	if (*ret_new)
		return 0;
	sqlite3_bind_blob(t->get, 1, bytes, (int)len, SQLITE_STATIC);
	rc = sqlite3_step(t->get);
	if (rc == SQLITE_ROW)
		*ret_id = sqlite3_column_int64(t->get, 0);
	sqlite_db_reset(t->get);
	return rc == SQLITE_ROW ? 0 : -EIO;
}

int stack_ids_table__find(struct stack_ids_table *t, size_t n_frames, const uint8_t *bytes,
			  size_t len, int64_t *ret_id)
{
	uint64_t fast;
	bool is_new;
	int rc;

	if (len > INT32_MAX)
		return -E2BIG;
	fast = hash_bytes(bytes, len);
	*ret_id = stack_cache__get(t->recent, fast, bytes, len);
	if (*ret_id)
		return 0;
	rc = stack_ids_row(t, n_frames, bytes, len, ret_id, &is_new);
	if (!rc && is_new && !t->first_new)
		t->first_new = *ret_id;
	if (rc || (t->first_new && *ret_id >= t->first_new))
		return rc; /* new: cached when seen again */
	return stack_cache__put(t->recent, fast, bytes, len, *ret_id);
}

int function_ids_decode_row(int64_t n_frames, const void *bytes, size_t len, int64_t **ids,
			    size_t *cap)
{
	if (n_frames < 0 || (uint64_t)n_frames > len) /* every id takes at least a byte */
		return -EIO;
	if ((size_t)n_frames > *cap) {
		int64_t *grown = realloc(*ids, (size_t)n_frames * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		*ids = grown;
		*cap = (size_t)n_frames;
	}
	return function_ids_decode(bytes, len, *ids, (size_t)n_frames) ? -EIO : 0;
}
