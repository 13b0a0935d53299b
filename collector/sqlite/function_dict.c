// SPDX-License-Identifier: Apache-2.0
/* Function name ids of the `functions` table, cached by name with lib/intern (a dense index ->
 * the name's id), and the varint encoding of a stack's ids. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "function_dict.h"
#include "intern.h"
#include "protowire.h"
#include "store_sqlite_db.h"

#define NAMES_CACHED_MAX (1u << 18)	  /* names cached; all forgotten past this */
#define NAME_BYTES_CACHED_MAX (16u << 20) /* or past this many bytes of them */

struct function_dict {
	sqlite3 *db;
	sqlite3_stmt *get, *add;
	struct intern *names; /* name -> dense index into ids */
	int64_t *ids;	      /* the name's id in `functions`; 0 while not known */
	size_t ids_cap;
	size_t name_bytes; /* held by names */
};

struct function_dict *function_dict__new(sqlite3 *db)
{
	struct function_dict *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->db = db;
	d->names = intern__new();
	if (!d->names ||
	    sqlite3_prepare_v2(db, "SELECT id FROM functions WHERE name = ?1", -1, &d->get, NULL) ||
	    sqlite3_prepare_v2(db, "INSERT INTO functions(name) VALUES(?1)", -1, &d->add, NULL)) {
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
	intern__free(d->names);
	free(d->ids);
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

	if (count >= NAMES_CACHED_MAX || d->name_bytes >= NAME_BYTES_CACHED_MAX) {
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

size_t function_ids_encode(const int64_t *ids, size_t n, uint8_t *out)
{
	size_t len = 0;

	for (size_t i = 0; i < n; i++)
		len += protowire__put_varint(out + len, (uint64_t)ids[i]);
	return len;
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
