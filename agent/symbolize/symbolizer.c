// SPDX-License-Identifier: Apache-2.0
/* Symboliser facade: per-process captured mappings, a bounded binary cache keyed by build-id
 * (dev+inode without one), lazy symbol loading from pinned fds, kallsyms, perf maps, counts. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "demangle.h"
#include "elf_symbols.h"
#include "jitname.h"
#include "kallsyms.h"
#include "lru.h"
#include "perfmap.h"
#include "procmaps.h"
#include "symbol_source.h"
#include "symbolizer.h"

#define DEFAULT_MAX_BINARIES 256
#define DEFAULT_MAX_SYMBOL_BYTES (8u << 20)
#define DEFAULT_MAX_PROCESSES 4096
#define NSEC_PER_MSEC 1000000ULL
#define RECAPTURE_INTERVAL_NS (100 * NSEC_PER_MSEC) /* maps re-read on a miss, at most */
#define VALIDATE_INTERVAL_NS (1000 * NSEC_PER_MSEC) /* exec check on repeated capture */
#define PERFMAP_CHECK_NS (200 * NSEC_PER_MSEC)	    /* perf map file re-stat */
/* Misses that keep missing back off, doubling up to these: frame-pointer walks through code
 * built without frame pointers yield addresses in no mapping, every window. */
#define RECAPTURE_MAX_NS (60 * 1000 * NSEC_PER_MSEC)
#define PERFMAP_ABSENT_MAX_NS (60 * 1000 * NSEC_PER_MSEC)
#define KALLSYMS_RELOAD_NS (60 * 1000 * NSEC_PER_MSEC) /* modules, BPF programs come and go */
#define KALLSYMS_RELOAD_MAX_NS (3600 * 1000 * NSEC_PER_MSEC)
#define KEY_MAX 96
#define COMM_MAX 16

static const char UNKNOWN[] = "[unknown]";

struct binary {
	int refs;
	char key[KEY_MAX];
	char build_id[SYM_BUILD_ID_MAX];
	int fd; /* pinned from capture for the binary's life: dropped symbols are read again */
	struct symtab *syms;
	int load_err;
	struct binary *newer, *older; /* in the symbolizer's list of loaded tables */
	struct symbolizer *owner;
};

/* dev+inode -> binary key: finds a cached binary without opening the file again. */
struct inode_alias {
	char key[KEY_MAX];
	char path[];
};

enum mapping_kind { MAP_FILE, MAP_UNREADABLE, MAP_ANON, MAP_VDSO };

struct mapping {
	uint64_t start, end, offset;
	struct binary *bin; /* MAP_FILE only */
	char *module;
	enum mapping_kind kind;
};

struct proc {
	pid_t pid, nspid;
	uint32_t image;	   /* the BPF program's image number of this capture */
	struct proc *prev; /* the image before an exec, until its window has been named */
	char comm[COMM_MAX];
	struct mapping *maps;
	size_t nmaps;
	uint64_t captured_ns, validated_ns;
	dev_t exe_dev;
	ino_t exe_ino;
	uid_t uid;
	bool gone;
	struct perfmap *perfmap;
	uint64_t perfmap_checked_ns;
	uint64_t recapture_wait_ns, perfmap_wait_ns; /* current backoffs */
	off_t perfmap_size;
	struct timespec perfmap_mtime;
	struct symbolizer *owner;
};

