// SPDX-License-Identifier: Apache-2.0
/* On-demand (build-id, file offset) -> file:line: finds the build-id's debug file (a directory
 * laid out by build-id, then debuginfod), maps the offset through the binary's program headers
 * and reads the line tables (dwarf_lines.h). Bounded caches of lines, open files and failures. */
#include "lines/line_resolver.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hashtab.h"
#include "intern.h"
#include "lines/debuginfod_client.h"
#include "lines/dwarf_lines.h"

#define BUILD_ID_MAX 129 /* hex of a 64-byte note, NUL */
#define CACHE_WAYS 4
#define CACHE_SETS (LINE_RESOLVER_CACHED_LINES / CACHE_WAYS)

/* One build-id: its line tables and the file whose program headers map offsets (the debug
 * file itself, or the executable when the debug file's were rewritten), or why not. */
struct debug_binary {
	char build_id[BUILD_ID_MAX];
	struct dwarf_lines *lines;
	struct dwarf_lines *layout; /* == lines, or the executable (owned) */
	int err;		    /* 0, or -ENOENT: a failure kept until expires_ns */
	char why[sizeof(((struct resolved_line *)0)->reason)];
	uint64_t expires_ns;
	uint64_t used; /* 0: free slot */
};

struct cached_line {
	char build_id[BUILD_ID_MAX];
	uint64_t offset;
	int64_t file; /* in file_names */
	uint32_t line;
	int err;       /* 0 or -ESRCH */
	uint64_t used; /* 0: empty */
};

