// SPDX-License-Identifier: Apache-2.0
/* CPython behind the runtime interface (runtime.h): finds _PyRuntime and the eval loop in the
 * interpreter binary or libpython, picks the version's offsets, names code objects. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtimes/procmem.h"
#include "runtimes/python/python_names.h"
#include "runtimes/python/python_runtime.h"
#include "runtimes/runtime_base.h"
#include "runtimes/runtime_records.h"
#include "runtimes/runtime_elf.h"

struct python_process {
	const struct python_version *version;
};

static int read_name(void *ctx, pid_t pid, void *proc, uint64_t code, uint64_t cookie,
		     struct sym_frame *ret);

static void *python_new(void)
{
	return runtime_base__new(sizeof(struct runtime_base), PYTHON_NAME_CACHE, read_name);
}

/* The interpreter binary (python3.11) or its library (libpython3.11.so.1.0). */
static bool python_wants(const char *path)
{
	return runtime_file_starts(path, (const char *const[]){"python", "libpython", NULL});
}

int python_version_from_name(const char *name, unsigned *ret_major, unsigned *ret_minor)
{
	const char *p = strstr(name, "python");
	unsigned major, minor;

	if (!p || sscanf(p, "python%u.%u", &major, &minor) != 2)
		return -ENOENT;
	*ret_major = major;
	*ret_minor = minor;
	return 0;
}

/* The eval loop's hot range, and its .cold part where the binary still has the local symbol
 * (.symtab); without it, a sample in the cold part keeps its native frame. */
static void read_eval_ranges(const struct runtime_elf *elf, struct python_binary *ret)
{
	static const char *const names[PYTHON_EVAL_RANGES] = {"_PyEval_EvalFrameDefault",
							      "_PyEval_EvalFrameDefault.cold"};
	uint64_t addr, size;

	for (int i = 0; i < PYTHON_EVAL_RANGES; i++) {
		if (runtime_elf__symbol(elf, names[i], &addr, &size) || !size)
			continue;
		ret->eval_start[i] = addr;
		ret->eval_end[i] = addr + size;
	}
}

int python_binary__read_elf(const struct runtime_elf *elf, const char *name,
			    struct python_binary *ret)
{
	const uint32_t *hex;
	const void *dbg;
	uint64_t addr, size;
	int err;

	memset(ret, 0, sizeof(*ret));
	err = runtime_elf__symbol(elf, "_PyRuntime", &ret->runtime, &size);
	if (!err)
		err = runtime_elf__load_base(elf, &ret->load_base);
	if (err)
		return err;
	read_eval_ranges(elf, ret);
	dbg = runtime_elf__at(elf, ret->runtime, PYTHON_DEBUG_OFFSETS_SIZE);
	ret->has_debug_offsets = dbg && !python_debug_offsets__parse(dbg, &ret->debug);
	/* Py_Version (3.11+) is PY_VERSION_HEX: 0x030b07f0 is 3.11.7 */
	hex = !runtime_elf__symbol(elf, "Py_Version", &addr, &size)
		  ? runtime_elf__at(elf, addr, sizeof(*hex))
		  : NULL;
	if (hex) {
		ret->major = *hex >> 24;
		ret->minor = *hex >> 16 & 0xff;
	} else if (python_version_from_name(name, &ret->major, &ret->minor)) {
		ret->major = ret->minor = 0;
	}
	if (!ret->eval_end[0])
		err = -ENOENT; /* an interpreter without its eval loop's symbol: no walk */
	return err;
}

int python_binary__read(const char *path, const char *name, struct python_binary *ret)
{
	struct runtime_elf *elf = runtime_elf__open(path);
	int err;

	if (!elf)
		return -errno;
	err = python_binary__read_elf(elf, name, ret);
	runtime_elf__close(elf);
	return err;
}

static int read_binary(const struct runtime_elf *elf, const char *name, void *ret)
{
	return python_binary__read_elf(elf, name, ret);
}

/* The walk state of a process whose binary (mapped from start) was read. */
static void fill_proc(const struct python_binary *b, uint64_t start, const struct python_version *v,
		      struct python_proc *ret)
{
	uint64_t bias = start - b->load_base;

	memset(ret, 0, sizeof(*ret));
	ret->runtime = b->runtime + bias;
	for (int i = 0; i < PYTHON_EVAL_RANGES; i++) {
		if (!b->eval_end[i])
			continue;
		ret->eval_start[i] = b->eval_start[i] + bias;
		ret->eval_end[i] = b->eval_end[i] + bias;
	}
	ret->off = v->walk;
}