struct symbolizer {
	char proc_root[256];
	char tmp_dir[256];
	struct lru *binaries;		/* key -> struct binary (holds one reference) */
	struct lru *inodes;		/* "major:minor:inode" -> struct inode_alias */
	struct lru *procs;		/* pid -> struct proc */
	struct binary *newest, *oldest; /* binaries whose symbols are loaded, by last use */
	size_t max_symbol_bytes;
	struct kallsyms *kallsyms;
	uint64_t kallsyms_loaded_ns;
	uint64_t kallsyms_reload_ns; /* after a miss; doubles while reloads do not help */
	struct elf_symbols *vdso;
	size_t vdso_size;
	int vdso_err;
	pid_t *replaced; /* pids whose previous image is kept until the window ends */
	size_t n_replaced, replaced_cap;
	struct symbolizer_stats stats;
	/* The calls a resolved address's function inlined (leaf first, after ret->function),
	 * for symbolizer__resolve_user_frames. */
	const char *inlined[SYMTAB_MAX_FRAMES];
	size_t n_inlined;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* --- binaries ------------------------------------------------------------------------- */

static void loaded_unlink(struct symbolizer *s, struct binary *bin)
{
	if (bin->newer)
		bin->newer->older = bin->older;
	else
		s->newest = bin->older;
	if (bin->older)
		bin->older->newer = bin->newer;
	else
		s->oldest = bin->newer;
	bin->newer = bin->older = NULL;
}

static void loaded_push(struct symbolizer *s, struct binary *bin)
{
	bin->older = s->newest;
	bin->newer = NULL;
	if (s->newest)
		s->newest->newer = bin;
	s->newest = bin;
	if (!s->oldest)
		s->oldest = bin;
}

static void drop_symbols(struct symbolizer *s, struct binary *bin)
{
	if (!bin->syms)
		return;
	loaded_unlink(s, bin);
	s->stats.symbol_bytes -= symtab__memory(bin->syms);
	symtab__free(bin->syms);
	bin->syms = NULL;
}

static void binary_unref(struct binary *bin)
{
	if (!bin || --bin->refs > 0)
		return;
	if (bin->fd >= 0)
		close(bin->fd);
	drop_symbols(bin->owner, bin);
	free(bin);
}

/* Keeps the loaded tables under max_symbol_bytes: the least recently used go first (their
 * binaries stay, and are read again from the pinned fd if a frame needs them). The table in
 * use is kept even when it alone is larger. */
static void trim_symbols(struct symbolizer *s, const struct binary *in_use)
{
	while (s->stats.symbol_bytes > s->max_symbol_bytes && s->oldest && s->oldest != in_use) {
		drop_symbols(s, s->oldest);
		s->stats.symbol_tables_dropped++;
	}
}

static void binary_evicted(void *value, void *ctx)
{
	struct symbolizer *s = ctx;

	s->stats.binaries_evicted++;
	binary_unref(value);
}

static void alias_evicted(void *value, void *ctx)
{
	free(value);
}

/* Symbols of a binary, read on first use from the fd pinned at capture through the symbol
 * sources (symbol_source.h); a table waiting for debuginfod is checked again on use. */
static const struct symtab *binary_symbols(struct symbolizer *s, struct binary *bin)
{
	struct symtab *t;

	if (bin->syms) {
		size_t before = symtab__memory(bin->syms);

		if (symtab__refresh(bin->syms))
			s->stats.symbol_bytes += symtab__memory(bin->syms) - before;
		loaded_unlink(s, bin);
		loaded_push(s, bin);
		return bin->syms;
	}
	if (bin->load_err)
		return NULL;
	t = symtab__load(bin->fd, bin->build_id, NULL);
	if (!t) {
		bin->load_err = errno ? -errno : -EIO;
		return NULL;
	}
	bin->syms = t;
	s->stats.binaries_loaded++;
	s->stats.symbol_bytes += symtab__memory(t);
	loaded_push(s, bin);
	trim_symbols(s, bin);
	return t;
}

/* Opens the file behind a mapping: map_files (exact, works for deleted files), else the
 * path seen from the process's root, else the path; a path must still be that inode. */
static int open_mapping_file(struct symbolizer *s, pid_t pid, const struct procmap_entry *e)
{
	char path[PROCMAPS_PATH_MAX + 300];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/%d/map_files/%" PRIx64 "-%" PRIx64, s->proc_root, (int)pid,
		 e->start, e->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	if (e->deleted)
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/%d/root%s", s->proc_root, (int)pid, e->path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fd = open(e->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* Replaced since it was mapped (an upgrade): not the code that ran. */
	if (fstat(fd, &st) || st.st_ino != e->inode) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

static int remember_inode(struct symbolizer *s, const char *ikey, const char *key, const char *path)
{
	size_t len = strlen(path) + 1;
	struct inode_alias *a = malloc(sizeof(*a) + len);
	int err;

	if (!a)
		return -ENOMEM;
	snprintf(a->key, sizeof(a->key), "%s", key);
	memcpy(a->path, path, len);
	free(lru__remove(s->inodes, ikey, strlen(ikey)));
	err = lru__put(s->inodes, ikey, strlen(ikey), a);
	if (err)
		free(a);
	return err;
}

static struct binary *new_binary(struct symbolizer *s, const char *key, const char *build_id,
				 int fd)
{
	struct binary *bin = calloc(1, sizeof(*bin));

	if (!bin)
		return NULL;
	bin->refs = 1; /* the cache's */
	bin->fd = fd;
	bin->owner = s;
	snprintf(bin->key, sizeof(bin->key), "%s", key);
	snprintf(bin->build_id, sizeof(bin->build_id), "%s", build_id);
	if (lru__put(s->binaries, key, strlen(key), bin)) {
		free(bin);
		return NULL;
	}
	return bin;
}

/* The cached binary behind a file mapping, a new reference; NULL when it cannot be read. */
static struct binary *get_binary(struct symbolizer *s, pid_t pid, const struct procmap_entry *e)
{
	char ikey[KEY_MAX], key[KEY_MAX], build_id[SYM_BUILD_ID_MAX] = "";
	struct inode_alias *alias;
	struct binary *bin;
	int fd;

	snprintf(ikey, sizeof(ikey), "%x:%x:%" PRIu64, e->dev_major, e->dev_minor, e->inode);
	alias = lru__get(s->inodes, ikey, strlen(ikey));
	if (alias && strcmp(alias->path, e->path) == 0) {
		bin = lru__get(s->binaries, alias->key, strlen(alias->key));
		if (bin) {
			s->stats.binary_cache_hits++;
			bin->refs++;
			return bin;
		}
	}
	fd = open_mapping_file(s, pid, e);
	if (fd < 0)
		return NULL;
	s->stats.binaries_opened++;
	if (elf_build_id_fd(fd, build_id, sizeof(build_id)) == -ENOEXEC) {
		close(fd);
		return NULL;
	}
	if (build_id[0])
		snprintf(key, sizeof(key), "b:%s", build_id);
	else
		snprintf(key, sizeof(key), "i:%s", ikey);
	bin = lru__get(s->binaries, key, strlen(key));
	if (bin) {
		s->stats.binary_cache_hits++;
		close(fd);
	} else {
		bin = new_binary(s, key, build_id, fd);
		if (!bin) {
			close(fd);
			return NULL;
		}
	}
	remember_inode(s, ikey, key, e->path); /* only an optimisation: failure is harmless */
	bin->refs++;
	return bin;
}

/* --- processes ------------------------------------------------------------------------ */

static void free_mappings(struct mapping *maps, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		binary_unref(maps[i].bin);
		free(maps[i].module);
	}
	free(maps);
}

static void proc_free(struct proc *p)
{
	if (!p)
		return;
	proc_free(p->prev);
	free_mappings(p->maps, p->nmaps);
	perfmap__free(p->perfmap);
	free(p);
}

static void proc_evicted(void *value, void *ctx)
{
	struct symbolizer *s = ctx;

	s->stats.processes_evicted += 1 + (((struct proc *)value)->prev != NULL);
	proc_free(value);
}

struct capture_ctx {
	struct symbolizer *s;
	pid_t pid;
	struct mapping *maps;
	size_t n, cap;
	int err;
};

static enum mapping_kind mapping_kind(const struct procmap_entry *e)
{
	if (strcmp(e->path, "[vdso]") == 0)
		return MAP_VDSO;
	if (procmaps__is_file(e))
		return MAP_FILE;
	return MAP_ANON;
}

static int capture_one(const struct procmap_entry *e, void *arg)
{
	struct capture_ctx *c = arg;
	struct mapping *m;

	if (!e->executable)
		return 0;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct mapping *v = realloc(c->maps, cap * sizeof(*v));

		if (!v)
			return c->err = -ENOMEM;
		c->maps = v;
		c->cap = cap;
	}
	m = &c->maps[c->n];
	*m = (struct mapping){.start = e->start, .end = e->end, .offset = e->offset};
	m->kind = mapping_kind(e);
	m->module = strdup(e->path[0] ? e->path : "[anon]");
	if (!m->module)
		return c->err = -ENOMEM;
	if (m->kind == MAP_FILE) {
		m->bin = get_binary(c->s, c->pid, e);
		if (!m->bin)
			m->kind = MAP_UNREADABLE;
	}
	c->n++;
	return 0;
}

