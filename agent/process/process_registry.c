// SPDX-License-Identifier: Apache-2.0
/* Process records: pid -> current image (LRU) -> the image an exec replaced; /proc facts and
 * executable mappings read at capture, re-read on a miss with backoff; the lifetime rules. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lru.h"
#include "process/proc_identity.h"
#include "process/process_registry.h"
#include "process/state_slot.h"

#define DEFAULT_MAX_BINARIES 256
#define DEFAULT_MAX_PROCESSES 4096
#define NSEC_PER_MSEC 1000000ULL
#define RECAPTURE_INTERVAL_NS (100 * NSEC_PER_MSEC) /* maps re-read on a miss, at most */
#define VALIDATE_INTERVAL_NS (1000 * NSEC_PER_MSEC) /* exec check on repeated capture */
/* Misses that keep missing back off, doubling up to this: frame-pointer walks through code
 * built without frame pointers yield addresses in no mapping, every window. */
#define RECAPTURE_MAX_NS (60 * 1000 * NSEC_PER_MSEC)

struct process_registry {
	char proc_root[256];
	struct lru *procs; /* pid -> current struct process (its prev hangs from it) */
	struct binary_cache *binaries;
	struct process *live; /* every record alive */
	struct state_slot slots[PROCESS_SLOTS];
	pid_t *replaced; /* pids whose previous image is kept until the window ends */
	size_t n_replaced, replaced_cap;
	struct process_registry_stats stats;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* --- records ---------------------------------------------------------------------------- */

static void free_mappings(struct process_mapping *maps, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		binary__unref(maps[i].bin);
		free(maps[i].path);
	}
	free(maps);
}

static void live_link(struct process_registry *reg, struct process *p)
{
	p->live_next = reg->live;
	if (reg->live)
		reg->live->live_prev = p;
	reg->live = p;
}

static void live_unlink(struct process_registry *reg, struct process *p)
{
	if (p->live_prev)
		p->live_prev->live_next = p->live_next;
	else
		reg->live = p->live_next;
	if (p->live_next)
		p->live_next->live_prev = p->live_prev;
}

/* Frees a record and the image it replaced: every slot's state first, then what it holds. */
static void process_free(struct process *p)
{
	if (!p)
		return;
	process_free(p->prev);
	for (int i = 0; i < PROCESS_SLOTS; i++)
		state_slot__release(&p->reg->slots[i], &p->slots[i]);
	live_unlink(p->reg, p);
	free_mappings(p->mappings, p->n_mappings);
	free(p->exe);
	free(p);
}

static void process_evicted(void *value, void *ctx)
{
	struct process_registry *reg = ctx;

	reg->stats.processes_evicted += 1 + (((struct process *)value)->prev != NULL);
	process_free(value);
}

/* --- /proc facts -------------------------------------------------------------------------- */

/* The process's name; an empty or failed read keeps the one it had. */
static void read_comm(struct process_registry *reg, struct process *p)
{
	char comm[PROCESS_COMM_MAX];

	if (proc_read_pid_file(reg->proc_root, p->pid, "comm", comm, sizeof(comm)))
		return;
	comm[strcspn(comm, "\n")] = '\0';
	if (comm[0])
		memcpy(p->comm, comm, sizeof(comm));
}

/* The executable's path (for the service rules) and whether it is a kernel thread. A failed
 * read leaves it unknown (NULL): a rule on the executable does not match it. */
static void read_exe(struct process_registry *reg, struct process *p)
{
	char exe[PROCMAPS_PATH_MAX];

	free(p->exe);
	p->exe = NULL;
	if (proc_read_kernel_thread(reg->proc_root, p->pid, &p->kernel_thread))
		p->kernel_thread = false;
	if (!p->kernel_thread && proc_read_exe(reg->proc_root, p->pid, exe, sizeof(exe)) == 0)
		p->exe = strdup(exe);
}

