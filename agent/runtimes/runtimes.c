// SPDX-License-Identifier: Apache-2.0
/* The interpreter runtimes (Python today; Ruby, PHP, HotSpot, V8 to follow runtime.h): detects
 * each captured process's runtime, attaches its walk state, names the interpreter frames. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "process/process_registry.h"
#include "runtimes/hotspot/hotspot_runtime.h"
#include "runtimes/php/php_runtime.h"
#include "runtimes/python/python_runtime.h"
#include "runtimes/ruby/ruby_runtime.h"
#include "runtimes/runtimes.h"
#include "runtimes/v8/v8_runtime.h"

#define MAX_NOTES 32	  /* distinct "no table" notes remembered (then: counted only) */
#define MAX_WANTED_MAPS 8 /* binaries a process hands its runtimes */
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
	struct process_registry *reg;
	int binary_slot;  /* struct cells on each binary a runtime read: its facts */
	int process_slot; /* struct cells on each process record: the runtime's state */
	void *state[RUNTIME__COUNT];
	char *notes[MAX_NOTES]; /* reported once */
	size_t n_notes;
	struct pending pending[MAX_PENDING];
	size_t n_pending;
	int64_t last_retry_ms;
};

/* One malloc'd block per runtime on a registry record (a binary's facts, a process's state),
 * freed with the record. */
struct cells {
	void *cell[RUNTIME__COUNT];
};

static void cells_free(void *state, void *ctx)
{
	struct cells *c = state;

	for (int k = 0; k < RUNTIME__COUNT; k++)
		free(c->cell[k]);
	free(c);
}

struct runtimes *runtimes__new(const struct runtime_sink *sink, struct process_registry *reg)
{
	struct runtimes *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->sink = *sink;
	r->reg = reg;
	r->binary_slot = process_registry__add_binary_slot(reg, cells_free, r);
	r->process_slot = process_registry__add_process_slot(reg, cells_free, r);
	if (r->binary_slot < 0 || r->process_slot < 0) {
		if (r->binary_slot >= 0)
			process_registry__remove_binary_slot(reg, r->binary_slot);
		free(r);
		errno = ENOSPC;
		return NULL;
	}
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
	process_registry__remove_binary_slot(r->reg, r->binary_slot);
	process_registry__remove_process_slot(r->reg, r->process_slot);
	for (size_t i = 0; i < r->n_notes; i++)
		free(r->notes[i]);
	free(r);
}

/* The binaries some runtime wants, once each, from the registry's mappings (a handful). */
struct wanted {
	struct runtime_mapping maps[MAX_WANTED_MAPS];
	struct binary *bins[MAX_WANTED_MAPS];
	size_t n;
};

static bool wanted_already(const struct wanted *w, const struct binary *bin)
{
	for (size_t i = 0; i < w->n; i++)
		if (w->bins[i] == bin)
			return true;
	return false;
}

static void collect_wanted(const struct process *p, struct wanted *w)
{
	w->n = 0;
	for (size_t i = 0; i < p->n_mappings && w->n < MAX_WANTED_MAPS; i++) {
		const struct process_mapping *m = &p->mappings[i];

		if (m->kind != PROCESS_MAPPING_FILE || wanted_already(w, m->bin) ||
		    !runtimes__wants_path(m->path))
			continue;
		w->maps[w->n] =
		    (struct runtime_mapping){.path = m->path, .start = m->base, .bin = m->bin};
		w->bins[w->n++] = m->bin;
	}
}

/* The cells on a binary, made on first use; NULL when out of memory. */
static struct cells *binary_cells(struct runtimes *r, struct binary *b)
{
	struct cells *c = binary__slot(b, r->binary_slot);

	if (!c) {
		c = calloc(1, sizeof(*c));
		binary__set_slot(b, r->binary_slot, c);
	}
	return c;
}

static struct cells *process_cells(struct runtimes *r, struct process *p)
{
	struct cells *c = process__slot(p, r->process_slot);

	if (!c) {
		c = calloc(1, sizeof(*c));
		process__set_slot(p, r->process_slot, c);
	}
	return c;
}

/* Points the process's state and each wanted binary's facts at runtime kind's cells. */
static void point_cells(struct runtimes *r, struct process *p, struct wanted *w, int kind,
			struct runtime_process *proc)
{
	struct cells *pc = process_cells(r, p);