static void read_comm(struct symbolizer *s, struct proc *p)
{
	char path[320];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%d/comm", s->proc_root, (int)p->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, p->comm, sizeof(p->comm) - 1);
	close(fd);
	if (n <= 0)
		return;
	p->comm[n] = '\0';
	p->comm[strcspn(p->comm, "\n")] = '\0';
}

/* The pid as the process itself sees it (last NSpid field), for perf-PID.map in containers. */
static pid_t read_nspid(struct symbolizer *s, pid_t pid)
{
	char path[320], *line = NULL;
	size_t cap = 0;
	pid_t nspid = pid;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d/status", s->proc_root, (int)pid);
	f = fopen(path, "re");
	if (!f)
		return pid;
	while (getline(&line, &cap, f) > 0) {
		if (strncmp(line, "NSpid:", 6) == 0) {
			char *last = strrchr(line, '\t');

			if (last)
				nspid = (pid_t)strtol(last + 1, NULL, 10);
			break;
		}
	}
	free(line);
	fclose(f);
	return nspid > 0 ? nspid : pid;
}

/* The process's user: /proc/PID is owned by its effective uid. */
static uid_t read_uid(struct symbolizer *s, pid_t pid)
{
	char path[320];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%d", s->proc_root, (int)pid);
	return stat(path, &st) ? 0 : st.st_uid;
}

