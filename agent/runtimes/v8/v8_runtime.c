// SPDX-License-Identifier: Apache-2.0
/* V8 (Node.js and other embedders exporting v8dbg_*) behind the runtime interface (runtime.h):
 * reads the binary's layout, hands BPF where JS frames are, names SharedFunctionInfos. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lru.h"
#include "runtimes/frame_names.h"
#include "runtimes/procmem.h"
#include "runtimes/runtime_records.h"
#include "runtimes/v8/v8_inline.h"
#include "runtimes/v8/v8_layout.h"
#include "runtimes/v8/v8_names.h"
#include "runtimes/v8/v8_runtime.h"

/* What V8 keeps of one binary (runtime_records.h: read once per binary, 100 MB of symbols). */
struct v8_binary {
	struct v8_layout layout;
	uint64_t load_base;
};

struct v8_runtime {
	struct frame_names *names;
	struct lru *codes; /* struct code_key -> struct v8_code_info (v8_inline.h) */
	struct runtime_stats stats;
	uint64_t codes_evicted;
	bool closing; /* frees at the end are not evictions */
};

/* An optimised code object of a process, by its untagged address. */
struct code_key {
	uint64_t pid;
	uint64_t code;
};

struct v8_process {
	struct v8_layout layout; /* a copy: the binary cache may drop its entry */
};

static void v8_free(void *state)
{
	struct v8_runtime *rt = state;

	if (!rt)
		return;
	rt->closing = true;
	lru__free(rt->codes);
	frame_names__free(rt->names);
	free(rt);
}

static void code_evicted(void *value, void *ctx)
{
	struct v8_runtime *rt = ctx;

	rt->codes_evicted += !rt->closing;
	free(value);
}

static int read_name(void *ctx, pid_t pid, void *proc, uint64_t sfi, uint64_t cookie,
		     struct sym_frame *ret);

