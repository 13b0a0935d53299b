/* SPDX-License-Identifier: Apache-2.0 */
/* The SQLite stores' function names table (`functions`: id, name): a stack is stored as the
 * varint ids of its frames' names, each name once. Here: a name's id (inserted the first time
 * it is seen, cached in memory), and a stack's frames to and from that encoding. */
#ifndef ROOTTRACE_SQLITE_FUNCTION_DICT_H
#define ROOTTRACE_SQLITE_FUNCTION_DICT_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#define FUNCTIONS_SCHEMA                                                                           \
	"CREATE TABLE IF NOT EXISTS functions("                                                    \
	" id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE);"

struct function_dict;

/* Prepares its statements on db (which has FUNCTIONS_SCHEMA); NULL with errno set. */
struct function_dict *function_dict__new(sqlite3 *db);
void function_dict__free(struct function_dict *d);
/* Forgets every cached id: after a rollback (its inserted names are gone). */
void function_dict__forget(struct function_dict *d);
/* The id of name, inserted into `functions` the first time; 0, -ENOMEM or -EIO. */
int function_dict__id(struct function_dict *d, const char *name, int64_t *ret_id);

/* The bytes the encoding of n ids takes at most. */
static inline size_t function_ids_max_bytes(size_t n)
{
	return n * 10;
}

/* Encodes ids[0..n) at out (room for function_ids_max_bytes(n)); the bytes written. */
size_t function_ids_encode(const int64_t *ids, size_t n, uint8_t *out);
/* Decodes exactly n ids from bytes[0..len) into ids; 0 or -EINVAL (not n ids). */
int function_ids_decode(const uint8_t *bytes, size_t len, int64_t *ids, size_t n);

#endif
