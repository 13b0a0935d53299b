// SPDX-License-Identifier: Apache-2.0
/* The interpreter runtimes (Python today; Ruby, PHP, HotSpot, V8 to follow runtime.h): detects
 * each captured process's runtime, attaches its walk state, names the interpreter frames. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtimes/hotspot/hotspot_runtime.h"
#include "runtimes/php/php_runtime.h"
#include "runtimes/python/python_runtime.h"
#include "runtimes/ruby/ruby_runtime.h"
#include "runtimes/runtimes.h"
#include "runtimes/v8/v8_runtime.h"

#define MAX_NOTES 32	  /* distinct "no table" notes remembered (then: counted only) */
#define MAX_WANTED_MAPS 8 /* mappings a process hands its runtimes */
#define MAX_PENDING 64	  /* processes caught starting, captured again (then: not retried) */
#define RETRY_MS 250	  /* between two captures of a starting process */
#define RETRY_TRIES 240	  /* a minute of them: a VM not up by then keeps native frames */

/* A process whose runtime was still starting (a JVM before its VM is up): -EAGAIN. */
struct pending {
	pid_t pid;
	unsigned tries;
};

static const struct runtime_ops *const all_ops[RUNTIME__COUNT] = {
    [RUNTIME_PYTHON] = &python_runtime_ops,   [RUNTIME_V8] = &v8_runtime_ops,
    [RUNTIME_RUBY] = &ruby_runtime_ops,	      [RUNTIME_PHP] = &php_runtime_ops,
    [RUNTIME_HOTSPOT] = &hotspot_runtime_ops,
};

struct runtimes {
	struct runtime_sink sink;
	char proc_root[256];
	void *state[RUNTIME__COUNT];
	char *notes[MAX_NOTES]; /* reported once */
	size_t n_notes;
	struct pending pending[MAX_PENDING];
	size_t n_pending;
	int64_t last_retry_ms;
};

struct runtimes *runtimes__new(const struct runtime_sink *sink, const char *proc_root)
{
	struct runtimes *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->sink = *sink;
	snprintf(r->proc_root, sizeof(r->proc_root), "%s", proc_root ? proc_root : "/proc");
	for (int k = 0; k < RUNTIME__COUNT; k++) {
		r->state[k] = all_ops[k]->new ();
		if (!r->state[k]) {
			int saved = errno;

			runtimes__free(r);
			errno = saved;
			return NULL;
		}
	}
	return r;
}

void runtimes__free(struct runtimes *r)
{
	if (!r)
		return;
	for (int k = 0; k < RUNTIME__COUNT; k++)
		all_ops[k]->free(r->state[k]);
	for (size_t i = 0; i < r->n_notes; i++)
		free(r->notes[i]);
	free(r);
}

/* The mappings some runtime wants (a handful per process at most). */
struct wanted {
	struct procmap_entry maps[MAX_WANTED_MAPS];
	size_t n;
};

static int collect_wanted(const struct procmap_entry *e, void *ctx)
{
	struct wanted *w = ctx;

	if (w->n == MAX_WANTED_MAPS || e->offset || !procmaps__is_file(e))
		return 0;
	for (int k = 0; k < RUNTIME__COUNT; k++) {
		if (all_ops[k]->wants(e->path)) {
			w->maps[w->n++] = *e;
			break;
		}
	}
	return 0;
}

/* 1 the first time a note is seen (the caller logs it), 0 after. */
static int note_once(struct runtimes *r, const char *note)
{
	for (size_t i = 0; i < r->n_notes; i++)
		if (!strcmp(r->notes[i], note))
			return 0;
	if (r->n_notes < MAX_NOTES)
		r->notes[r->n_notes++] = strdup(note);
	return 1;
}

/* Remembers a starting process for runtimes__retry_pending (once). */
static void add_pending(struct runtimes *r, pid_t pid)
{
	for (size_t i = 0; i < r->n_pending; i++)
		if (r->pending[i].pid == pid)
			return;
	if (r->n_pending < MAX_PENDING)
		r->pending[r->n_pending++] = (struct pending){.pid = pid};
}