	proc->state = pc ? &pc->cell[kind] : NULL;
	for (size_t i = 0; i < w->n; i++) {
		struct cells *bc = binary_cells(r, w->bins[i]);

		w->maps[i].facts = bc ? &bc->cell[kind] : NULL;
	}
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

static int capture(struct runtimes *r, struct process *p, pid_t pid, char *note, size_t note_len);

bool runtimes__has_pending(const struct runtimes *r)
{
	return r->n_pending > 0;
}

int runtimes__retry_pending(struct runtimes *r, char *note, size_t note_len)
{
	int64_t now = monotonic_ms();
	struct process *p;
	int ret;

	if (!r->n_pending || now - r->last_retry_ms < RETRY_MS)
		return 0;
	r->last_retry_ms = now;
	for (size_t i = 0; i < r->n_pending;) {
		/* its maps as they are now: the library it was waiting for may be mapped since */
		p = process_registry__get(r->reg, r->pending[i].pid);
		ret = p ? process_registry__refresh(r->reg, p) : -ESRCH;
		if (!ret)
			ret = capture(r, p, r->pending[i].pid, note, note_len);
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
	struct process *p = process_registry__get(r->reg, pid);
	int ret;

	if (!p)
		return -ESRCH;
	ret = capture(r, p, pid, note, note_len);
	if (ret == -EAGAIN)
		add_pending(r, pid);
	return ret;
}

static int capture(struct runtimes *r, struct process *p, pid_t pid, char *note, size_t note_len)
{
	struct wanted w;
	struct runtime_process proc = {.pid = pid, .maps = w.maps};
	int ret = 0;

	collect_wanted(p, &w);
	proc.n_maps = w.n;
	for (int k = 0; !ret && w.n && k < RUNTIME__COUNT; k++) {
		point_cells(r, p, &w, k, &proc);
		ret = all_ops[k]->capture(r->state[k], &proc, &r->sink, note, note_len);
		if (ret == -EPROTONOSUPPORT)
			ret = note_once(r, note);
		else if (ret > 0) /* found: no other runtime runs this process */
			ret = 0;
		if (ret)
			break;
	}
	return ret;
}

/* The state is the registry's (gone with the record): only BPF's copy is left to drop. */
void runtimes__forget_process(struct runtimes *r, pid_t pid)
{
	for (size_t i = 0; i < r->n_pending; i++) {
		if (r->pending[i].pid == pid) {
			drop_pending(r, i);
			break;
		}
	}
	for (int k = 0; k < RUNTIME__COUNT; k++)
		r->sink.detach(r->sink.ctx, k, pid);
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

/* What runtime kind keeps of pid: its current image's, else (an exec in this window) the
 * image it replaced, whose samples are still being named. Nothing is read. */
static void *process_state(struct runtimes *r, pid_t pid, int kind)
{
	const struct process *p = process_registry__peek(r->reg, pid);

	for (; p; p = p->prev) {
		const struct cells *c = process__slot(p, r->process_slot);

		if (c && c->cell[kind])
			return c->cell[kind];
	}
	return NULL;
}

void runtimes__name_frame(struct runtimes *r, pid_t pid, uint64_t word, uint64_t cookie,
			  struct sym_frame *ret)
{
	for (int k = 0; k < RUNTIME__COUNT; k++) {
		if ((word & RUNTIME_FRAME_TAG_MASK) == all_ops[k]->frame_tag) {
			all_ops[k]->name_frame(r->state[k], pid, process_state(r, pid, k), word,
					       cookie, ret);
			return;
		}
	}
	snprintf(ret->function, sizeof(ret->function), "[unknown]");
	ret->file[0] = ret->module[0] = ret->build_id[0] = '\0';
	ret->known = 0;
}

size_t runtimes__name_frames(struct runtimes *r, pid_t pid, const uint64_t *words, size_t n,
			     struct sym_frame *ret, size_t max, size_t *ret_frames)
{
	for (int k = 0; k < RUNTIME__COUNT; k++) {
		if ((words[0] & RUNTIME_FRAME_TAG_MASK) == all_ops[k]->frame_tag &&
		    all_ops[k]->name_frames)
			return all_ops[k]->name_frames(r->state[k], pid, process_state(r, pid, k),
						       words, n, ret, max, ret_frames);
	}
	*ret_frames = 1;
	runtimes__name_frame(r, pid, words[0], words[1], ret);
	return 2;
}

void runtimes__end_window(struct runtimes *r)
{
	for (int k = 0; k < RUNTIME__COUNT; k++)
		if (all_ops[k]->end_window)
			all_ops[k]->end_window(r->state[k]);
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