static int exe_identity(struct symbolizer *s, pid_t pid, dev_t *ret_dev, ino_t *ret_ino)
{
	char path[320];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%d/exe", s->proc_root, (int)pid);
	if (stat(path, &st))
		return -errno;
	*ret_dev = st.st_dev;
	*ret_ino = st.st_ino;
	return 0;
}

/* (Re)reads a process's executable mappings; keeps the old ones when it is gone. */
static int capture_maps(struct symbolizer *s, struct proc *p)
{
	struct capture_ctx c = {.s = s, .pid = p->pid};
	int err = procmaps__foreach(s->proc_root, p->pid, capture_one, &c);

	if (!err)
		err = c.err;
	/* An exited process not yet reaped reads as no mappings: keep what it had. */
	if (!err && !c.n && p->nmaps)
		err = -ESRCH;
	p->captured_ns = now_ns();
	if (err) {
		free_mappings(c.maps, c.n);
		if (err == -ESRCH)
			p->gone = true;
		return err;
	}
	free_mappings(p->maps, p->nmaps);
	p->maps = c.maps;
	p->nmaps = c.n;
	return 0;
}

static struct proc *new_proc(struct symbolizer *s, pid_t pid, uint32_t image, int *ret_err)
{
	struct proc *p = calloc(1, sizeof(*p));
	int err;

	if (!p) {
		*ret_err = -ENOMEM;
		return NULL;
	}
	p->pid = pid;
	p->image = image;
	p->owner = s;
	p->recapture_wait_ns = RECAPTURE_INTERVAL_NS;
	p->perfmap_wait_ns = PERFMAP_CHECK_NS;
	read_comm(s, p);
	p->uid = read_uid(s, pid);
	exe_identity(s, pid, &p->exe_dev, &p->exe_ino); /* kernel threads have none */
	p->validated_ns = now_ns();
	err = capture_maps(s, p);
	if (!err)
		err = lru__put(s->procs, &pid, sizeof(pid), p);
	if (err) {
		proc_free(p);
		*ret_err = err;
		return NULL;
	}
	s->stats.processes_captured++;
	return p;
}

/* An exec since capture replaces every mapping: re-read when the executable changed. */
static void revalidate(struct symbolizer *s, struct proc *p)
{
	dev_t dev;
	ino_t ino;
	uint64_t now = now_ns();

	if (p->gone || now - p->validated_ns < VALIDATE_INTERVAL_NS)
		return;
	p->validated_ns = now;
	if (exe_identity(s, p->pid, &dev, &ino))
		return;
	if (dev == p->exe_dev && ino == p->exe_ino)
		return;
	p->exe_dev = dev;
	p->exe_ino = ino;
	read_comm(s, p);
	capture_maps(s, p);
}

int symbolizer__capture_process(struct symbolizer *s, pid_t pid)
{
	struct proc *p = lru__get(s->procs, &pid, sizeof(pid));
	int err = 0;

	if (pid <= 0)
		return -EINVAL;
	if (p) {
		revalidate(s, p);
		return 0;
	}
	return new_proc(s, pid, 0, &err) ? 0 : err;
}

