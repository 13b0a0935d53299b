// SPDX-License-Identifier: Apache-2.0
/* HotSpot JVMs behind the runtime interface (runtime.h): finds libjvm.so, reads the VM's own
 * structure tables from the process, hands BPF the code cache, names Methods. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtimes/hotspot/hotspot_attach.h"
#include "runtimes/hotspot/hotspot_inline.h"
#include "runtimes/hotspot/hotspot_inline_cache.h"
#include "runtimes/hotspot/hotspot_names.h"
#include "runtimes/hotspot/hotspot_runtime.h"
#include "runtimes/hotspot/hotspot_vmstructs.h"
#include "runtimes/frame_names.h"
#include "runtimes/procmem.h"
#include "runtimes/runtime_records.h"

#define PERFMAP_TIMEOUT_MS 2000 /* for a JVM's attach listener to start and answer */

/* What HotSpot keeps of one libjvm (runtime_records.h: read once per binary). */
struct libjvm {
	uint64_t load_base;
	struct hotspot_symbols sym; /* file addresses */
};

struct hotspot_runtime {
	struct frame_names *names;
	struct hotspot_inline_cache *inlined; /* compiled pcs -> the methods inlined there */
	struct runtime_stats stats;
	bool perfmap; /* java_perfmap: unreadable JVMs are asked for a perf map */
};

static void hotspot_free(void *state)
{
	struct hotspot_runtime *rt = state;

	if (!rt)
		return;
	frame_names__free(rt->names);
	hotspot_inline_cache__free(rt->inlined);
	free(rt);
}

static int read_name(void *ctx, pid_t pid, void *proc, uint64_t method, uint64_t cookie,
		     struct sym_frame *ret);

