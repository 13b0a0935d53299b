/* SPDX-License-Identifier: Apache-2.0 */
/* On-demand resolution of an agent frame's (build-id, file offset) to a source file and line,
 * from debug files the collector can read (a directory laid out by build-id, or debuginfod). */
#ifndef ROOTTRACE_LINE_RESOLVER_H
#define ROOTTRACE_LINE_RESOLVER_H

#include <stdint.h>

struct line_resolver;

struct line_resolver_config {
	const char *debug_dir;	     /* <dir>/.build-id/xx/yyyy.debug, or NULL */
	const char *debuginfod_urls; /* space-separated, as DEBUGINFOD_URLS; NULL or "" = off */
	const char *cache_dir;	     /* where fetched debug files are kept, or NULL for a default */
	unsigned negative_ttl_s;     /* a build-id not found is not looked up again for this
				      * long (0: LINE_RESOLVER_NEGATIVE_TTL_S) */
};

#define LINE_RESOLVER_NEGATIVE_TTL_S 60
#define LINE_RESOLVER_CACHED_LINES 16384 /* (build-id, offset) results kept */
#define LINE_RESOLVER_OPEN_FILES 8	 /* debug files kept open, least recently used closed */

struct resolved_line {
	char file[512];	  /* source file, "" when unresolved */
	uint32_t line;	  /* 1-based, 0 when unresolved */
	char reason[160]; /* why unresolved, e.g. "no debug info for build-id 1a2b…" */
};

/* With debuginfod_urls, sets libdebuginfod's environment (debuginfod_client.h): call it before
 * other threads start. */
int line_resolver__new(const struct line_resolver_config *config, struct line_resolver **out);
void line_resolver__free(struct line_resolver *resolver);

/* 0 with file and line set; a negative errno with `reason` set when the offset cannot be
 * resolved (-ENOENT: no debug info for the build-id; -ESRCH: no line for the offset; -EINVAL:
 * not a build-id). Never guesses. Results are cached by (build-id, offset), a build-id not found
 * for negative_ttl_s. Safe to call from several threads. */
int line_resolver__resolve(struct line_resolver *resolver, const char *build_id_hex,
			   uint64_t file_offset, struct resolved_line *out);

#endif