static void drop_pending(struct runtimes *r, size_t i)
{
	r->pending[i] = r->pending[--r->n_pending];
}

static int64_t monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int capture(struct runtimes *r, pid_t pid, char *note, size_t note_len);

int runtimes__retry_pending(struct runtimes *r, char *note, size_t note_len)
{
	int64_t now = monotonic_ms();
	int ret;

	if (!r->n_pending || now - r->last_retry_ms < RETRY_MS)
		return 0;
	r->last_retry_ms = now;
	for (size_t i = 0; i < r->n_pending;) {
		ret = capture(r, r->pending[i].pid, note, note_len);
		if (ret == -EAGAIN && ++r->pending[i].tries < RETRY_TRIES) {
			i++;
			continue;
		}
		drop_pending(r, i);
		if (ret > 0)
			return ret; /* a note: the others on the next call */
	}
	return 0;
}

int runtimes__capture_process(struct runtimes *r, pid_t pid, char *note, size_t note_len)
{
	int ret = capture(r, pid, note, note_len);

	if (ret == -EAGAIN)
		add_pending(r, pid);
	return ret;
}

static int capture(struct runtimes *r, pid_t pid, char *note, size_t note_len)
{
	struct wanted *w = malloc(sizeof(*w));
	struct runtime_process proc = {.pid = pid, .proc_root = r->proc_root};
	int ret;

	if (!w)
		return -ENOMEM;
	w->n = 0;
	ret = procmaps__foreach(r->proc_root, pid, collect_wanted, w);
	proc.maps = w->maps;
	proc.n_maps = w->n;
	for (int k = 0; !ret && w->n && k < RUNTIME__COUNT; k++) {
		ret = all_ops[k]->capture(r->state[k], &proc, &r->sink, note, note_len);
		if (ret == -EPROTONOSUPPORT)
			ret = note_once(r, note);
		else if (ret > 0) /* found: no other runtime runs this process */
			ret = 0;
		if (ret)
			break;
	}
	free(w);
	return ret;
}

void runtimes__forget_process(struct runtimes *r, pid_t pid)
{
	for (size_t i = 0; i < r->n_pending; i++) {
		if (r->pending[i].pid == pid) {
			drop_pending(r, i);
			break;
		}
	}
	for (int k = 0; k < RUNTIME__COUNT; k++)
		all_ops[k]->forget(r->state[k], pid, &r->sink);
}

void runtimes__set_java_perfmap(struct runtimes *r, bool on)
{
	hotspot_runtime__set_perfmap(r->state[RUNTIME_HOTSPOT], on);
}

bool runtimes__wants_path(const char *path)
{
	for (int k = 0; k < RUNTIME__COUNT; k++)
		if (all_ops[k]->wants(path))
			return true;
	return false;
}

bool runtimes__is_frame(uint64_t word)
{
	for (int k = 0; k < RUNTIME__COUNT; k++)
		if ((word & RUNTIME_FRAME_TAG_MASK) == all_ops[k]->frame_tag)
			return true;
	return false;
}

void runtimes__name_frame(struct runtimes *r, pid_t pid, uint64_t word, uint64_t cookie,
			  struct sym_frame *ret)
{
	for (int k = 0; k < RUNTIME__COUNT; k++) {
		if ((word & RUNTIME_FRAME_TAG_MASK) == all_ops[k]->frame_tag) {
			all_ops[k]->name_frame(r->state[k], pid, word, cookie, ret);
			return;
		}
	}
	snprintf(ret->function, sizeof(ret->function), "[unknown]");
	ret->file[0] = ret->module[0] = ret->build_id[0] = '\0';
	ret->known = 0;
}

int runtimes__stats(const struct runtimes *r, size_t index, const char **ret_name,
		    struct runtime_stats *ret)
{
	if (index >= RUNTIME__COUNT)
		return -ENOENT;
	*ret_name = all_ops[index]->name;
	all_ops[index]->stats(r->state[index], ret);
	return 0;
}
