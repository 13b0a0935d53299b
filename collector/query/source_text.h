/* SPDX-License-Identifier: Apache-2.0 */
/* One line of a source file under the collector's --source-dir, for the lines view: the file a
 * profile names (often a build machine's absolute path) is looked up by its trailing path
 * components below the directory, never outside it. */
#ifndef ROOTTRACE_QUERY_SOURCE_TEXT_H
#define ROOTTRACE_QUERY_SOURCE_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* Line `line` (1-based, without its newline) of `file` found under dir: the longest trailing
 * part of file's path that exists below dir. 0, -ENOENT (no such file or line, or a path
 * with ".."), or -EINVAL. */
int source_text__line(const char *dir, const char *file, uint32_t line, char *out, size_t len);

#endif
