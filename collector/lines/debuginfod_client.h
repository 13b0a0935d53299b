/* SPDX-License-Identifier: Apache-2.0 */
/* Fetching a build-id's debug file or executable from debuginfod servers (libdebuginfod), into
 * its cache directory, for the line resolver. */
#ifndef ROOTTRACE_DEBUGINFOD_CLIENT_H
#define ROOTTRACE_DEBUGINFOD_CLIENT_H

#include <stdbool.h>

/* libdebuginfod takes its servers, cache and timeout from the environment: this sets
 * DEBUGINFOD_URLS (urls), DEBUGINFOD_CACHE_PATH (cache_dir, NULL: its default) and
 * DEBUGINFOD_TIMEOUT (when unset). Call it before other threads start (setenv). 0 or -EINVAL
 * when urls is NULL or empty. */
int debuginfod_client__configure(const char *urls, const char *cache_dir);

/* The path of build_id_hex's debug file (executable: its executable) in the cache, malloc'd in
 * *ret_path. 0, or -errno (-ENOENT: no server has it). Thread-safe (a client per call). */
int debuginfod_client__find(const char *build_id_hex, bool executable, char **ret_path);

#endif