/* Hands BPF the walk state; keeps the version for naming the process's frames. */
static int attach(struct runtime_base *rt, const struct runtime_process *proc,
		  const struct python_version *v, const struct python_proc *walk,
		  const struct runtime_sink *sink)
{
	struct python_process *p;
	int err;

	p = runtime_process__attach(proc, sink, RUNTIME_PYTHON, walk, sizeof(*walk), sizeof(*p),
				    &rt->stats, &err);
	if (!p)
		return err;
	p->version = v;
	return 1;
}

static int python_capture(void *state, const struct runtime_process *proc,
			  const struct runtime_sink *sink, char *note, size_t note_len)
{
	struct runtime_base *rt = state;
	const struct python_version *v;
	const struct python_binary *b;
	struct python_binary scratch;
	struct python_proc walk;
	const void *facts;

	for (size_t i = 0; i < proc->n_maps; i++) {
		const struct runtime_mapping *m = &proc->maps[i];

		if (!python_wants(m->path))
			continue;
		/* python3.11 linked to libpython: the library has _PyRuntime */
		if (runtime_binary__facts(m, sizeof(scratch), read_binary, &scratch, &facts))
			continue;
		b = facts;
		v = python_version__find(b->major, b->minor);
		if (v && b->minor == 13 && b->has_debug_offsets &&
		    python_version__check(v, &b->debug)) {
			return runtime_base__unsupported(
			    rt, b->major, b->minor, "t", note, note_len,
			    "python %u.%u (%s): its _Py_DebugOffsets disagree with the %u.%u table "
			    "(free-threaded or debug build), its frames stay native",
			    b->major, b->minor, m->path, b->major, b->minor);
		}
		if (!v)
			return runtime_base__unsupported(
			    rt, b->major, b->minor, "", note, note_len,
			    "python %u.%u (%s): no offset table, its frames stay native", b->major,
			    b->minor, m->path);
		fill_proc(b, m->start, v, &walk);
		return attach(rt, proc, v, &walk, sink);
	}
	return 0;
}

static int read_pid(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return procmem__read(*(pid_t *)ctx, addr, buf, len);
}

/* Reads a code object's names now (frame_names_read_fn); -ESTALE when its cookie is no
 * longer the sampled one. */
static int read_name(void *ctx, pid_t pid, void *proc, uint64_t code, uint64_t cookie,
		     struct sym_frame *ret)
{
	unsigned char head[PYTHON_CODE_HEADER];
	char qualname[SYM_NAME_MAX], module[SYM_NAME_MAX];
	uint64_t now, file_obj, name_obj;
	const struct python_process *p = proc;
	const struct python_version *v;
	int err;

	if (!p)
		return -ENOENT;
	v = p->version;
	err = procmem__read(pid, code, head, sizeof(head));
	if (err)
		return err;
	memcpy(&now, head + v->walk.code_cookie, sizeof(now));
	if (now != cookie)
		return -ESTALE;
	memcpy(&file_obj, head + v->co_filename, sizeof(file_obj));
	memcpy(&name_obj, head + (v->co_qualname != PYTHON_NO_OFFSET ? v->co_qualname : v->co_name),
	       sizeof(name_obj));
	err = python_str_decode(v, read_pid, &pid, name_obj, qualname, sizeof(qualname));
	if (!err)
		err = python_str_decode(v, read_pid, &pid, file_obj, ret->file, sizeof(ret->file));
	if (err)
		return err;
	python_module_name(ret->file, module, sizeof(module));
	/* module.qualname, cut to fit as the frame shows it */
	if (snprintf(ret->function, sizeof(ret->function), "%s.%s", module, qualname) < 0)
		return -EINVAL;
	return 0;
}

static void python_name_frame(void *state, pid_t pid, void *proc, uint64_t word, uint64_t cookie,
			      struct sym_frame *ret)
{
	struct runtime_base *rt = state;

	frame_names__name(rt->names, pid, proc, word & PYTHON_FRAME_ADDR_MASK, cookie, "[python]",
			  ret);
}

const struct runtime_ops python_runtime_ops = {
    .name = "python",
    .kind = RUNTIME_PYTHON,
    .frame_tag = PYTHON_FRAME_TAG,
    .new = python_new,
    .free = runtime_base__free,
    .wants = python_wants,
    .capture = python_capture,
    .name_frame = python_name_frame,
    .stats = runtime_base__stats,
};
