/* SPDX-License-Identifier: Apache-2.0 */
/* The SQLite stores' function names table (`functions`: id, name): a stack is stored as the
 * varint ids of its frames' names, each name once. Here: a name's id (inserted the first time
 * it is seen, cached in memory), and a stack's frames to and from that encoding. */
#ifndef ROOTTRACE_SQLITE_FUNCTION_DICT_H
#define ROOTTRACE_SQLITE_FUNCTION_DICT_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FUNCTIONS_SCHEMA                                                                           \
	"CREATE TABLE IF NOT EXISTS functions("                                                    \
	" id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE);"
/* The columns of a stacks table in this layout (`stacks`, `link_stacks`): a stack is its
 * frames' function ids (root first), encoded, unique. */
#define STACK_IDS_COLUMNS                                                                          \
	"(id INTEGER PRIMARY KEY, n_frames INTEGER NOT NULL, ids BLOB NOT NULL UNIQUE)"

struct function_dict;

/* Prepares its statements on db (which has FUNCTIONS_SCHEMA); NULL with errno set. The cache
 * of name ids is emptied (the table has them) when it reaches max_names names or max_name_bytes
 * bytes of their text. */
struct function_dict *function_dict__new(sqlite3 *db, size_t max_names, size_t max_name_bytes);
void function_dict__free(struct function_dict *d);
/* Forgets every cached id: after a rollback (its inserted names are gone). */
void function_dict__forget(struct function_dict *d);
/* The id of name, inserted into `functions` the first time; 0, -ENOMEM or -EIO. */
int function_dict__id(struct function_dict *d, const char *name, int64_t *ret_id);
/* Deletes the names no stack uses any more (after retention deleted stacks), in the caller's
 * transaction: stacks_all is the caller's statement reading every stack as (n_frames, ids).
 * Forgets the cached ids. 0, -ENOMEM or -EIO. */
int function_dict__retain(struct function_dict *d, sqlite3_stmt *stacks_all);

/* The bytes the encoding of n ids takes at most. */
static inline size_t function_ids_max_bytes(size_t n)
{
	return n * 10;
}

/* Encodes ids[0..n) at out (room for function_ids_max_bytes(n)); the bytes written. */
size_t function_ids_encode(const int64_t *ids, size_t n, uint8_t *out);

/* A writer's scratch for one stack: its function ids, then their encoding. */
struct function_ids_buf {
	int64_t *ids;
	uint8_t *bytes;
	size_t ids_cap, bytes_cap;
};

/* Room for n ids in b->ids and their encoding in b->bytes; 0 or -ENOMEM. */
int function_ids_buf__reserve(struct function_ids_buf *b, size_t n);
void function_ids_buf__release(struct function_ids_buf *b);

struct stack_cache;

/* A stacks table in this layout (STACK_IDS_COLUMNS) as its writer uses it: add is
 * "INSERT INTO t(n_frames, ids) VALUES(?1, ?2) ON CONFLICT(ids) DO NOTHING", get is
 * "SELECT id FROM t WHERE ids = ?1", recent the verified cache of encoded stack -> id
 * (store/stack_cache.h), first_new the first id the transaction inserted (0 while none: the
 * writer sets it to 0 at BEGIN). */
struct stack_ids_table {
	sqlite3 *db;
	sqlite3_stmt *add, *get;
	struct stack_cache *recent;
	int64_t first_new;
};

/* Starts t on the writer's db and statements with an empty cache of max_slots slots and
 * max_bytes of encoded stacks (store/stack_cache.h); 0 or -ENOMEM. */
int stack_ids_table__init(struct stack_ids_table *t, sqlite3 *db, sqlite3_stmt *add,
			  sqlite3_stmt *get, size_t max_slots, size_t max_bytes);
/* Frees the cache (the statements are the writer's). */
void stack_ids_table__release(struct stack_ids_table *t);
/* The id of the stack of n_frames function ids encoded as bytes[0..len): from t->recent, else
 * inserted, or looked up when it is there already (a stack missing from the cache is more often
 * new than known). A stack enters the cache the second time it is seen, so one-off stacks fill
 * none; it is cached before commit, so a rollback must clear t->recent. 0, -E2BIG, -ENOMEM or
 * -EIO. */
int stack_ids_table__find(struct stack_ids_table *t, size_t n_frames, const uint8_t *bytes,
			  size_t len, int64_t *ret_id);
/* Decodes exactly n ids from bytes[0..len) into ids; 0 or -EINVAL (not n ids). */
int function_ids_decode(const uint8_t *bytes, size_t len, int64_t *ids, size_t n);
/* A stored stack row (n_frames, its ids encoded in bytes[0..len)) decoded into *ids, grown to
 * n_frames when *cap is smaller: 0, -ENOMEM or -EIO (not n_frames ids: a damaged row). */
int function_ids_decode_row(int64_t n_frames, const void *bytes, size_t len, int64_t **ids,
			    size_t *cap);

#endif