static int remember_replaced(struct symbolizer *s, pid_t pid)
{
	if (s->n_replaced == s->replaced_cap) {
		size_t cap = s->replaced_cap ? 2 * s->replaced_cap : 64;
		pid_t *grown = realloc(s->replaced, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		s->replaced = grown;
		s->replaced_cap = cap;
	}
	s->replaced[s->n_replaced++] = pid;
	return 0;
}

int symbolizer__capture_image(struct symbolizer *s, pid_t pid, uint32_t image)
{
	struct proc *old = lru__get(s->procs, &pid, sizeof(pid)), *p;
	int err = 0;

	if (pid <= 0)
		return -EINVAL;
	if (old && old->image == image) {
		revalidate(s, old);
		return 0;
	}
	if (old && remember_replaced(s, pid))
		return -ENOMEM; /* keep naming the old image rather than lose it */
	if (old)
		lru__remove(s->procs, &pid, sizeof(pid));
	p = new_proc(s, pid, image, &err);
	if (!p) { /* gone before its new image could be read: the old one is still of use */
		if (old && lru__put(s->procs, &pid, sizeof(pid), old))
			proc_free(old);
		return err;
	}
	if (old) {
		s->stats.processes_forgotten += old->prev != NULL;
		proc_free(old->prev);
		old->prev = NULL;
		p->prev = old;
		s->stats.images_replaced++;
	}
	return 0;
}

void symbolizer__end_window(struct symbolizer *s)
{
	for (size_t i = 0; i < s->n_replaced; i++) {
		struct proc *p = lru__get(s->procs, &s->replaced[i], sizeof(pid_t));

		if (p && p->prev) {
			s->stats.processes_forgotten++;
			proc_free(p->prev);
			p->prev = NULL;
		}
	}
	s->n_replaced = 0;
}

void symbolizer__forget_process(struct symbolizer *s, pid_t pid)
{
	struct proc *p = lru__remove(s->procs, &pid, sizeof(pid));

	if (p)
		s->stats.processes_forgotten += 1 + (p->prev != NULL);
	proc_free(p);
}

const char *symbolizer__comm(struct symbolizer *s, pid_t pid)
{
	struct proc *p = lru__get(s->procs, &pid, sizeof(pid));

	return p ? p->comm : "";
}

/* The captured image a sample of (pid, image) belongs to: the current one, the one it
 * replaced, or a newer one whose announcement was lost (captured now). NULL when none. */
static struct proc *proc_image(struct symbolizer *s, pid_t pid, uint32_t image)
{
	struct proc *p = lru__get(s->procs, &pid, sizeof(pid));
	int err = 0;

	if (!p)
		return pid > 0 ? new_proc(s, pid, image, &err) : NULL;
	if (p->image == image)
		return p;
	if (p->prev && p->prev->image == image)
		return p->prev;
	if ((int32_t)(image - p->image) > 0 && !symbolizer__capture_image(s, pid, image)) {
		p = lru__get(s->procs, &pid, sizeof(pid));
		return p && p->image == image ? p : NULL;
	}
	return NULL; /* an older image, already dropped */
}

const char *symbolizer__comm_image(struct symbolizer *s, pid_t pid, uint32_t image)
{
	struct proc *p = proc_image(s, pid, image);

	return p ? p->comm : "";
}

/* --- resolution ----------------------------------------------------------------------- */

static const struct mapping *find_mapping(const struct proc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->nmaps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < p->maps[mid].start)
			hi = mid;
		else if (addr >= p->maps[mid].end)
			lo = mid + 1;
		else
			return &p->maps[mid];
	}
	return NULL;
}

static bool perfmap_changed(const struct proc *p, const struct stat *st)
{
	return !p->perfmap || st->st_size != p->perfmap_size ||
	       st->st_mtim.tv_sec != p->perfmap_mtime.tv_sec ||
	       st->st_mtim.tv_nsec != p->perfmap_mtime.tv_nsec;
}

