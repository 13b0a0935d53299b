/* SPDX-License-Identifier: Apache-2.0 */
/* The conversion of a SQLite stacks table written before function ids (each stack's frames
 * joined by '\n' as text) into the function ids layout of function_dict.h, shared by the
 * profile store's `stacks` and the link store's `link_stacks`. */
#ifndef ROOTTRACE_SQLITE_STACKS_TEXT_CONVERT_H
#define ROOTTRACE_SQLITE_STACKS_TEXT_CONVERT_H

#include <sqlite3.h>

/* Rebuilds `table` (id, n_frames, frames TEXT and any other column) as `table` + `columns`
 * (the new definition: id, n_frames, ids) with every row under the same id, its names added
 * to `functions` (which must exist). Run it in the caller's transaction. 0, -ENOMEM or -EIO. */
int sqlite_stacks_convert_text(sqlite3 *db, const char *table, const char *columns);

#endif