/* The pid as the process itself sees it (last NSpid field), for perf-PID.map in containers. */
static pid_t read_nspid(const struct process_registry *reg, pid_t pid)
{
	char path[320], *line = NULL;
	size_t cap = 0;
	pid_t nspid = pid;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d/status", reg->proc_root, (int)pid);
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
static uid_t read_uid(const struct process_registry *reg, pid_t pid)
{
	char path[320];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%d", reg->proc_root, (int)pid);
	return stat(path, &st) ? 0 : st.st_uid;
}

static int exe_identity(const struct process_registry *reg, pid_t pid, dev_t *ret_dev,
			ino_t *ret_ino)
{
	char path[320];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%d/exe", reg->proc_root, (int)pid);
	if (stat(path, &st))
		return -errno;
	*ret_dev = st.st_dev;
	*ret_ino = st.st_ino;
	return 0;
}

pid_t process_registry__nspid(struct process_registry *reg, struct process *p)
{
	if (!p->nspid)
		p->nspid = p->gone ? p->pid : read_nspid(reg, p->pid);
	return p->nspid;
}

/* --- mappings ------------------------------------------------------------------------------ */

struct maps_read {
	struct process_registry *reg;
	pid_t pid;
	struct process_mapping *maps;
	size_t n, cap;
	int err;
	struct { /* the last offset-0 file mapping seen: where, and which file */
		uint64_t start, inode;
		uint32_t dev_major, dev_minor;
	} first;
};

static enum process_mapping_kind mapping_kind(const struct procmap_entry *e)
{
	if (strcmp(e->path, "[vdso]") == 0)
		return PROCESS_MAPPING_VDSO;
	if (procmaps__is_file(e))
		return PROCESS_MAPPING_FILE;
	return PROCESS_MAPPING_ANON;
}

/* Where the file of e is mapped from its first byte: the offset-0 mapping of the same file
 * just below (maps lists a file's mappings in order), else as if mapped contiguously. */
static uint64_t file_base(const struct maps_read *r, const struct procmap_entry *e)
{
	if (r->first.inode == e->inode && r->first.dev_major == e->dev_major &&
	    r->first.dev_minor == e->dev_minor && r->first.start <= e->start && e->inode)
		return r->first.start;
	return e->start - e->offset;
}

static int add_mapping(const struct procmap_entry *e, void *arg)
{
	struct maps_read *r = arg;
	struct process_mapping *m;

	if (!e->offset && e->inode && procmaps__is_file(e)) {
		r->first.start = e->start;
		r->first.inode = e->inode;
		r->first.dev_major = e->dev_major;
		r->first.dev_minor = e->dev_minor;
	}
	if (!e->executable)
		return 0;
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 16;
		struct process_mapping *v = realloc(r->maps, cap * sizeof(*v));

		if (!v)
			return r->err = -ENOMEM;
		r->maps = v;
		r->cap = cap;
	}
	m = &r->maps[r->n];
	*m = (struct process_mapping){.start = e->start, .end = e->end, .offset = e->offset};
	m->kind = mapping_kind(e);
	m->path = strdup(e->path[0] ? e->path : "[anon]");
	if (!m->path)
		return r->err = -ENOMEM;
	if (m->kind == PROCESS_MAPPING_FILE) {
		m->base = file_base(r, e);
		m->bin = binary_cache__get_mapping(r->reg->binaries, r->reg->proc_root, r->pid, e);
		if (!m->bin)
			m->kind = PROCESS_MAPPING_UNREADABLE;
	}
	r->n++;
	return 0;
}

/* (Re)reads a process's executable mappings; keeps the old ones when it is gone. */
static int read_mappings(struct process_registry *reg, struct process *p)
{
	struct maps_read r = {.reg = reg, .pid = p->pid};
	int err = procmaps__foreach(reg->proc_root, p->pid, add_mapping, &r);

	if (!err)
		err = r.err;
	/* An exited process not yet reaped reads as no mappings: keep what it had. */
	if (!err && !r.n && p->n_mappings)
		err = -ESRCH;
	p->captured_ns = now_ns();
	if (err) {
		free_mappings(r.maps, r.n);
		if (err == -ESRCH)
			p->gone = true;
		return err;
	}
	free_mappings(p->mappings, p->n_mappings);
	p->mappings = r.maps;
	p->n_mappings = r.n;
	return 0;
}

int process_registry__refresh(struct process_registry *reg, struct process *p)
{
	return p->gone ? -ESRCH : read_mappings(reg, p);
}

static const struct process_mapping *mapping_at(const struct process *p, uint64_t addr)
{
	size_t lo = 0, hi = p->n_mappings;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < p->mappings[mid].start)
			hi = mid;
		else if (addr >= p->mappings[mid].end)
			lo = mid + 1;
		else
			return &p->mappings[mid];
	}
	return NULL;
}