/* The process's perf map, re-read when the file changed (JITs append), rate-limited. */
static const struct perfmap *proc_perfmap(struct symbolizer *s, struct proc *p)
{
	char paths[2][PROCMAPS_PATH_MAX];
	uint64_t now = now_ns();

	if (p->perfmap_checked_ns && now - p->perfmap_checked_ns < p->perfmap_wait_ns)
		return p->perfmap;
	p->perfmap_checked_ns = now;
	if (!p->nspid)
		p->nspid = p->gone ? p->pid : read_nspid(s, p->pid);
	snprintf(paths[0], sizeof(paths[0]), "%s/%d/root%s/perf-%d.map", s->proc_root, (int)p->pid,
		 s->tmp_dir, (int)p->nspid);
	snprintf(paths[1], sizeof(paths[1]), "%s/perf-%d.map", s->tmp_dir, (int)p->pid);
	for (int i = 0; i < 2; i++) {
		struct perfmap *pm;
		struct stat st;

		if (stat(paths[i], &st) || !S_ISREG(st.st_mode))
			continue;
		/* As perf does: only a map written by the process's user (or root) names it. */
		if (st.st_uid != 0 && st.st_uid != p->uid)
			continue;
		if (!perfmap_changed(p, &st))
			break;
		pm = perfmap__load(paths[i]);
		if (!pm)
			continue;
		perfmap__free(p->perfmap);
		p->perfmap = pm;
		p->perfmap_size = st.st_size;
		p->perfmap_mtime = st.st_mtim;
		break;
	}
	/* A JIT appends to its map: check often. No map yet: back off. */
	if (p->perfmap)
		p->perfmap_wait_ns = PERFMAP_CHECK_NS;
	else if (p->perfmap_wait_ns < PERFMAP_ABSENT_MAX_NS)
		p->perfmap_wait_ns *= 2;
	return p->perfmap;
}

static void set_unknown(struct symbolizer *s, struct sym_frame *ret, enum sym_unknown_reason why,
			const char *module)
{
	snprintf(ret->function, sizeof(ret->function), "%s", UNKNOWN);
	ret->file[0] = '\0';
	snprintf(ret->module, sizeof(ret->module), "%s", module ? module : "");
	ret->known = 0;
	s->stats.unknown[why]++;
}

static void set_known(struct sym_frame *ret, const char *name, const char *module)
{
	demangle(name, ret->function, sizeof(ret->function));
	ret->file[0] = '\0';
	snprintf(ret->module, sizeof(ret->module), "%s", module);
	ret->known = 1;
}

/* A perf-map entry: one name per function whatever its tier or source position, its file
 * apart, its runtime in the module ("[jit:v8]"). A format we do not know is kept as written
 * (demangled: some JITs write C++ symbols) under "[jit]". */
static void set_jit(struct sym_frame *ret, const char *perf_map_name)
{
	struct jit_name jit;
	const char *runtime;

	jitname__parse(perf_map_name, &jit);
	if (jit.runtime == JIT_RUNTIME_UNKNOWN)
		return set_known(ret, perf_map_name, "[jit]");
	runtime = jitname__runtime_name(jit.runtime);
	snprintf(ret->function, sizeof(ret->function), "%s", jit.function);
	snprintf(ret->file, sizeof(ret->file), "%s", jit.file);
	snprintf(ret->module, sizeof(ret->module), "[jit:%s]", runtime);
	ret->known = 1;
}

static const struct elf_symbols *vdso_symbols(struct symbolizer *s)
{
	if (!s->vdso && !s->vdso_err) {
		s->vdso = elf_symbols__load_own_vdso(&s->vdso_size);
		if (!s->vdso)
			s->vdso_err = errno ? -errno : -ENOENT;
	}
	return s->vdso;
}

/* Names addr inside an ELF image mapped at m, or NULL. */
static const char *elf_name(const struct elf_symbols *es, const struct mapping *m, uint64_t addr)
{
	uint64_t vaddr;

	if (elf_symbols__offset_to_vaddr(es, addr - m->start + m->offset, &vaddr))
		return NULL;
	return elf_symbols__lookup(es, vaddr);
}

static const enum sym_unknown_reason unnamed_reasons[] = {
    [SYMTAB_UNNAMED_NO_SYMBOLS] = SYM_UNKNOWN_NO_SYMBOL,
    [SYMTAB_UNNAMED_DEBUGINFOD_WAITING] = SYM_UNKNOWN_DEBUGINFOD_WAITING,
    [SYMTAB_UNNAMED_DEBUGINFOD_FAILED] = SYM_UNKNOWN_DEBUGINFOD_FAILED,
};

/* A file-backed frame: its names leaf first; the first is ret, the others wait in
 * s->inlined for symbolizer__resolve_user_frames. */
static void resolve_in_file(struct symbolizer *s, const struct mapping *m, uint64_t addr,
			    struct sym_frame *ret)
{
	const struct symtab *t = binary_symbols(s, m->bin);
	const char *names[SYMTAB_MAX_FRAMES];
	size_t n;

	if (!t)
		return set_unknown(s, ret, SYM_UNKNOWN_UNREADABLE, m->module);
	n = symtab__lookup(t, addr - m->start + m->offset, names, SYMTAB_MAX_FRAMES);
	if (!n)
		return set_unknown(s, ret, unnamed_reasons[symtab__unnamed(t)], m->module);
	set_known(ret, names[0], m->module);
	s->n_inlined = n - 1;
	memcpy(s->inlined, names + 1, (n - 1) * sizeof(*names));
}