static void *hotspot_new(void)
{
	struct hotspot_runtime *rt = calloc(1, sizeof(*rt));

	if (!rt)
		return NULL;
	rt->names = frame_names__new(HOTSPOT_NAME_CACHE, read_name, rt);
	rt->inlined = hotspot_inline_cache__new(HOTSPOT_INLINE_CACHE);
	if (!rt->names || !rt->inlined) {
		hotspot_free(rt);
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

/* libjvm.so, and the java launcher: it maps libjvm.so a moment after exec, so a JVM seen
 * that early is captured again until its VM is up. */
static bool hotspot_wants(const char *path)
{
	const char *name = base_name(path);

	return !strcmp(name, "libjvm.so") || !strcmp(name, "java");
}

static int read_symbols(const struct runtime_elf *elf, struct hotspot_symbols *s)
{
#define SYM(field, name)                                                                           \
	{                                                                                          \
		&s->field, "gHotSpot" name                                                         \
	}
	const struct {
		uint64_t *to;
		const char *name;
	} all[] = {
	    SYM(structs, "VMStructs"),
	    SYM(types, "VMTypes"),
	    SYM(int_constants, "VMIntConstants"),
	    SYM(struct_type_name, "VMStructEntryTypeNameOffset"),
	    SYM(struct_field_name, "VMStructEntryFieldNameOffset"),
	    SYM(struct_is_static, "VMStructEntryIsStaticOffset"),
	    SYM(struct_offset, "VMStructEntryOffsetOffset"),
	    SYM(struct_address, "VMStructEntryAddressOffset"),
	    SYM(struct_stride, "VMStructEntryArrayStride"),
	    SYM(type_type_name, "VMTypeEntryTypeNameOffset"),
	    SYM(type_size, "VMTypeEntrySizeOffset"),
	    SYM(type_stride, "VMTypeEntryArrayStride"),
	    SYM(int_name, "VMIntConstantEntryNameOffset"),
	    SYM(int_value, "VMIntConstantEntryValueOffset"),
	    SYM(int_stride, "VMIntConstantEntryArrayStride"),
	};
#undef SYM
	uint64_t size;

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (runtime_elf__symbol(elf, all[i].name, all[i].to, &size))
			return -ENOENT;
	return 0;
}

static int read_binary(const struct runtime_elf *elf, const char *name, void *ret)
{
	struct libjvm *j = ret;
	int err = read_symbols(elf, &j->sym);

	if (!err && runtime_elf__load_base(elf, &j->load_base))
		err = -ENOENT;
	return err;
}

static int read_pid(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return procmem__read(*(pid_t *)ctx, addr, buf, len);
}

/* The symbols' addresses in the process: the library's load bias added. */
static void relocate(const struct hotspot_symbols *file, uint64_t bias, struct hotspot_symbols *ret)
{
	const uint64_t *from = (const uint64_t *)file;
	uint64_t *to = (uint64_t *)ret;

	for (size_t i = 0; i < sizeof(*file) / sizeof(uint64_t); i++)
		to[i] = from[i] + bias;
}

/* Hands BPF the walk state; keeps the layout for naming the process's frames (a capture again
 * replaces it: the heaps of a VM caught starting). */
static int attach(struct hotspot_runtime *rt, const struct runtime_process *proc,
		  const struct hotspot_layout *layout, const struct runtime_sink *sink)
{
	struct hotspot_layout *p;
	int err;

	p = runtime_process__attach(proc, sink, RUNTIME_HOTSPOT, &layout->walk,
				    sizeof(layout->walk), sizeof(*p), &rt->stats, &err);
	if (!p)
		return err;
	*p = *layout;
	return 1;
}

/* The JVM's layout read from the process: its tables, then its code heaps. -EAGAIN while the
 * VM is starting. */
static int read_layout(pid_t pid, const struct libjvm *j, uint64_t start,
		       struct hotspot_layout *ret)
{
	struct hotspot_reader r = {.read = read_pid, .ctx = &pid};
	struct hotspot_symbols sym;
	int err;

	relocate(&j->sym, start - j->load_base, &sym);
	err = hotspot_layout__read(&r, &sym, ret);
	if (err == -ENOENT)
		return -EAGAIN; /* libjvm mapped, its tables not set yet */
	return err ? err : hotspot_layout__heaps(&r, ret);
}

void hotspot_runtime__set_perfmap(void *state, bool on)
{
	struct hotspot_runtime *rt = state;

	rt->perfmap = on;
}

/* java_perfmap: the JVM writes /tmp/perf-PID.map, which the symboliser reads (once per
 * process: the map is a snapshot of the code cache then). Appends the outcome to note. */
static void ask_perfmap(const struct runtime_process *proc, char *note, size_t note_len)
{
	size_t used = strlen(note);
	int err = hotspot_attach__perfmap("/proc", proc->pid, PERFMAP_TIMEOUT_MS);

	snprintf(note + used, note_len - used, "; asked for its perf map (java_perfmap): %s",
		 err ? strerror(-err) : "written");
}

static int hotspot_capture(void *state, const struct runtime_process *proc,
			   const struct runtime_sink *sink, char *note, size_t note_len)
{
	struct hotspot_runtime *rt = state;
	struct hotspot_layout *layout;
	const struct libjvm *j;
	struct libjvm scratch;
	const void *facts;
	bool launcher = false;
	int err;

	for (size_t i = 0; i < proc->n_maps; i++) {
		const struct runtime_mapping *m = &proc->maps[i];

		if (!hotspot_wants(m->path))
			continue;
		if (strcmp(base_name(m->path), "libjvm.so")) {
			launcher = true;
			continue;
		}
		err = runtime_binary__facts(m, sizeof(scratch), read_binary, &scratch, &facts);
		j = facts;
		if (!j || err)
			continue; /* not HotSpot's libjvm (no tables), or unreadable */
		layout = malloc(sizeof(*layout));
		if (!layout)
			return -ENOMEM;
		err = read_layout(proc->pid, j, m->start, layout);
		if (!err)
			err = attach(rt, proc, layout, sink);
		else if (err == -EPROTONOSUPPORT) {
			rt->stats.unsupported++;
			snprintf(rt->stats.unsupported_version,
				 sizeof(rt->stats.unsupported_version), "%.*s",
				 (int)sizeof(rt->stats.unsupported_version) - 1,
				 layout->version[0] ? layout->version : "?");
			snprintf(note, note_len,
				 "hotspot %s (%s): its VMStructs lack what Java frames need, its "
				 "frames stay native",
				 layout->version[0] ? layout->version : "(unknown version)",
				 m->path);
			if (rt->perfmap)
				ask_perfmap(proc, note, note_len);
		}
		free(layout);
		return err;
	}
	return launcher ? -EAGAIN : 0; /* the launcher, before it loaded libjvm */
}

/* The module Java frames get, as the perf-map path gives them: one function either way. */
#define HOTSPOT_MODULE "[jit:jvm]"

/* Reads a Method's name (or a stub's) now (frame_names_read_fn); -ESTALE when its cookie is
 * no longer the sampled one. */
static int read_name(void *ctx, pid_t pid, void *proc, uint64_t method, uint64_t cookie,
		     struct sym_frame *ret)
{
	const struct hotspot_layout *l = proc;
	struct hotspot_reader r = {.read = read_pid, .ctx = &pid};

	if (!l)
		return -ENOENT;
	ret->file[0] = '\0';
	if (method & HOTSPOT_FRAME_BLOB) /* a stub: its name, a string in libjvm.so */
		return hotspot_blob_name(&r, cookie, ret->function, sizeof(ret->function));
	return hotspot_method_name(&r, l, method, cookie, ret->function, sizeof(ret->function));
}

static void hotspot_name_frame(void *state, pid_t pid, void *proc, uint64_t word, uint64_t cookie,
			       struct sym_frame *ret)
{
	struct hotspot_runtime *rt = state;

	if (word & HOTSPOT_FRAME_INLINED) /* its cookie is where it ran: hotspot_name_frames' */
		cookie = 0;
	frame_names__name(rt->names, pid, proc, word & HOTSPOT_FRAME_ADDR_MASK, cookie,
			  HOTSPOT_MODULE, ret);
}

/* A compiled frame (HOTSPOT_FRAME_INLINED): the methods inlined at its pc, innermost first,
 * each its own frame, then its own method; that one alone when its nmethod cannot be read
 * (counted), [unknown] when the Method cannot either. Other frames: one each. Two words. */
static size_t hotspot_name_frames(void *state, pid_t pid, void *proc, const uint64_t *words,
				  size_t n_words, struct sym_frame *ret, size_t max,
				  size_t *ret_frames)
{
	struct hotspot_runtime *rt = state;
	uint64_t word = words[0], cookie = words[1],
		 method = word & HOTSPOT_FRAME_ADDR_MASK & ~7ULL;
	struct hotspot_reader r = {.read = read_pid, .ctx = &pid};
	const struct hotspot_layout *layout = proc;
	struct hotspot_inlined chain = {0};
	size_t n;

	(void)n_words; /* >= 2: a Java frame is two words */
	*ret_frames = 1;
	if (!(word & HOTSPOT_FRAME_INLINED) || (word & HOTSPOT_FRAME_BLOB)) {
		hotspot_name_frame(state, pid, proc, word, cookie, ret);
		return 2;
	}
	if (layout) /* else: the Method unreadable, [unknown] below */
		hotspot_inline_cache__chain(rt->inlined, &r, layout, pid, method, cookie, &chain);
	n = chain.n < max - 1 ? chain.n : max - 1;
	for (size_t i = 0; i < n; i++)
		frame_names__name(rt->names, pid, proc, chain.method[i], chain.const_method[i],
				  HOTSPOT_MODULE, &ret[i]);
	if (chain.root_const_method) {
		frame_names__name(rt->names, pid, proc, method, chain.root_const_method,
				  HOTSPOT_MODULE, &ret[n]);
	} else { /* the Method itself unreadable (counted with the chain) */
		snprintf(ret[n].function, sizeof(ret[n].function), "[unknown]");
		snprintf(ret[n].module, sizeof(ret[n].module), "%s", HOTSPOT_MODULE);
		ret[n].file[0] = ret[n].build_id[0] = '\0';
		ret[n].known = 0;
	}
	*ret_frames = n + 1;
	return 2;
}

static void hotspot_stats(const void *state, struct runtime_stats *ret)
{
	const struct hotspot_runtime *rt = state;

	struct hotspot_inline_stats in;

	*ret = rt->stats;
	frame_names__stats(rt->names, ret);
	/* a chain read is a name read; one that failed left its frames to their root method */
	hotspot_inline_cache__stats(rt->inlined, &in);
	ret->names_read += in.read;
	ret->names_unreadable += in.failed;
	ret->names_cached += in.cached;
	ret->names_evicted += in.evicted;
	/* the nmethods' PcDesc tables: read, replaced for room, dropped as another's now */
	ret->code_read += in.pcs_read;
	ret->code_evicted += in.pcs_evicted;
	ret->code_stale += in.pcs_stale;
}

/* The PcDesc tables used this window are checked to be of the nmethod still there. */
static void hotspot_end_window(void *state)
{
	struct hotspot_runtime *rt = state;

	if (rt)
		hotspot_inline_cache__end_window(rt->inlined, read_pid);
}

const struct runtime_ops hotspot_runtime_ops = {
    .name = "hotspot",
    .kind = RUNTIME_HOTSPOT,
    .frame_tag = HOTSPOT_FRAME_TAG,
    .new = hotspot_new,
    .free = hotspot_free,
    .wants = hotspot_wants,
    .capture = hotspot_capture,
    .name_frame = hotspot_name_frame,
    .name_frames = hotspot_name_frames,
    .stats = hotspot_stats,
    .end_window = hotspot_end_window,
};