const struct process_mapping *process_registry__find_mapping(struct process_registry *reg,
							     struct process *p, uint64_t addr)
{
	const struct process_mapping *m = mapping_at(p, addr);

	/* Mapped since capture (dlopen, a JIT's new region): re-read the maps, rate-limited. */
	if (m || p->gone || now_ns() - p->captured_ns < p->recapture_wait_ns)
		return m;
	reg->stats.recaptures++;
	read_mappings(reg, p);
	m = mapping_at(p, addr);
	if (m)
		p->recapture_wait_ns = RECAPTURE_INTERVAL_NS;
	else if (p->recapture_wait_ns < RECAPTURE_MAX_NS)
		p->recapture_wait_ns *= 2;
	return m;
}

/* --- lifetime ------------------------------------------------------------------------------ */

static struct process *new_process(struct process_registry *reg, pid_t pid, uint32_t image,
				   int *ret_err)
{
	struct process *p = calloc(1, sizeof(*p));
	int err;

	if (!p) {
		*ret_err = -ENOMEM;
		return NULL;
	}
	p->pid = pid;
	p->image = image;
	p->reg = reg;
	p->recapture_wait_ns = RECAPTURE_INTERVAL_NS;
	live_link(reg, p);
	read_comm(reg, p);
	read_exe(reg, p);
	p->uid = read_uid(reg, pid);
	exe_identity(reg, pid, &p->exe_dev, &p->exe_ino); /* kernel threads have none */
	p->validated_ns = now_ns();
	err = read_mappings(reg, p);
	if (!err)
		err = lru__put(reg->procs, &pid, sizeof(pid), p);
	if (err) {
		process_free(p);
		*ret_err = err;
		return NULL;
	}
	reg->stats.processes_captured++;
	return p;
}

/* An exec since capture replaces every mapping: re-read when the executable changed. */
static void revalidate(struct process_registry *reg, struct process *p)
{
	dev_t dev;
	ino_t ino;
	uint64_t now = now_ns();

	if (p->gone || now - p->validated_ns < VALIDATE_INTERVAL_NS)
		return;
	p->validated_ns = now;
	if (exe_identity(reg, p->pid, &dev, &ino))
		return;
	if (dev == p->exe_dev && ino == p->exe_ino)
		return;
	p->exe_dev = dev;
	p->exe_ino = ino;
	read_comm(reg, p);
	read_exe(reg, p);
	read_mappings(reg, p);
}

int process_registry__capture(struct process_registry *reg, pid_t pid)
{
	struct process *p = lru__get(reg->procs, &pid, sizeof(pid));
	int err = 0;

	if (pid <= 0)
		return -EINVAL;
	if (p) {
		revalidate(reg, p);
		return 0;
	}
	return new_process(reg, pid, 0, &err) ? 0 : err;
}