static void resolve_in_mapping(struct symbolizer *s, struct proc *p, const struct mapping *m,
			       uint64_t addr, struct sym_frame *ret)
{
	const struct elf_symbols *es;
	const struct perfmap *pm;
	const char *name;

	switch (m->kind) {
	case MAP_ANON:
		pm = proc_perfmap(s, p);
		name = pm ? perfmap__lookup(pm, addr) : NULL;
		if (name)
			return set_jit(ret, name);
		return set_unknown(s, ret, SYM_UNKNOWN_JIT, m->module);
	case MAP_VDSO:
		es = vdso_symbols(s);
		/* Ours stands for theirs only when it is the same image (same ABI). */
		name = es && m->end - m->start == s->vdso_size ? elf_name(es, m, addr) : NULL;
		if (name)
			return set_known(ret, name, m->module);
		return set_unknown(s, ret, SYM_UNKNOWN_NO_SYMBOL, m->module);
	case MAP_UNREADABLE:
		return set_unknown(s, ret, SYM_UNKNOWN_UNREADABLE, m->module);
	case MAP_FILE:
		snprintf(ret->build_id, sizeof(ret->build_id), "%s", m->bin->build_id);
		return resolve_in_file(s, m, addr, ret);
	}
}

void symbolizer__resolve_user(struct symbolizer *s, pid_t pid, uint64_t addr, struct sym_frame *ret)
{
	struct proc *p = lru__get(s->procs, &pid, sizeof(pid));

	symbolizer__resolve_user_image(s, pid, p ? p->image : 0, addr, ret);
}

void symbolizer__resolve_user_image(struct symbolizer *s, pid_t pid, uint32_t image, uint64_t addr,
				    struct sym_frame *ret)
{
	const struct mapping *m = NULL;
	const struct perfmap *pm;
	const char *name;
	struct proc *p;

	ret->build_id[0] = '\0';
	s->n_inlined = 0;
	p = proc_image(s, pid, image);
	if (!p)
		return set_unknown(s, ret, SYM_UNKNOWN_NO_MAPPING, NULL);
	m = find_mapping(p, addr);
	/* Mapped since capture (dlopen, a JIT's new region): re-read the maps, rate-limited. */
	if (!m && !p->gone && now_ns() - p->captured_ns >= p->recapture_wait_ns) {
		s->stats.recaptures++;
		capture_maps(s, p);
		m = find_mapping(p, addr);
		if (m)
			p->recapture_wait_ns = RECAPTURE_INTERVAL_NS;
		else if (p->recapture_wait_ns < RECAPTURE_MAX_NS)
			p->recapture_wait_ns *= 2;
	}
	if (m)
		return resolve_in_mapping(s, p, m, addr, ret);
	pm = proc_perfmap(s, p);
	name = pm ? perfmap__lookup(pm, addr) : NULL;
	if (name)
		return set_jit(ret, name);
	set_unknown(s, ret, SYM_UNKNOWN_NO_MAPPING, NULL);
}

size_t symbolizer__resolve_user_frames(struct symbolizer *s, pid_t pid, uint32_t image,
				       uint64_t addr, struct sym_frame *ret, size_t max)
{
	size_t n = 1;

	if (!max)
		return 0;
	symbolizer__resolve_user_image(s, pid, image, addr, &ret[0]);
	/* ret[0] is the innermost inlined call; its callers follow, the holder last. */
	for (size_t i = 0; i < s->n_inlined && n < max; i++, n++) {
		set_known(&ret[n], s->inlined[i], ret[0].module);
		snprintf(ret[n].build_id, sizeof(ret[n].build_id), "%s", ret[0].build_id);
	}
	s->n_inlined = 0;
	return n;
}

/* Loads kallsyms on first use; again after a miss once it is a minute old (longer while
 * reloads do not name the missed address: a reload costs ~150 ms of CPU). */
