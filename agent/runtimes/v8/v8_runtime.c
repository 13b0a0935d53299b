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
#include "runtimes/runtime_binary.h"
#include "runtimes/v8/v8_layout.h"
#include "runtimes/v8/v8_names.h"
#include "runtimes/v8/v8_runtime.h"

/* What V8 keeps of one binary (runtime_binary.h: read once per binary, 100 MB of symbols). */
struct v8_binary {
	struct v8_layout layout;
	uint64_t load_base;
};

struct v8_runtime {
	struct lru *procs; /* pid -> struct v8_process */
	struct frame_names *names;
	struct runtime_stats stats;
};

struct v8_process {
	struct v8_layout layout; /* a copy: the binary cache may drop its entry */
};

static void free_value(void *value, void *ctx)
{
	free(value);
}

static void v8_free(void *state)
{
	struct v8_runtime *rt = state;

	if (!rt)
		return;
	lru__free(rt->procs);
	frame_names__free(rt->names);
	free(rt);
}

static int read_name(void *ctx, pid_t pid, uint64_t sfi, uint64_t cookie, struct sym_frame *ret);

static void *v8_new(void)
{
	struct v8_runtime *rt = calloc(1, sizeof(*rt));

	if (!rt)
		return NULL;
	rt->procs = lru__new(V8_MAX_PROCESSES, free_value, NULL);
	rt->names = frame_names__new(V8_NAME_CACHE, read_name, rt);
	if (!rt->procs || !rt->names) {
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

static int attach(struct v8_runtime *rt, pid_t pid, const struct v8_binary *b, uint64_t start,
		  const struct runtime_sink *sink)
{
	struct v8_proc walk = b->layout.walk;
	uint64_t bias = start - b->load_base;
	struct v8_process *p;
	uint32_t key = pid;
	int err;

	if (walk.blob_code_var) {
		walk.blob_code_var += bias;
		walk.blob_size_var += bias;
	}
	err = sink->attach(sink->ctx, RUNTIME_V8, pid, &walk, sizeof(walk));
	if (err) {
		rt->stats.attach_failed++;
		return err;
	}
	p = lru__get(rt->procs, &key, sizeof(key));
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p || lru__put(rt->procs, &key, sizeof(key), p)) {
			free(p);
			sink->detach(sink->ctx, RUNTIME_V8, pid);
			return -ENOMEM;
		}
	}
	p->layout = b->layout;
	rt->stats.processes_attached++;
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
		return attach(rt, proc->pid, b, m->start, sink);
	}
	return 0;
}

static void v8_forget(void *state, pid_t pid, const struct runtime_sink *sink)
{
	struct v8_runtime *rt = state;
	uint32_t key = pid;

	free(lru__remove(rt->procs, &key, sizeof(key)));
	sink->detach(sink->ctx, RUNTIME_V8, pid);
}

/* The module the perf-map path gives V8 frames: a function named either way is one function. */
#define V8_MODULE "[jit:v8]"

static int read_pid(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return procmem__read(*(pid_t *)ctx, addr, buf, len);
}

/* Reads a SharedFunctionInfo's name and script now (frame_names_read_fn); -ESTALE when its
 * cookie is no longer the sampled one. */
static int read_name(void *ctx, pid_t pid, uint64_t sfi, uint64_t cookie, struct sym_frame *ret)
{
	struct v8_runtime *rt = ctx;
	uint32_t pid_key = pid;
	const struct v8_process *p = lru__get(rt->procs, &pid_key, sizeof(pid_key));
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

static void v8_name_frame(void *state, pid_t pid, uint64_t word, uint64_t cookie,
			  struct sym_frame *ret)
{
	struct v8_runtime *rt = state;

	frame_names__name(rt->names, pid, word & V8_FRAME_ADDR_MASK, cookie, V8_MODULE, ret);
}

static void v8_stats(const void *state, struct runtime_stats *ret)
{
	const struct v8_runtime *rt = state;

	*ret = rt->stats;
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
    .forget = v8_forget,
    .name_frame = v8_name_frame,
    .stats = v8_stats,
};