static void *v8_new(void)
{
	struct v8_runtime *rt = calloc(1, sizeof(*rt));

	if (!rt)
		return NULL;
	rt->names = frame_names__new(V8_NAME_CACHE, read_name, rt);
	rt->codes = lru__new(V8_CODE_CACHE, code_evicted, rt);
	if (!rt->names || !rt->codes) {
		v8_free(rt);
		errno = ENOMEM;
		return NULL;
	}
	return rt;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* Binaries that embed V8 with its post-mortem constants: node (nodejs, node20, ...), and
 * libnode for embedders linking it. Which one is V8 is decided by its symbols. */
static bool v8_wants(const char *path)
{
	const char *name = base_name(path);

	return !strncmp(name, "node", 4) || !strncmp(name, "libnode", 7);
}

static int read_binary(const struct runtime_elf *elf, const char *name, void *ret)
{
	struct v8_binary *b = ret;
	int err = v8_layout__read(elf, &b->layout);

	if (!err && runtime_elf__load_base(elf, &b->load_base))
		err = -ENOENT;
	return err;
}

/* Hands BPF the walk state (the blob's variables moved by the load bias); keeps the layout
 * for naming the process's frames. */
static int attach(struct v8_runtime *rt, const struct runtime_process *proc,
		  const struct v8_binary *b, uint64_t start, const struct runtime_sink *sink)
{
	struct v8_proc walk = b->layout.walk;
	uint64_t bias = start - b->load_base;
	struct v8_process *p;
	int err;

	if (walk.blob_code_var) {
		walk.blob_code_var += bias;
		walk.blob_size_var += bias;
	}
	p = runtime_process__attach(proc, sink, RUNTIME_V8, &walk, sizeof(walk), sizeof(*p),
				    &rt->stats, &err);
	if (!p)
		return err;
	p->layout = b->layout;
	return 1;
}

static int v8_capture(void *state, const struct runtime_process *proc,
		      const struct runtime_sink *sink, char *note, size_t note_len)
{
	struct v8_runtime *rt = state;
	const struct v8_binary *b;
	struct v8_binary scratch;
	const void *facts;
	int err;

	for (size_t i = 0; i < proc->n_maps; i++) {
		const struct runtime_mapping *m = &proc->maps[i];

		if (!v8_wants(m->path))
			continue;
		err = runtime_binary__facts(m, sizeof(scratch), read_binary, &scratch, &facts);
		b = facts;
		if (!b || err == -ENOENT)
			continue; /* not V8 (or unreadable): the next mapping may be */
		if (err) {
			rt->stats.unsupported++;
			snprintf(rt->stats.unsupported_version,
				 sizeof(rt->stats.unsupported_version), "%u.%u.%u", b->layout.major,
				 b->layout.minor, b->layout.patch);
			snprintf(note, note_len,
				 "v8 %u.%u.%u (%s): its v8dbg_* constants lack what JS frames need "
				 "(or tagged values are compressed), its frames stay native",
				 b->layout.major, b->layout.minor, b->layout.patch, m->path);
			return -EPROTONOSUPPORT;
		}
		return attach(rt, proc, b, m->start, sink);
	}
	return 0;
}

/* The module the perf-map path gives V8 frames: a function named either way is one function. */
#define V8_MODULE "[jit:v8]"

static int read_pid(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return procmem__read(*(pid_t *)ctx, addr, buf, len);
}

/* Reads a SharedFunctionInfo's name and script now (frame_names_read_fn); -ESTALE when its
 * cookie is no longer the sampled one. */
static int read_name(void *ctx, pid_t pid, void *proc, uint64_t sfi, uint64_t cookie,
		     struct sym_frame *ret)
{
	const struct v8_process *p = proc;
	struct v8_reader r = {.read = read_pid, .ctx = &pid};
	struct v8_function f;
	int err;

	if (!p)
		return -ENOENT;
	r.layout = &p->layout;
	err = v8_function_read(&r, sfi, cookie, &f);
	if (err)
		return err;
	v8_function_name(&f, ret->function, sizeof(ret->function));
	snprintf(ret->file, sizeof(ret->file), "%s", f.file);
	return 0;
}

static void name_function(struct v8_runtime *rt, pid_t pid, void *proc, uint64_t sfi,
			  uint64_t cookie, struct sym_frame *ret)
{
	frame_names__name(rt->names, pid, proc, sfi, cookie, V8_MODULE, ret);
}

/* Reads the optimised code (tagged) of pid now and keeps it, replacing what was kept at its
 * address: NULL when it cannot be read (counted). entry, when not 0, is its instruction start
 * when sampled: other code there now is not kept. Its functions are named now, while they
 * live (their names outlive the process, in frame_names). */
static const struct v8_code_info *code_read(struct v8_runtime *rt, pid_t pid, void *proc,
					    uint64_t code, uint64_t entry)
{
	const struct v8_process *p = proc;
	struct v8_reader r = {.read = read_pid, .ctx = &pid};
	struct code_key key = {.pid = (uint64_t)pid, .code = code - 1};
	struct v8_code_info *c = NULL;
	struct sym_frame scratch;

	if (!p)
		return NULL;
	r.layout = &p->layout;
	free(lru__remove(rt->codes, &key, sizeof(key)));
	if (v8_code_read(&r, code, &c) || (entry && c->entry != entry) ||
	    lru__put(rt->codes, &key, sizeof(key), c)) {
		free(c);
		rt->stats.code_unreadable++;
		return NULL;
	}
	rt->stats.code_read++;
	name_function(rt, pid, proc, c->sfi, c->cookie, &scratch);
	for (uint32_t i = 0; i < c->n_functions; i++)
		name_function(rt, pid, proc, c->functions[i].sfi, c->functions[i].cookie, &scratch);
	return c;
}

/* The code kept for (pid, code) when it is sfi's, else read now. */
static const struct v8_code_info *code_get(struct v8_runtime *rt, pid_t pid, void *proc,
					   uint64_t code, uint64_t sfi)
{
	struct code_key key = {.pid = (uint64_t)pid, .code = code - 1};
	const struct v8_code_info *c = lru__get(rt->codes, &key, sizeof(key));

	if (!c || c->sfi != sfi)
		c = code_read(rt, pid, proc, code, 0);
	if (c && c->sfi != sfi) {
		rt->stats.code_unreadable++; /* other code there now */
		return NULL;
	}
	return c;
}

static void v8_name_frame(void *state, pid_t pid, void *proc, uint64_t word, uint64_t cookie,
			  struct sym_frame *ret)
{
	struct v8_runtime *rt = state;
	const struct v8_code_info *c;

	if ((word & 3) == V8_CODE_NOTE) {
		/* optimised code announced (v8_frames.h): read while it lives, named later */
		struct code_key key = {.pid = (uint64_t)pid,
				       .code = word & V8_FRAME_ADDR_MASK & ~7ULL};

		c = lru__get(rt->codes, &key, sizeof(key));
		if (!c || c->entry != cookie)
			c = code_read(rt, pid, proc, key.code | 1, cookie);
		if (c) {
			name_function(rt, pid, proc, c->sfi, c->cookie, ret);
			return;
		}
		snprintf(ret->function, sizeof(ret->function), "[unknown]"); /* counted */
		snprintf(ret->module, sizeof(ret->module), "%s", V8_MODULE);
		ret->file[0] = ret->build_id[0] = '\0';
		ret->known = 0;
		return;
	}
	name_function(rt, pid, proc, word & V8_FRAME_ADDR_MASK, cookie, ret);
}

/* An optimised frame (three words, v8_frames.h): the functions inlined at its pc offset, each
 * above its caller, then the outer function (always: the code gone, it alone). */
static size_t v8_name_frames(void *state, pid_t pid, void *proc, const uint64_t *words, size_t n,
			     struct sym_frame *ret, size_t max, size_t *ret_frames)
{
	struct v8_runtime *rt = state;
	uint64_t sfi = words[0] & V8_FRAME_ADDR_MASK & ~V8_FRAME_OPTIMISED;
	uint32_t chain[V8_INLINE_MAX_DEPTH];
	const struct v8_code_info *c;
	size_t k = 0;

	if (!(words[0] & V8_FRAME_OPTIMISED) || n < 3) {
		*ret_frames = 1;
		name_function(rt, pid, proc, sfi, words[1], ret);
		return 2;
	}
	c = code_get(rt, pid, proc, (words[2] & ((1ULL << V8_CODE_ADDR_BITS) - 1)) << 3 | 1, sfi);
	if (c)
		k = v8_inline_chain(c, (uint32_t)(words[2] >> V8_CODE_ADDR_BITS), chain,
				    max - 1 < V8_INLINE_MAX_DEPTH ? max - 1 : V8_INLINE_MAX_DEPTH);
	for (size_t i = 0; i < k; i++)
		name_function(rt, pid, proc, c->functions[chain[i]].sfi,
			      c->functions[chain[i]].cookie, &ret[i]);
	rt->stats.inlined_frames += k;
	name_function(rt, pid, proc, sfi, words[1], &ret[k]);
	*ret_frames = k + 1;
	return 3;
}

static void v8_stats(const void *state, struct runtime_stats *ret)
{
	const struct v8_runtime *rt = state;

	*ret = rt->stats;
	ret->code_evicted = rt->codes_evicted;
	frame_names__stats(rt->names, ret);
}

const struct runtime_ops v8_runtime_ops = {
    .name = "v8",
    .kind = RUNTIME_V8,
    .frame_tag = V8_FRAME_TAG,
    .new = v8_new,
    .free = v8_free,
    .wants = v8_wants,
    .capture = v8_capture,
    .name_frame = v8_name_frame,
    .name_frames = v8_name_frames,
    .stats = v8_stats,
};