static void load_kallsyms(struct symbolizer *s, bool missed)
{
	struct kallsyms *ks;
	char path[300];
	uint64_t now = now_ns();

	if (s->kallsyms_loaded_ns &&
	    (!missed || now - s->kallsyms_loaded_ns < s->kallsyms_reload_ns))
		return;
	s->kallsyms_loaded_ns = now;
	snprintf(path, sizeof(path), "%s/kallsyms", s->proc_root);
	/* The old table goes first: two at once would double the agent's peak memory. */
	kallsyms__free(s->kallsyms);
	s->kallsyms = NULL;
	ks = kallsyms__load(path);
	if (!ks)
		return; /* unreadable or hidden (kptr_restrict): kernel frames stay unknown */
	s->kallsyms = ks;
}

void symbolizer__preload_kernel(struct symbolizer *s)
{
	load_kallsyms(s, false);
}

void symbolizer__resolve_kernel(struct symbolizer *s, uint64_t addr, struct sym_frame *ret)
{
	const char *name = NULL;

	ret->build_id[0] = '\0';
	load_kallsyms(s, false);
	if (s->kallsyms)
		name = kallsyms__lookup(s->kallsyms, addr, NULL);
	if (!name) {
		uint64_t loaded = s->kallsyms_loaded_ns;

		load_kallsyms(s, true);
		if (s->kallsyms)
			name = kallsyms__lookup(s->kallsyms, addr, NULL);
		if (loaded != s->kallsyms_loaded_ns && !name &&
		    s->kallsyms_reload_ns < KALLSYMS_RELOAD_MAX_NS)
			s->kallsyms_reload_ns *= 2;
		else if (loaded != s->kallsyms_loaded_ns && name)
			s->kallsyms_reload_ns = KALLSYMS_RELOAD_NS;
	}
	if (!name)
		return set_unknown(s, ret, SYM_UNKNOWN_KERNEL, "[kernel]");
	snprintf(ret->function, sizeof(ret->function), "%s", name);
	ret->file[0] = '\0';
	snprintf(ret->module, sizeof(ret->module), "[kernel]");
	ret->known = 1;
}

/* --- lifecycle ------------------------------------------------------------------------ */

struct symbolizer *symbolizer__new(const struct symbolizer_options *opts)
{
	struct symbolizer_options o = opts ? *opts : (struct symbolizer_options){0};
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	snprintf(s->proc_root, sizeof(s->proc_root), "%s", o.proc_root ? o.proc_root : "/proc");
	snprintf(s->tmp_dir, sizeof(s->tmp_dir), "%s", o.tmp_dir ? o.tmp_dir : "/tmp");
	s->kallsyms_reload_ns = KALLSYMS_RELOAD_NS;
	if (!o.max_binaries)
		o.max_binaries = DEFAULT_MAX_BINARIES;
	if (!o.max_processes)
		o.max_processes = DEFAULT_MAX_PROCESSES;
	s->max_symbol_bytes = o.max_symbol_bytes ? o.max_symbol_bytes : DEFAULT_MAX_SYMBOL_BYTES;
	s->binaries = lru__new(o.max_binaries, binary_evicted, s);
	s->inodes = lru__new(o.max_binaries * 4, alias_evicted, s);
	s->procs = lru__new(o.max_processes, proc_evicted, s);
	if (!s->binaries || !s->inodes || !s->procs) {
		symbolizer__free(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

void symbolizer__free(struct symbolizer *s)
{
	if (!s)
		return;
	/* Processes first: they hold references to binaries. */
	lru__free(s->procs);
	lru__free(s->binaries);
	lru__free(s->inodes);
	free(s->replaced);
	kallsyms__free(s->kallsyms);
	elf_symbols__free(s->vdso);
	free(s);
}

void symbolizer__stats(const struct symbolizer *s, struct symbolizer_stats *ret)
{
	*ret = s->stats;
	ret->processes_cached = lru__size(s->procs);
}

const char *symbolizer__reason_name(enum sym_unknown_reason reason)
{
	static const char *const names[SYM_UNKNOWN__COUNT] = {
	    [SYM_UNKNOWN_NO_MAPPING] = "no_mapping",
	    [SYM_UNKNOWN_UNREADABLE] = "unreadable",
	    [SYM_UNKNOWN_NO_SYMBOL] = "no_symbol",
	    [SYM_UNKNOWN_KERNEL] = "kernel",
	    [SYM_UNKNOWN_JIT] = "jit_no_perf_map",
	    [SYM_UNKNOWN_DEBUGINFOD_WAITING] = "debuginfod_waiting",
	    [SYM_UNKNOWN_DEBUGINFOD_FAILED] = "debuginfod_failed",
	};

	return (unsigned)reason < SYM_UNKNOWN__COUNT ? names[reason] : "invalid";
}
