// SPDX-License-Identifier: Apache-2.0
/* The interpreter frames' names, cached: (pid, object address) -> function and file, checked
 * against the sampled cookie, bounded (least recently used dropped, counted), one per runtime. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lru.h"
#include "runtimes/frame_names.h"

struct name_key {
	uint64_t pid;
	uint64_t addr;
};

/* One allocation: the function's text, then the file's. */
struct name {
	uint64_t cookie;
	const char *file;
	char function[];
};

struct frame_names {
	struct lru *names; /* struct name_key -> struct name */
	frame_names_read_fn read;
	void *ctx;
	uint64_t read_count, evicted, stale, unreadable;
	bool closing; /* frees at the end are not evictions */
};

static void name_evicted(void *value, void *ctx)
{
	struct frame_names *c = ctx;

	c->evicted += !c->closing;
	free(value);
}

struct frame_names *frame_names__new(size_t capacity, frame_names_read_fn read, void *ctx)
{
	struct frame_names *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->read = read;
	c->ctx = ctx;
	c->names = lru__new(capacity, name_evicted, c);
	if (!c->names) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	return c;
}

void frame_names__free(struct frame_names *c)
{
	if (!c)
		return;
	c->closing = true;
	lru__free(c->names);
	free(c);
}

static struct name *name_new(uint64_t cookie, const struct sym_frame *text)
{
	size_t flen = strnlen(text->function, sizeof(text->function));
	size_t len = strnlen(text->file, sizeof(text->file));
	struct name *n = malloc(sizeof(*n) + flen + 1 + len + 1);
	char *file;

	if (!n)
		return NULL;
	n->cookie = cookie;
	memcpy(n->function, text->function, flen);
	n->function[flen] = '\0';
	file = n->function + flen + 1;
	memcpy(file, text->file, len);
	file[len] = '\0';
	n->file = file;
	return n;
}

static void set_unknown(const char *module, struct sym_frame *ret)
{
	snprintf(ret->function, sizeof(ret->function), "[unknown]");
	snprintf(ret->module, sizeof(ret->module), "%s", module);
	ret->file[0] = ret->build_id[0] = '\0';
	ret->known = 0;
}

/* A miss: read now, kept for the next sample of that object. NULL when it cannot be named. */
static const struct name *read_name(struct frame_names *c, const struct name_key *key, void *proc,
				    uint64_t cookie, struct sym_frame *scratch)
{
	struct name *n;
	int err;

	scratch->function[0] = scratch->file[0] = '\0';
	err = c->read(c->ctx, (pid_t)key->pid, proc, key->addr, cookie, scratch);
	if (err) {
		c->stale += err == -ESTALE;
		c->unreadable += err != -ESTALE;
		return NULL;
	}
	c->read_count++;
	n = name_new(cookie, scratch);
	if (n && lru__put(c->names, key, sizeof(*key), n)) {
		free(n); /* out of memory: named, not kept */
		n = NULL;
	}
	return n;
}

void frame_names__name(struct frame_names *c, pid_t pid, void *proc, uint64_t addr, uint64_t cookie,
		       const char *module, struct sym_frame *ret)
{
	struct name_key key = {.pid = (uint64_t)pid, .addr = addr};
	const struct name *n = lru__get(c->names, &key, sizeof(key));

	if (n && n->cookie != cookie) { /* another object at that address now: not an eviction */
		free(lru__remove(c->names, &key, sizeof(key)));
		n = NULL;
	}
	if (!n)
		n = read_name(c, &key, proc, cookie, ret);
	if (!n) {
		set_unknown(module, ret);
		return;
	}
	snprintf(ret->function, sizeof(ret->function), "%s", n->function);
	snprintf(ret->file, sizeof(ret->file), "%s", n->file);
	snprintf(ret->module, sizeof(ret->module), "%s", module);
	ret->build_id[0] = '\0';
	ret->known = 1;
}

void frame_names__stats(const struct frame_names *c, struct runtime_stats *ret)
{
	ret->names_read = c->read_count;
	ret->names_cached = lru__size(c->names);
	ret->names_evicted = c->evicted;
	ret->names_stale = c->stale;
	ret->names_unreadable = c->unreadable;
}