struct line_resolver {
	pthread_mutex_t lock; /* everything below; libdw calls on an object are serialised too */
	char *debug_dir;
	bool debuginfod;
	uint64_t negative_ttl_ns;
	uint64_t tick;
	struct debug_binary binaries[LINE_RESOLVER_OPEN_FILES];
	struct cached_line *cache; /* CACHE_SETS sets of CACHE_WAYS */
	struct intern *file_names; /* bounded by the source files of the binaries resolved */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int line_resolver__new(const struct line_resolver_config *config, struct line_resolver **out)
{
	struct line_resolver *r;
	int err = 0;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	pthread_mutex_init(&r->lock, NULL);
	r->negative_ttl_ns =
	    (uint64_t)(config && config->negative_ttl_s ? config->negative_ttl_s
							: LINE_RESOLVER_NEGATIVE_TTL_S) *
	    1000000000ull;
	r->cache = calloc(LINE_RESOLVER_CACHED_LINES, sizeof(*r->cache));
	r->file_names = intern__new();
	if (config && config->debug_dir && *config->debug_dir)
		r->debug_dir = strdup(config->debug_dir);
	if (!r->cache || !r->file_names ||
	    (config && config->debug_dir && *config->debug_dir && !r->debug_dir))
		err = -ENOMEM;
	if (!err && config && config->debuginfod_urls && *config->debuginfod_urls) {
		err = debuginfod_client__configure(config->debuginfod_urls, config->cache_dir);
		r->debuginfod = !err;
	}
	if (err) {
		line_resolver__free(r);
		return err;
	}
	*out = r;
	return 0;
}

static void binary__clear(struct debug_binary *b)
{
	if (b->layout != b->lines)
		dwarf_lines__free(b->layout);
	dwarf_lines__free(b->lines);
	memset(b, 0, sizeof(*b));
}

void line_resolver__free(struct line_resolver *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < LINE_RESOLVER_OPEN_FILES; i++)
		binary__clear(&r->binaries[i]);
	intern__free(r->file_names);
	free(r->cache);
	free(r->debug_dir);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

/* Lowercase hex, whole bytes, a GNU note's size at most. */
static bool valid_build_id(const char *id)
{
	size_t n = id ? strlen(id) : 0;

	if (n < 2 || n % 2 || n >= BUILD_ID_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return false;
	return true;
}

/* ---- finding a build-id's files (slow: outside the lock) ---------------------------------- */

/* path opened as ELF, kept only when it carries build_id (a file is never taken on trust). */
static struct dwarf_lines *open_matching(const char *path, const char *build_id)
{
	struct dwarf_lines *dl;

	if (!path || dwarf_lines__open(path, &dl))
		return NULL;
	if (strcmp(dwarf_lines__build_id(dl), build_id)) {
		dwarf_lines__free(dl);
		return NULL;
	}
	return dl;
}

/* <dir>/.build-id/xx/yyyy.debug (suffix ".debug") or the plain ELF <dir>/.build-id/xx/yyyy. */
static struct dwarf_lines *open_in_dir(const struct line_resolver *r, const char *id,
				       const char *suffix)
{
	char path[4096];

	if (!r->debug_dir)
		return NULL;
	snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s%s", r->debug_dir, id, id + 2, suffix);
	return open_matching(path, id);
}

/* debuginfod's file, or NULL; *fetch_err keeps why a fetch failed other than "not found"
 * (a timeout, the network), for the reason. */
static struct dwarf_lines *fetch(const struct line_resolver *r, const char *id, bool executable,
				 int *fetch_err)
{
	struct dwarf_lines *dl;
	char *path = NULL;
	int err;

	if (!r->debuginfod)
		return NULL;
	err = debuginfod_client__find(id, executable, &path);
	if (err) {
		if (err != -ENOENT && !*fetch_err)
			*fetch_err = err;
		return NULL;
	}
	dl = open_matching(path, id);
	free(path);
	return dl;
}

/* A file with lines: the directory's debug file, its plain ELF, then debuginfod's. The plain
 * ELF is kept in *ret_exe (it may map offsets for a debug file that cannot). */
static struct dwarf_lines *find_lines(const struct line_resolver *r, const char *id,
				      struct dwarf_lines **ret_exe, int *fetch_err)
{
	struct dwarf_lines *dl = open_in_dir(r, id, ".debug");

	*ret_exe = open_in_dir(r, id, "");
	if (dl && !dwarf_lines__has_lines(dl)) {
		dwarf_lines__free(dl);
		dl = NULL;
	}
	if (!dl && *ret_exe && dwarf_lines__has_lines(*ret_exe)) {
		dl = *ret_exe;
		*ret_exe = NULL;
	}
	if (!dl) {
		dl = fetch(r, id, false, fetch_err);
		if (dl && !dwarf_lines__has_lines(dl)) {
			dwarf_lines__free(dl);
			dl = NULL;
		}
	}
	return dl;
}

static void load_binary(const struct line_resolver *r, const char *id, struct debug_binary *b)
{
	struct dwarf_lines *exe = NULL;
	int fetch_err = 0;

	memset(b, 0, sizeof(*b));
	snprintf(b->build_id, sizeof(b->build_id), "%s", id);
	b->lines = find_lines(r, id, &exe, &fetch_err);
	if (!b->lines) {
		snprintf(b->why, sizeof(b->why), "no debug info for build-id %s%s%s%s", id,
			 fetch_err ? " (debuginfod: " : "", fetch_err ? strerror(-fetch_err) : "",
			 fetch_err ? ")" : "");
		goto fail;
	}
	if (dwarf_lines__maps_offsets(b->lines)) {
		b->layout = b->lines;
		dwarf_lines__free(exe);
		return;
	}
	/* objcopy --only-keep-debug rewrote the offsets: the executable's headers map them */
	if (!exe || !dwarf_lines__maps_offsets(exe)) {
		dwarf_lines__free(exe);
		exe = fetch(r, id, true, &fetch_err);
	}
	if (exe && dwarf_lines__maps_offsets(exe)) {
		b->layout = exe;
		return;
	}
	dwarf_lines__free(exe);
	dwarf_lines__free(b->lines);
	b->lines = NULL;
	if (fetch_err)
		snprintf(b->why, sizeof(b->why),
			 "no debug info for build-id %s: its debug file cannot map file offsets "
			 "(debuginfod: %s)",
			 id, strerror(-fetch_err));
	else
		snprintf(
		    b->why, sizeof(b->why),
		    "no debug info for build-id %s: its debug file cannot map file offsets and "
		    "its executable was not found",
		    id);
fail:
	b->err = -ENOENT;
	b->expires_ns = now_ns() + r->negative_ttl_ns;
}

/* ---- the caches (under the lock) ----------------------------------------------------------- */

/* The binary of id, or NULL; an expired failure is dropped (looked up again). */
static struct debug_binary *find_binary(struct line_resolver *r, const char *id)
{
	for (size_t i = 0; i < LINE_RESOLVER_OPEN_FILES; i++) {
		struct debug_binary *b = &r->binaries[i];

		if (!b->used || strcmp(b->build_id, id))
			continue;
		if (b->err && now_ns() >= b->expires_ns) {
			binary__clear(b);
			return NULL;
		}
		b->used = ++r->tick;
		return b;
	}
	return NULL;
}

/* Takes loaded into a free slot or the least recently used one's (closing its files). */
static struct debug_binary *keep_binary(struct line_resolver *r, struct debug_binary *loaded)
{
	struct debug_binary *slot = &r->binaries[0];

	for (size_t i = 0; i < LINE_RESOLVER_OPEN_FILES && slot->used; i++)
		if (!r->binaries[i].used || r->binaries[i].used < slot->used)
			slot = &r->binaries[i];
	binary__clear(slot);
	*slot = *loaded;
	slot->used = ++r->tick;
	return slot;
}

static struct cached_line *cache_set(struct line_resolver *r, const char *id, uint64_t offset)
{
	uint64_t h = hash_combine(hash_string(id), offset);

	return &r->cache[(h % CACHE_SETS) * CACHE_WAYS];
}

static struct cached_line *cache_find(struct line_resolver *r, const char *id, uint64_t offset)
{
	struct cached_line *set = cache_set(r, id, offset);

	for (size_t i = 0; i < CACHE_WAYS; i++)
		if (set[i].used && set[i].offset == offset && !strcmp(set[i].build_id, id)) {
			set[i].used = ++r->tick;
			return &set[i];
		}
	return NULL;
}

static void cache_store(struct line_resolver *r, const char *id, uint64_t offset, int64_t file,
			uint32_t line, int err)
{
	struct cached_line *set = cache_set(r, id, offset), *victim = &set[0];

	for (size_t i = 1; i < CACHE_WAYS && victim->used; i++)
		if (!set[i].used || set[i].used < victim->used)
			victim = &set[i];
	snprintf(victim->build_id, sizeof(victim->build_id), "%s", id);
	victim->offset = offset;
	victim->file = file;
	victim->line = line;
	victim->err = err;
	victim->used = ++r->tick;
}

static int answer(const struct line_resolver *r, const struct cached_line *c,
		  struct resolved_line *out)
{
	if (c->err) {
		snprintf(out->reason, sizeof(out->reason),
			 "no line for offset 0x%llx in build-id %.100s",
			 (unsigned long long)c->offset, c->build_id);
		return c->err;
	}
	snprintf(out->file, sizeof(out->file), "%s",
		 intern__string(r->file_names, (size_t)c->file));
	out->line = c->line;
	return 0;
}

/* Resolves in b and caches the answer (a file name interned: the cache holds no pointer into
 * a file that may be closed). */
static int resolve_in(struct line_resolver *r, struct debug_binary *b, uint64_t offset,
		      struct resolved_line *out)
{
	const char *file = NULL;
	int64_t file_id = 0;
	uint64_t vaddr;
	uint32_t line = 0;
	int err;

	err = dwarf_lines__offset_to_vaddr(b->layout, offset, &vaddr)
		  ? -ESRCH
		  : dwarf_lines__lookup(b->lines, vaddr, &file, &line);
	if (!err) {
		file_id = intern__add(r->file_names, file);
		if (file_id < 0)
			return (int)file_id;
	}
	cache_store(r, b->build_id, offset, file_id, line, err);
	return answer(r, cache_find(r, b->build_id, offset), out);
}

int line_resolver__resolve(struct line_resolver *r, const char *build_id_hex, uint64_t file_offset,
			   struct resolved_line *out)
{
	struct debug_binary *b, loaded;
	const struct cached_line *c;
	int err;

	out->file[0] = out->reason[0] = '\0';
	out->line = 0;
	if (!valid_build_id(build_id_hex)) {
		snprintf(out->reason, sizeof(out->reason), "not a build-id: \"%.64s\"",
			 build_id_hex ? build_id_hex : "");
		return -EINVAL;
	}
	pthread_mutex_lock(&r->lock);
	c = cache_find(r, build_id_hex, file_offset);
	if (c) {
		err = answer(r, c, out);
		goto out;
	}
	b = find_binary(r, build_id_hex);
	if (!b) { /* files are found and fetched without the lock; the first to finish is kept */
		pthread_mutex_unlock(&r->lock);
		load_binary(r, build_id_hex, &loaded);
		pthread_mutex_lock(&r->lock);
		b = find_binary(r, build_id_hex);
		if (b)
			binary__clear(&loaded);
		else
			b = keep_binary(r, &loaded);
	}
	if (b->err) {
		snprintf(out->reason, sizeof(out->reason), "%s", b->why);
		err = b->err;
		goto out;
	}
	err = resolve_in(r, b, file_offset, out);
out:
	pthread_mutex_unlock(&r->lock);
	return err;
}