static int remember_replaced(struct process_registry *reg, pid_t pid)
{
	if (reg->n_replaced == reg->replaced_cap) {
		size_t cap = reg->replaced_cap ? 2 * reg->replaced_cap : 64;
		pid_t *grown = realloc(reg->replaced, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		reg->replaced = grown;
		reg->replaced_cap = cap;
	}
	reg->replaced[reg->n_replaced++] = pid;
	return 0;
}

int process_registry__capture_image(struct process_registry *reg, pid_t pid, uint32_t image)
{
	struct process *old = lru__get(reg->procs, &pid, sizeof(pid)), *p;
	int err = 0;

	if (pid <= 0)
		return -EINVAL;
	if (old && old->image == image) {
		revalidate(reg, old);
		return 0;
	}
	if (old && remember_replaced(reg, pid))
		return -ENOMEM; /* keep naming the old image rather than lose it */
	if (old)
		lru__remove(reg->procs, &pid, sizeof(pid));
	p = new_process(reg, pid, image, &err);
	if (!p) { /* gone before its new image could be read: the old one is still of use */
		if (old && lru__put(reg->procs, &pid, sizeof(pid), old))
			process_free(old);
		return err;
	}
	if (old) {
		/* Two execs in one window: the oldest image goes now. */
		reg->stats.processes_forgotten += old->prev != NULL;
		process_free(old->prev);
		old->prev = NULL;
		p->prev = old;
		reg->stats.images_replaced++;
	}
	return 0;
}

void process_registry__end_window(struct process_registry *reg)
{
	for (size_t i = 0; i < reg->n_replaced; i++) {
		struct process *p = lru__get(reg->procs, &reg->replaced[i], sizeof(pid_t));

		if (p && p->prev) {
			reg->stats.processes_forgotten++;
			process_free(p->prev);
			p->prev = NULL;
		}
	}
	reg->n_replaced = 0;
}

void process_registry__forget(struct process_registry *reg, pid_t pid)
{
	struct process *p = lru__remove(reg->procs, &pid, sizeof(pid));

	if (p)
		reg->stats.processes_forgotten += 1 + (p->prev != NULL);
	process_free(p);
}

struct process *process_registry__peek(struct process_registry *reg, pid_t pid)
{
	return lru__get(reg->procs, &pid, sizeof(pid));
}

struct process *process_registry__get(struct process_registry *reg, pid_t pid)
{
	struct process *p = lru__get(reg->procs, &pid, sizeof(pid));
	int err = 0;

	return p ? p : pid > 0 ? new_process(reg, pid, 0, &err) : NULL;
}

struct process *process_registry__image(struct process_registry *reg, pid_t pid, uint32_t image)
{
	struct process *p = lru__get(reg->procs, &pid, sizeof(pid));
	int err = 0;

	if (!p)
		return pid > 0 ? new_process(reg, pid, image, &err) : NULL;
	if (p->image == image)
		return p;
	if (p->prev && p->prev->image == image)
		return p->prev;
	if ((int32_t)(image - p->image) > 0 && !process_registry__capture_image(reg, pid, image)) {
		p = lru__get(reg->procs, &pid, sizeof(pid));
		return p && p->image == image ? p : NULL;
	}
	return NULL; /* an older image, already dropped */
}

/* --- slots, lifecycle ---------------------------------------------------------------------- */

int process_registry__add_process_slot(struct process_registry *reg,
				       void (*free_state)(void *state, void *ctx), void *ctx)
{
	return state_slot__add(reg->slots, PROCESS_SLOTS, free_state, ctx);
}

void process_registry__remove_process_slot(struct process_registry *reg, int slot)
{
	for (struct process *p = reg->live; p; p = p->live_next)
		state_slot__release(&reg->slots[slot], &p->slots[slot]);
	reg->slots[slot] = (struct state_slot){0};
}

int process_registry__add_binary_slot(struct process_registry *reg,
				      void (*free_state)(void *state, void *ctx), void *ctx)
{
	return binary_cache__add_slot(reg->binaries, free_state, ctx);
}

void process_registry__remove_binary_slot(struct process_registry *reg, int slot)
{
	binary_cache__remove_slot(reg->binaries, slot);
}

const char *process_registry__proc_root(const struct process_registry *reg)
{
	return reg->proc_root;
}

struct process_registry *process_registry__new(const struct process_registry_options *opts)
{
	struct process_registry_options o = opts ? *opts : (struct process_registry_options){0};
	struct process_registry *reg = calloc(1, sizeof(*reg));

	if (!reg)
		return NULL;
	snprintf(reg->proc_root, sizeof(reg->proc_root), "%s", o.proc_root ? o.proc_root : "/proc");
	reg->procs = lru__new(o.max_processes ? o.max_processes : DEFAULT_MAX_PROCESSES,
			      process_evicted, reg);
	reg->binaries = binary_cache__new(o.max_binaries ? o.max_binaries : DEFAULT_MAX_BINARIES);
	if (!reg->procs || !reg->binaries) {
		process_registry__free(reg);
		errno = ENOMEM;
		return NULL;
	}
	return reg;
}

void process_registry__free(struct process_registry *reg)
{
	if (!reg)
		return;
	/* Records first: their mappings hold references to binaries. */
	lru__free(reg->procs);
	binary_cache__free(reg->binaries);
	free(reg->replaced);
	free(reg);
}

void process_registry__stats(const struct process_registry *reg, struct process_registry_stats *ret)
{
	*ret = reg->stats;
	ret->processes_cached = lru__size(reg->procs);
	binary_cache__stats(reg->binaries, &ret->binaries);
}
