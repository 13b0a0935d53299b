// SPDX-License-Identifier: Apache-2.0
/* HotSpot JVMs behind the runtime interface (runtime.h): finds libjvm.so, reads the VM's own
 * structure tables from the process, hands BPF the code cache, names Methods. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lru.h"
#include "runtimes/hotspot/hotspot_attach.h"
#include "runtimes/hotspot/hotspot_names.h"
#include "runtimes/hotspot/hotspot_runtime.h"
#include "runtimes/hotspot/hotspot_vmstructs.h"
#include "runtimes/procmem.h"
#include "runtimes/runtime_elf.h"

#define MAX_PROCESSES HOTSPOT_MAX_PROCESSES
#define PERFMAP_TIMEOUT_MS 2000 /* for a JVM's attach listener to start and answer */

/* One libjvm file's table symbols, kept by file identity: its dynamic symbols read once. */
struct file_key {
	uint64_t dev, ino, size, mtime_ns;
};

struct libjvm {
	int err; /* 0, or -ENOENT: no tables (not HotSpot's libjvm) */
	uint64_t load_base;
	struct hotspot_symbols sym; /* file addresses */
};

struct hotspot_runtime {
	struct lru *files; /* struct file_key -> struct libjvm */
	struct lru *procs; /* pid -> struct hotspot_layout */
	struct lru *names; /* struct name_key -> struct hotspot_name */
	struct runtime_stats stats;
	bool perfmap; /* java_perfmap: unreadable JVMs are asked for a perf map */
};

struct name_key {
	uint64_t pid;
	uint64_t method;
};

struct hotspot_name {
	uint64_t cookie;
	char *function;
};

static void free_value(void *value, void *ctx)
{
	free(value);
}

static void free_name(void *value, void *ctx)
{
	struct hotspot_name *n = value;
	struct hotspot_runtime *rt = ctx;

	if (rt)
		rt->stats.names_evicted++;
	free(n->function);
	free(n);
}

static void hotspot_free(void *state)
{
	struct hotspot_runtime *rt = state;

	if (!rt)
		return;
	lru__free(rt->files);
	lru__free(rt->procs);
	rt->stats.names_evicted = 0;
	lru__free(rt->names);
	free(rt);
}

static void *hotspot_new(void)
{
	struct hotspot_runtime *rt = calloc(1, sizeof(*rt));

	if (!rt)
		return NULL;
	rt->files = lru__new(HOTSPOT_SYMBOL_CACHE, free_value, NULL);
	rt->procs = lru__new(MAX_PROCESSES, free_value, NULL);
	rt->names = lru__new(HOTSPOT_NAME_CACHE, free_name, rt);
	if (!rt->files || !rt->procs || !rt->names) {
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

/* The table symbols of the libjvm at path, read once per file. NULL with *ret_err set when the
 * file cannot be read. */
static const struct libjvm *libjvm_get(struct hotspot_runtime *rt, const char *path, int *ret_err)
{
	struct file_key key = {0};
	struct runtime_elf *elf;
	struct libjvm *j;
	struct stat st;

	if (stat(path, &st)) {
		*ret_err = -errno;
		return NULL;
	}
	key.dev = st.st_dev;
	key.ino = st.st_ino;
	key.size = st.st_size;
	key.mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ULL + st.st_mtim.tv_nsec;
	j = lru__get(rt->files, &key, sizeof(key));
	if (j)
		return j;
	elf = runtime_elf__open(path);
	if (!elf) {
		*ret_err = -errno;
		return NULL;
	}
	j = calloc(1, sizeof(*j));
	if (j) {
		j->err = read_symbols(elf, &j->sym);
		if (!j->err && runtime_elf__load_base(elf, &j->load_base))
			j->err = -ENOENT;
	}
	runtime_elf__close(elf);
	if (!j || lru__put(rt->files, &key, sizeof(key), j)) {
		free(j);
		*ret_err = -ENOMEM;
		return NULL;
	}
	return j;
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

static int attach(struct hotspot_runtime *rt, pid_t pid, const struct hotspot_layout *layout,
		  const struct runtime_sink *sink)
{
	struct hotspot_layout *p;
	uint32_t key = pid;
	int err;

	err = sink->attach(sink->ctx, RUNTIME_HOTSPOT, pid, &layout->walk, sizeof(layout->walk));
	if (err) {
		rt->stats.attach_failed++;
		return err;
	}
	p = lru__get(rt->procs, &key, sizeof(key));
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p || lru__put(rt->procs, &key, sizeof(key), p)) {
			free(p);
			sink->detach(sink->ctx, RUNTIME_HOTSPOT, pid);
			return -ENOMEM;
		}
		rt->stats.processes_attached++; /* not again when captured again (an exec) */
	}
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
	int err = hotspot_attach__perfmap(proc->proc_root, proc->pid, PERFMAP_TIMEOUT_MS);

	snprintf(note + used, note_len - used, "; asked for its perf map (java_perfmap): %s",
		 err ? strerror(-err) : "written");
}

static int hotspot_capture(void *state, const struct runtime_process *proc,
			   const struct runtime_sink *sink, char *note, size_t note_len)
{
	struct hotspot_runtime *rt = state;
	char path[PROCMAPS_PATH_MAX + 64];
	struct hotspot_layout *layout;
	const struct libjvm *j;
	bool launcher = false;
	int err;

	for (size_t i = 0; i < proc->n_maps; i++) {
		const struct procmap_entry *m = &proc->maps[i];

		if (!hotspot_wants(m->path))
			continue;
		if (strcmp(base_name(m->path), "libjvm.so")) {
			launcher = true;
			continue;
		}
		snprintf(path, sizeof(path), "%s/%d/root%s", proc->proc_root, proc->pid, m->path);
		j = libjvm_get(rt, path, &err);
		if (!j || j->err)
			continue;
		layout = malloc(sizeof(*layout));
		if (!layout)
			return -ENOMEM;
		err = read_layout(proc->pid, j, m->start, layout);
		if (!err)
			err = attach(rt, proc->pid, layout, sink);
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

static void hotspot_forget(void *state, pid_t pid, const struct runtime_sink *sink)
{
	struct hotspot_runtime *rt = state;
	uint32_t key = pid;

	free(lru__remove(rt->procs, &key, sizeof(key)));
	sink->detach(sink->ctx, RUNTIME_HOTSPOT, pid);
}

/* The module Java frames get, as the perf-map path gives them: one function either way. */
#define HOTSPOT_MODULE "[jit:jvm]"

static void set_unknown(struct sym_frame *ret)
{
	snprintf(ret->function, sizeof(ret->function), "[unknown]");
	snprintf(ret->module, sizeof(ret->module), HOTSPOT_MODULE);
	ret->file[0] = ret->build_id[0] = '\0';
	ret->known = 0;
}

static int read_name(pid_t pid, const struct hotspot_layout *l, uint64_t method, uint64_t cookie,
		     struct hotspot_name *ret)
{
	struct hotspot_reader r = {.read = read_pid, .ctx = &pid};
	char name[SYM_NAME_MAX];
	int err;

	if (method & HOTSPOT_FRAME_BLOB) /* a stub: its name, a string in libjvm.so */
		err = hotspot_blob_name(&r, cookie, name, sizeof(name));
	else
		err = hotspot_method_name(&r, l, method, cookie, name, sizeof(name));
	if (err)
		return err;
	ret->cookie = cookie;
	ret->function = strdup(name);
	return ret->function ? 0 : -ENOMEM;
}

static void hotspot_name_frame(void *state, pid_t pid, uint64_t word, uint64_t cookie,
			       struct sym_frame *ret)
{
	struct hotspot_runtime *rt = state;
	struct name_key key = {.pid = (uint64_t)pid, .method = word & HOTSPOT_FRAME_ADDR_MASK};
	struct hotspot_layout *l;
	struct hotspot_name *n;
	uint32_t pid_key = pid;
	int err;

	n = lru__get(rt->names, &key, sizeof(key));
	if (n && n->cookie != cookie) { /* another Method at that address now */
		free_name(lru__remove(rt->names, &key, sizeof(key)), NULL);
		n = NULL;
	}
	if (!n) {
		l = lru__get(rt->procs, &pid_key, sizeof(pid_key));
		n = l ? calloc(1, sizeof(*n)) : NULL;
		err = n ? read_name(pid, l, key.method, cookie, n) : -ENOENT;
		if (err) {
			rt->stats.names_stale += err == -ESTALE;
			rt->stats.names_unreadable += err != -ESTALE;
			free(n);
			set_unknown(ret);
			return;
		}
		rt->stats.names_read++;
		if (lru__put(rt->names, &key, sizeof(key), n)) {
			free_name(n, NULL); /* out of memory: named, not kept */
			set_unknown(ret);
			return;
		}
	}
	snprintf(ret->function, sizeof(ret->function), "%s", n->function);
	snprintf(ret->module, sizeof(ret->module), HOTSPOT_MODULE);
	ret->file[0] = ret->build_id[0] = '\0';
	ret->known = 1;
}

static void hotspot_stats(const void *state, struct runtime_stats *ret)
{
	const struct hotspot_runtime *rt = state;

	*ret = rt->stats;
	ret->names_cached = lru__size(rt->names);
}

const struct runtime_ops hotspot_runtime_ops = {
    .name = "hotspot",
    .kind = RUNTIME_HOTSPOT,
    .frame_tag = HOTSPOT_FRAME_TAG,
    .new = hotspot_new,
    .free = hotspot_free,
    .wants = hotspot_wants,
    .capture = hotspot_capture,
    .forget = hotspot_forget,
    .name_frame = hotspot_name_frame,
    .stats = hotspot_stats,
};
