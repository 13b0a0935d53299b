// SPDX-License-Identifier: Apache-2.0
/* The record pipeline: sampler (BPF aggregation) -> symboliser -> struct window. Shared by
 * `record` and `run`; first-sight events from BPF trigger an early process capture. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "service/cgroup.h"
#include "hashtab.h"
#include "sampling/early_maps.h"
#include "logging.h"
#include "sampling/pipeline.h"
#include "process/process_registry.h"
#include "runtimes/runtimes.h"
#include "sampling/sampler.h"
#include "symbolize/symbolizer.h"
#include "unwind/unwind_tables.h"

/* Frames per sample: a kernel stack plus a user stack. */
/* Inlined calls (Go) make one address several frames: up to three per stack entry. */
#define MAX_USER_FRAMES (3 * PROFILE_STACK_DEPTH)
#define MAX_FRAMES (PROFILE_STACK_DEPTH + MAX_USER_FRAMES + 1) /* + a [truncated] marker */
/* A pid's cgroup path is re-read after this long (cgroup v1: BPF does not see a move); on
 * cgroup v2 a new cgroup id in the samples triggers it at once, and so does an exec. */
#define CGROUP_RECHECK_MS 60000
#define MAX_CGROUP_PIDS 16384
#define UNWIND_CAPTURE_BUDGET_MS 50 /* table building per poll, the rest on the next */
#define PID_TABLES_WAIT_MS 5000	    /* record --pid: its big tables before the first sample */

struct pipeline {
	struct sampler *sampler;
	struct process_registry *procs; /* what sym and unwind look processes up in */
	struct symbolizer *sym;
	struct cgroup_pids *cgroups;   /* NULL unless opts.capture_cgroups */
	struct unwind_tables *unwind;  /* NULL with --unwind=fp */
	struct runtimes *runtimes;     /* interpreter frames: NULL with --unwind=fp */
	pid_t *unwind_pending;	       /* first-sight pids whose tables are not captured yet */
	struct early_maps *early_maps; /* young captures, read again soon; NULL with --unwind=fp */
	struct early_maps_stats last_early;
	size_t n_unwind_pending, unwind_pending_cap;
	uint64_t last_unwind[UNWIND_STAT__COUNT];
	struct unwind_tables_stats last_tables;
	struct pipeline_options opts;
	int frequency_hz;
	int64_t window_start_ns;
	struct profile_stats last_stats; /* BPF counters at the previous collect */
	uint64_t last_run_ns, last_run_cnt;
	uint64_t *excluded_cgroups; /* filtered again in user space (cgroup v1 hosts, races) */
	size_t n_excluded_cgroups;

	/* off-CPU: the per-process filter's undecided and decided pids, and counters */
	struct offcpu_pid *offcpu_unknown, *offcpu_decided;
	size_t n_offcpu_unknown, offcpu_unknown_cap, n_offcpu_decided, offcpu_decided_cap;
	struct offcpu_stats last_offcpu;
	uint64_t last_offcpu_run_ns, last_offcpu_run_cnt;

	/* Memos of one collect, cleared after it (memory reused): strings interned in its
	 * window. A stack id is shared by every entry with the same stack in a generation, so
	 * each (pid, user stack) and kernel stack is named once per window. */
	struct hashtab stacks; /* stack_key() -> frames_ref() into frames */
	struct window_frame *frames;
	size_t n_frames, frames_cap;
	struct hashtab threads;	  /* tid -> thread name */
	struct hashtab processes; /* pid -> struct process_names index */
	struct process_names *names;
	size_t n_names, names_cap;
};

struct offcpu_pid {
	pid_t pid;
	uint64_t cgroup_id;
	char comm[PROFILE_COMM_LEN + 1]; /* the blocking thread's, as BPF saw it */
};

struct process_names {
	const char *comm, *cgroup, *exe;
	bool kernel_thread;
};

/* State of one collect while the sampler hands over entries. */
struct collect_ctx {
	struct pipeline *p;
	struct window *w;
	pid_t *pids; /* distinct pids, for forgetting the ones that exited */
	size_t n_pids, pid_cap;
	int err;
};

static int64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Table builds take milliseconds (a big binary, more): they run after the symboliser has
 * captured every process of the batch, so a short-lived one is not missed meanwhile. */
static void queue_unwind_capture(struct pipeline *p, pid_t pid)
{
	for (size_t i = 0; i < p->n_unwind_pending; i++)
		if (p->unwind_pending[i] == pid)
			return; /* queued already: its maps are read when it is captured */
	if (p->n_unwind_pending == p->unwind_pending_cap) {
		size_t cap = p->unwind_pending_cap ? 2 * p->unwind_pending_cap : 64;
		pid_t *tmp = realloc(p->unwind_pending, cap * sizeof(*tmp));

		if (!tmp)
			return; /* its samples keep the frame-pointer walk (counted) */
		p->unwind_pending = tmp;
		p->unwind_pending_cap = cap;
	}
	p->unwind_pending[p->n_unwind_pending++] = pid;
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int64_t monotonic_ms(void)
{
	return (int64_t)(monotonic_ns() / 1000000);
}

/* Young processes captured while their loader may still have been mapping libraries: their
 * maps are read again (capture_process re-reads them) when due (early_maps.h). */
static void queue_early_recaptures(struct pipeline *p)
{
	pid_t due[64];
	size_t n, cap = sizeof(due) / sizeof(due[0]);

	do {
		n = early_maps__due(p->early_maps, monotonic_ns(), due, cap);
		for (size_t i = 0; i < n; i++)
			queue_unwind_capture(p, due[i]);
	} while (n == cap);
}

/* Captures queued processes' tables for up to budget_ms: first those whose binaries all have
 * their tables (publishing costs well under a millisecond), then the others oldest first. A
 * short-lived process of known binaries (a script's interpreter) is not left behind other
 * processes' table builds: on a loaded machine those took over a second, longer than it ran
 * (its samples stay frame-pointer walks until captured, without interpreter frames). A capture
 * may poll the sampler between builds, whose announcements append to the queue: the passes
 * read its pointer and length at each step. */
static void capture_unwind_pending(struct pipeline *p, int budget_ms)
{
	int64_t end = monotonic_ms() + budget_ms;
	size_t done = 0, kept = 0;

	for (size_t i = 0; i < p->n_unwind_pending;) {
		pid_t pid = p->unwind_pending[i++];

		if (monotonic_ms() < end && unwind_tables__ready(p->unwind, pid))
			unwind_tables__capture_process(p->unwind, pid);
		else
			p->unwind_pending[kept++] = pid; /* kept <= i: unread entries stay */
	}
	p->n_unwind_pending = kept;

	while (done < p->n_unwind_pending && monotonic_ms() < end)
		unwind_tables__capture_process(p->unwind, p->unwind_pending[done++]);
	memmove(p->unwind_pending, p->unwind_pending + done,
		(p->n_unwind_pending - done) * sizeof(*p->unwind_pending));
	p->n_unwind_pending -= done;
}

/* An interpreter's walk state, at first sight (and after an exec: BPF dropped the old one). A
 * version without a table is logged once; its processes keep native frames. */
static void capture_runtime(struct pipeline *p, pid_t pid)
{
	char note[512];

	/* the registry's record names the interpreter's binaries: nothing else is read */
	if (p->runtimes && runtimes__capture_process(p->runtimes, pid, note, sizeof(note)) > 0)
		log_warn("%s", note);
}

static void offcpu_note_unknown(struct pipeline *p, const struct profile_event *e);
static void offcpu_forget_exited(struct pipeline *p);

static void on_event(const struct profile_event *e, void *ctx)
{
	struct pipeline *p = ctx;

	if (e->type == OFFCPU_EVENT_UNKNOWN_TGID) {
		offcpu_note_unknown(p, e);
		return;
	}

	/* An exec or a reused pid: what was captured for the pid belongs to another image. */
	bool stale = e->type == PROFILE_EVENT_EXEC || e->type == PROFILE_EVENT_PID_REUSED;

	/* The new image is captured beside the old one, which still names the samples it took
	 * before the exec. -ESRCH: it already exited; its frames will be [unknown], counted. */
	process_registry__capture_image(p->procs, e->pid, e->image);
	if (p->unwind) { /* after an exec, BPF dropped the old mapping table already */
		queue_unwind_capture(p, e->pid);
		early_maps__note(p->early_maps, e->pid, e->start_ns, e->type == PROFILE_EVENT_EXEC,
				 monotonic_ns());
	}
	/* Now, from the same event: the process may be gone by the time its samples are tagged
	 * (an exec re-reads it: runtimes move a process into its cgroup before exec). */
	if (p->cgroups && stale)
		cgroup_pids__capture_image(p->cgroups, e->pid, e->cgroup_id, e->image);
	else if (p->cgroups) /* known and current already (LRU-evicted from seen_pids): no read */
		cgroup_pids__get(p->cgroups, e->pid, e->cgroup_id, CGROUP_RECHECK_MS);
	capture_runtime(p, e->pid); /* after what a short-lived process must not miss */
}

/* A code object (or V8 function) sampled for the first time: named now, while its process
 * lives (the name stays cached for the window); the name itself is not needed yet. */
static void on_python_code(const struct python_code_event *e, void *ctx)
{
	/* a Python code object's bare address, or a frame word with its runtime's tag (V8) */
	uint64_t word = e->code & RUNTIME_FRAME_TAG_MASK ? e->code : PYTHON_FRAME_TAG | e->code;
	struct pipeline *p = ctx;
	struct sym_frame f;

	if (p->runtimes)
		runtimes__name_frame(p->runtimes, e->pid, word, e->cookie, &f);
}

/* --- the unwind tables' sink: the sampler's maps ------------------------------------------ */

static int sink_write_rows(void *ctx, uint32_t first, const struct unwind_row *rows, size_t n)
{
	return sampler__unwind_write_rows(ctx, first, rows, n);
}

static int sink_set_table(void *ctx, const struct unwind_table_info *info)
{
	return sampler__unwind_set_table(ctx, info);
}

static int sink_set_process(void *ctx, pid_t pid, const struct unwind_process *proc)
{
	return sampler__unwind_set_process(ctx, pid, proc);
}

static void sink_forget_process(void *ctx, pid_t pid)
{
	sampler__unwind_forget_process(ctx, pid);
}

static void sink_sync(void *ctx)
{
	sampler__sync(ctx);
}

/* Announcements that arrived while a table was built are handled now: a process that lives
 * a few milliseconds must be captured before it exits, not after a process's whole tables. */
static void sink_between_builds(void *ctx)
{
	sampler__poll(ctx, 0);
}

static int open_unwind_tables(struct pipeline *p)
{
	struct unwind_sink sink = {
	    .write_rows = sink_write_rows,
	    .set_table = sink_set_table,
	    .set_process = sink_set_process,
	    .forget_process = sink_forget_process,
	    .sync = sink_sync,
	    .between_builds = sink_between_builds,
	    .ctx = p->sampler,
	};

	sink.capacity = sampler__unwind_rows_capacity(p->sampler);
	p->early_maps = early_maps__new();
	p->unwind = p->early_maps ? unwind_tables__new(&sink, p->procs) : NULL;
	return p->unwind ? 0 : -errno;
}

/* --- the runtimes' sink: the sampler's interpreter maps ---------------------------------- */

/* A runtime attached to pid: its tables are captured (again) from the maps as they are now.
 * One caught while its loader ran (-EAGAIN, captured again later) may have had its mapping
 * table published then too, without the libraries mapped since (libc, libruby): its walks
 * would end there, never reaching _start, until the next window's refresh. */
static int runtime_attach(void *ctx, enum runtime_kind kind, pid_t pid, const void *state,
			  size_t size)
{
	struct pipeline *p = ctx;
	int ret = -EINVAL;

	if (kind == RUNTIME_PYTHON && size == sizeof(struct python_proc))
		ret = sampler__python_set_process(p->sampler, pid, state);
	else if (kind == RUNTIME_V8 && size == sizeof(struct v8_proc))
		ret = sampler__v8_set_process(p->sampler, pid, state);
	else if (kind == RUNTIME_RUBY && size == sizeof(struct ruby_proc))
		ret = sampler__ruby_set_process(p->sampler, pid, state);
	else if (kind == RUNTIME_PHP && size == sizeof(struct php_proc))
		ret = sampler__php_set_process(p->sampler, pid, state);
	else if (kind == RUNTIME_HOTSPOT && size == sizeof(struct hotspot_proc))
		ret = sampler__hotspot_set_process(p->sampler, pid, state);
	if (!ret && p->unwind)
		queue_unwind_capture(p, pid);
	return ret;
}

static void runtime_detach(void *ctx, enum runtime_kind kind, pid_t pid)
{
	struct sampler *s = ((struct pipeline *)ctx)->sampler;

	if (kind == RUNTIME_PYTHON)
		sampler__python_forget_process(s, pid);
	else if (kind == RUNTIME_V8)
		sampler__v8_forget_process(s, pid);
	else if (kind == RUNTIME_RUBY)
		sampler__ruby_forget_process(s, pid);
	else if (kind == RUNTIME_PHP)
		sampler__php_forget_process(s, pid);
	else if (kind == RUNTIME_HOTSPOT)
		sampler__hotspot_forget_process(s, pid);
}

static int open_runtimes(struct pipeline *p)
{
	struct runtime_sink sink = {
	    .attach = runtime_attach,
	    .detach = runtime_detach,
	    .ctx = p,
	};

	p->runtimes = runtimes__new(&sink, p->procs);
	return p->runtimes ? 0 : -errno;
}

int pipeline_unwind_parse(const char *text, enum pipeline_unwind *ret)
{
	if (!strcmp(text, "auto"))
		*ret = PIPELINE_UNWIND_AUTO;
	else if (!strcmp(text, "fp"))
		*ret = PIPELINE_UNWIND_FP;
	else
		return -EINVAL;
	return 0;
}

struct pipeline *pipeline__open(const struct pipeline_options *opts, char *err, size_t err_len)
{
	struct process_registry_options reg_opts = {
	    .max_binaries = opts->max_binaries,
	    .max_processes = opts->max_processes,
	};
	struct symbolizer_options sym_opts = {0};
	struct sampler_options sampler_opts = {
	    .pid = opts->pid,
	    .unwind_tables = opts->unwind == PIPELINE_UNWIND_AUTO,
	    .unwind_max_rows = opts->unwind_memory_bytes / sizeof(struct unwind_row),
	    .offcpu = opts->offcpu,
	    .on_event = on_event,
	    .on_python_code = on_python_code,
	};
	struct pipeline *p;

	p = calloc(1, sizeof(*p));
	if (!p) {
		snprintf(err, err_len, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	p->opts = *opts;
	p->procs = process_registry__new(&reg_opts);
	sym_opts.registry = p->procs;
	p->sym = p->procs ? symbolizer__new(&sym_opts) : NULL;
	if (!p->sym) {
		snprintf(err, err_len, "creating the symboliser failed: %s", strerror(errno));
		goto fail;
	}
	if (opts->capture_cgroups) {
		p->cgroups = cgroup_pids__new("/proc", MAX_CGROUP_PIDS);
		if (!p->cgroups) {
			snprintf(err, err_len, "out of memory");
			goto fail;
		}
	}
	sampler_opts.ctx = p;
	p->sampler = sampler__open(&sampler_opts, err, err_len);
	if (!p->sampler)
		goto fail;
	if (sampler_opts.unwind_tables && open_unwind_tables(p)) {
		snprintf(err, err_len, "creating the unwind tables failed: %s", strerror(errno));
		goto fail;
	}
	/* the interpreter walk runs inside the tables' walk */
	if (sampler_opts.unwind_tables && !open_runtimes(p))
		runtimes__set_java_perfmap(p->runtimes, opts->java_perfmap);
	if (sampler_opts.unwind_tables && !p->runtimes) {
		snprintf(err, err_len, "creating the runtimes failed: %s", strerror(errno));
		goto fail;
	}
	return p;
fail : {
	int saved = errno;

	pipeline__close(p);
	errno = saved;
}
	return NULL;
}

void pipeline__close(struct pipeline *p)
{
	if (!p)
		return;
	unwind_tables__free(p->unwind);
	early_maps__free(p->early_maps);
	runtimes__free(p->runtimes);
	sampler__free(p->sampler);
	symbolizer__free(p->sym);
	process_registry__free(p->procs); /* after its consumers */
	cgroup_pids__free(p->cgroups);
	hashtab__free(&p->stacks);
	hashtab__free(&p->threads);
	hashtab__free(&p->processes);
	free(p->frames);
	free(p->names);
	free(p->excluded_cgroups);
	free(p->unwind_pending);
	free(p->offcpu_unknown);
	free(p->offcpu_decided);
	free(p);
}

int pipeline__start(struct pipeline *p, int frequency_hz, char *err, size_t err_len)
{
	int ret;

	if (frequency_hz < SAMPLE_RATE_MIN_HZ)
		frequency_hz = SAMPLE_RATE_MIN_HZ;
	if (frequency_hz > SAMPLE_RATE_MAX_HZ)
		frequency_hz = SAMPLE_RATE_MAX_HZ;
	if (!p->frequency_hz) /* first start: a one-time ~150 ms, not inside a window */
		symbolizer__preload_kernel(p->sym);
	/* One process: its tables before the first sample, so none is walked by frame pointers
	 * while they build. (Every process: each at its first sample, counted meanwhile.) */
	if (!p->frequency_hz && p->unwind && p->opts.pid) {
		struct unwind_tables_stats st;

		unwind_tables__capture_process(p->unwind, p->opts.pid);
		unwind_tables__stats(p->unwind, &st);
		/* its big ones, when it has some: then capture it again to load them */
		if (st.tables_building && unwind_tables__wait_built(p->unwind, PID_TABLES_WAIT_MS))
			unwind_tables__capture_process(p->unwind, p->opts.pid);
		capture_runtime(p, p->opts.pid);
	}
	ret = sampler__attach(p->sampler, frequency_hz, err, err_len);
	if (ret)
		return ret;
	p->frequency_hz = frequency_hz;
	if (!p->window_start_ns)
		p->window_start_ns = realtime_ns();
	return 0;
}

int pipeline__stop(struct pipeline *p)
{
	sampler__detach(p->sampler);
	return 0;
}

int pipeline__exec_hook_error(const struct pipeline *p)
{
	return sampler__exec_hook_error(p->sampler);
}

bool pipeline__running(const struct pipeline *p)
{
	return sampler__attached(p->sampler);
}

int pipeline__frequency(const struct pipeline *p)
{
	return p->frequency_hz;
}

int pipeline__poll(struct pipeline *p, int timeout_ms)
{
	int ret = sampler__poll(p->sampler, timeout_ms);
	char note[512];

	/* a JVM caught starting: captured again once its VM is up */
	if (p->runtimes && runtimes__retry_pending(p->runtimes, note, sizeof(note)) > 0)
		log_warn("%s", note);
	if (p->unwind)
		queue_early_recaptures(p);
	if (p->unwind)
		capture_unwind_pending(p, UNWIND_CAPTURE_BUDGET_MS);
	if (p->unwind) /* big tables the builder thread finished */
		unwind_tables__publish_built(p->unwind);
	return ret;
}

bool pipeline__has_pending_work(struct pipeline *p)
{
	return p->n_unwind_pending || p->n_offcpu_unknown ||
	       (p->runtimes && runtimes__has_pending(p->runtimes)) ||
	       (p->early_maps && early_maps__pending(p->early_maps)) ||
	       (p->unwind && unwind_tables__builds_in_flight(p->unwind));
}

static bool cgroup_excluded(const struct pipeline *p, uint64_t id)
{
	for (size_t i = 0; i < p->n_excluded_cgroups; i++)
		if (p->excluded_cgroups[i] == id)
			return true;
	return false;
}

static int note_pid(struct collect_ctx *c, pid_t pid)
{
	if (c->n_pids && c->pids[c->n_pids - 1] == pid)
		return 0;
	if (c->n_pids == c->pid_cap) {
		size_t cap = c->pid_cap ? 2 * c->pid_cap : 256;
		pid_t *tmp = realloc(c->pids, cap * sizeof(*tmp));

		if (!tmp)
			return -ENOMEM;
		c->pids = tmp;
		c->pid_cap = cap;
	}
	c->pids[c->n_pids++] = pid;
	return 0;
}

/* Interns one resolved frame into the window. */
static int add_frame(struct window *w, const struct sym_frame *f, struct window_frame *ret)
{
	ret->function = window__intern(w, f->function);
	ret->module = window__intern(w, f->module);
	ret->build_id = window__intern(w, f->build_id);
	ret->file = window__intern(w, f->file);
	ret->file_offset = f->has_offset ? f->file_offset : 0;
	ret->has_offset = f->has_offset;
	return ret->function && ret->module && ret->build_id && ret->file ? 0 : -ENOMEM;
}

#define KERNEL_STACK_PID 0xffffffffULL

/* Memo key of a stack as named for one image of one process (kernel stacks: for all). */
static uint64_t stack_key(uint64_t pid, uint32_t image, __u64 stack)
{
	return hash_combine(hash_combine(stack, pid), image);
}

static uint64_t image_key(pid_t pid, uint32_t image)
{
	return (uint64_t)(uint32_t)pid << 32 | image;
}

/* frames[off .. off + n), unknown of them unnamed */
static uint64_t frames_ref(size_t off, size_t n, size_t unknown)
{
	return (uint64_t)off << 32 | n << 16 | unknown;
}

static int reserve_frames(struct pipeline *p, size_t n)
{
	size_t cap = p->frames_cap ? p->frames_cap : 1024;
	struct window_frame *grown;

	while (cap < p->n_frames + n)
		cap *= 2;
	if (cap == p->frames_cap)
		return 0;
	grown = realloc(p->frames, cap * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	p->frames = grown;
	p->frames_cap = cap;
	return 0;
}

/* Names one stack (user frames when pid > 0, else kernel frames), once per window: later
 * entries with the same stack get the memo. Stack entries after the first are return
 * addresses; ip - 1 keeps a call that ends a function inside its caller. */
static int stack_frames(struct collect_ctx *c, pid_t pid, uint32_t image, __u64 stack,
			const __u64 *ips, size_t n, bool truncated, uint64_t *ret_ref)
{
	struct pipeline *p = c->p;
	uint64_t key = stack_key(pid ? (uint64_t)pid : KERNEL_STACK_PID, image, stack);
	struct sym_frame fs[SYM_FRAMES_MAX], f;
	size_t unknown = 0, out = 0;
	int ret = 0, callee_panics = 0;

	if (hashtab__get(&p->stacks, key, ret_ref))
		return 0;
	/* One address may be several frames: Go's inlined calls, leaf first (symbolizer.h). */
	for (size_t i = 0; !ret && i < n; i++) {
		size_t k = 1;

		if (pid && p->runtimes && i + 1 < n && runtimes__is_frame(ips[i])) {
			/* an interpreter frame: two words (what names it, its cookie) or more, and
			 * one frame or more (the functions its JIT inlined, above their callers) */
			size_t used =
			    runtimes__name_frames(p->runtimes, pid, (const uint64_t *)(ips + i),
						  n - i, fs, SYM_FRAMES_MAX, &k);

			for (size_t j = 0; j < k; j++) {
				fs[j].has_offset = 0;
				fs[j].go_func = SYM_GO_OTHER;
			}
			i += used - 1;
		} else if (pid) {
			k = symbolizer__resolve_user_frames(
			    p->sym, pid, image, ips[i] - (i ? 1 : 0), fs, SYM_FRAMES_MAX);
		} else {
			symbolizer__resolve_kernel(p->sym, ips[i] - (i ? 1 : 0), &fs[0]);
		}
		if (out + k > MAX_USER_FRAMES) { /* inlining beyond the cap: cut, and say so */
			k = MAX_USER_FRAMES - out;
			truncated = true;
			n = i + 1;
		}
		ret = reserve_frames(p, out + k + truncated);
		for (size_t j = 0; !ret && j < k; j++) {
			/* Go's wrappers, left out as runtime/pprof leaves them out (symbolizer.h)
			 */
			if (pid && sym_frame__go_elided(&fs[j], &callee_panics))
				continue;
			unknown += !fs[j].known;
			ret = add_frame(c->w, &fs[j], &p->frames[p->n_frames + out++]);
		}
	}
	if (!ret && truncated) { /* deeper than the cap: said so at the root, never cut silently */
		snprintf(f.function, sizeof(f.function), "[truncated]");
		f.module[0] = f.build_id[0] = f.file[0] = '\0';
		f.has_offset = 0;
		ret = reserve_frames(p, out + 1);
		if (!ret)
			ret = add_frame(c->w, &f, &p->frames[p->n_frames + out++]);
	}
	if (ret)
		return ret;
	*ret_ref = frames_ref(p->n_frames, out, unknown);
	p->n_frames += out;
	return hashtab__put(&p->stacks, key, *ret_ref);
}

/* Appends the memo's frames to out; returns how many. */
static size_t copy_frames(const struct collect_ctx *c, uint64_t ref, struct window_frame *out)
{
	size_t n = (ref >> 16) & 0xffff;

	memcpy(out, &c->p->frames[ref >> 32], n * sizeof(*out));
	c->w->stats.unknown_frames += ref & 0xffff;
	return n;
}

/* The scheduler's own frames above a blocked thread's stack (the hook, the tracepoint,
 * __schedule, schedule): the same in every block, so the leaf becomes the function that chose
 * to wait (do_nanosleep, futex_wait_queue, anon_pipe_read). */
static bool scheduler_frame(const char *function)
{
	static const char *const prefixes[] = {"bpf_prog_", "bpf_trace_run", "__bpf_trace_",
					       "__traceiter_"};

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(function, prefixes[i], strlen(prefixes[i])))
			return true;
	return !strcmp(function, "__schedule") || !strcmp(function, "schedule");
}

static size_t trim_scheduler_frames(struct window_frame *frames, size_t n_kernel, size_t n)
{
	size_t skip = 0;

	while (skip < n_kernel && skip + 1 < n && frames[skip].function &&
	       scheduler_frame(frames[skip].function))
		skip++;
	memmove(frames, frames + skip, (n - skip) * sizeof(*frames));
	return n - skip;
}

/* The frames of an entry, leaf first: kernel, then user. */
static int symbolise(struct collect_ctx *c, const struct sampler_entry *e,
		     struct window_frame *frames, size_t *ret_n)
{
	uint64_t kref = 0, uref = 0;
	struct sym_frame f;
	size_t n = 0;
	int ret = 0;

	if (e->n_kernel)
		ret = stack_frames(c, 0, 0, e->key->kernel_stack, e->kernel_ips, e->n_kernel, false,
				   &kref);
	if (!ret && e->n_user)
		ret = stack_frames(c, e->key->pid, e->key->image, e->key->user_stack, e->user_ips,
				   e->n_user, e->user_truncated, &uref);
	if (ret)
		return ret;
	n += copy_frames(c, kref, frames + n);
	n += copy_frames(c, uref, frames + n);
	if (e->offcpu && e->n_kernel)
		n = trim_scheduler_frames(frames, (kref >> 16) & 0xffff, n);
	if (!n) { /* both walks failed or were absent: keep the CPU time, honestly unnamed */
		snprintf(f.function, sizeof(f.function), "[unknown]");
		f.module[0] = f.build_id[0] = f.file[0] = '\0';
		f.has_offset = 0;
		c->w->stats.unknown_frames++;
		ret = add_frame(c->w, &f, &frames[n++]);
		if (ret)
			return ret;
	}
	*ret_n = n;
	return 0;
}

/* Thread name as BPF saw it, interned; memoised per tid for the window. */
static const char *thread_name(struct collect_ctx *c, pid_t tid)
{
	char name[PROFILE_COMM_LEN + 1];
	const char *interned;
	uint64_t v;

	if (hashtab__get(&c->p->threads, (uint64_t)tid, &v))
		return (const char *)(uintptr_t)v;
	if (sampler__thread_name(c->p->sampler, tid, name, sizeof(name)))
		name[0] = '\0';
	interned = window__intern(c->w, name);
	if (interned && hashtab__put(&c->p->threads, (uint64_t)tid, (uintptr_t)interned))
		return NULL;
	return interned;
}

/* Process name (captured at first sight, else the main thread's name as BPF saw it, else
 * thread), cgroup path and executable, interned; memoised per pid for the window. */
static const struct process_names *process_names(struct collect_ctx *c, pid_t pid, uint32_t image,
						 uint64_t cgroup_id, const char *thread)
{
	struct pipeline *p = c->p;
	struct process_names *pn;
	const char *cgroup = NULL, *exe = NULL;
	bool kernel_thread = false;
	const struct process *proc;
	const char *comm;
	uint64_t v;

	if (hashtab__get(&p->processes, image_key(pid, image), &v))
		return &p->names[v];
	if (p->n_names == p->names_cap) {
		size_t cap = p->names_cap ? 2 * p->names_cap : 256;
		struct process_names *grown = realloc(p->names, cap * sizeof(*grown));

		if (!grown)
			return NULL;
		p->names = grown;
		p->names_cap = cap;
	}
	proc = process_registry__image(p->procs, pid, image);
	comm = proc ? proc->comm : NULL;
	if (!comm || !*comm) /* never captured (it exited first) */
		comm = thread_name(c, pid);
	if (!comm || !*comm)
		comm = thread;
	comm = window__intern(c->w, comm);
	if (p->cgroups) { /* not captured yet (first-sight event lost): read it now */
		cgroup =
		    cgroup_pids__get_image(p->cgroups, pid, cgroup_id, image, CGROUP_RECHECK_MS);
		exe = proc ? proc->exe : NULL; /* the service rules' facts: the registry's */
		kernel_thread = proc && proc->kernel_thread;
	}
	if ((cgroup && !(cgroup = window__intern(c->w, cgroup))) ||
	    (exe && !(exe = window__intern(c->w, exe))))
		return NULL;
	if (!comm)
		return NULL;
	pn = &p->names[p->n_names];
	pn->comm = comm;
	pn->cgroup = cgroup;
	pn->exe = exe;
	pn->kernel_thread = kernel_thread;
	if (hashtab__put(&p->processes, image_key(pid, image), p->n_names))
		return NULL;
	p->n_names++;
	return pn;
}

static int add_entry(const struct sampler_entry *e, void *ctx)
{
	struct collect_ctx *c = ctx;
	struct window_frame frames[MAX_FRAMES];
	struct window_sample s = {
	    .pid = e->key->pid,
	    .tid = e->key->tid,
	    .cgroup_id = e->key->cgroup_id,
	    .frames = frames,
	    .count = e->offcpu ? 0 : e->value->count,
	    .cpu_ns = e->offcpu ? 0 : e->value->period_ns,
	    .offcpu = e->offcpu,
	    .offcpu_ns = e->offcpu ? e->value->period_ns : 0,
	    .offcpu_blocks = e->offcpu ? e->value->count : 0,
	};
	const struct process_names *pn;
	size_t n_frames;
	int ret;

	if (cgroup_excluded(c->p, s.cgroup_id))
		return 0;
	ret = symbolise(c, e, frames, &n_frames);
	if (ret)
		goto fail;
	s.n_frames = (uint32_t)n_frames; /* at most the BPF stack depths' sum */
	s.thread = thread_name(c, s.tid);
	pn = s.thread ? process_names(c, s.pid, e->key->image, s.cgroup_id, s.thread) : NULL;
	if (!pn) {
		ret = -ENOMEM;
		goto fail;
	}
	s.comm = pn->comm;
	s.cgroup = pn->cgroup;
	s.exe = pn->exe;
	s.kernel_thread = pn->kernel_thread;
	if (!*s.thread)
		s.thread = s.comm;
	ret = window__add_interned_sample(c->w, &s);
	if (!ret)
		ret = note_pid(c, s.pid);
	if (ret)
		goto fail;
	c->w->stats.samples += s.count;
	return 0;
fail:
	c->err = ret;
	return ret;
}

static int compare_pids(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return x < y ? -1 : x > y;
}

/* Counts distinct pids and drops the captured state of those that exited. */
static void finish_processes(struct collect_ctx *c)
{
	size_t distinct = 0;

	qsort(c->pids, c->n_pids, sizeof(*c->pids), compare_pids);
	for (size_t i = 0; i < c->n_pids; i++) {
		if (i && c->pids[i] == c->pids[i - 1])
			continue;
		distinct++;
		if (kill(c->pids[i], 0) && errno == ESRCH) {
			if (c->p->unwind)
				unwind_tables__forget_process(c->p->unwind, c->pids[i]);
			process_registry__forget(c->p->procs, c->pids[i]);
			if (c->p->runtimes)
				runtimes__forget_process(c->p->runtimes, c->pids[i]);
			sampler__forget_pid(c->p->sampler, c->pids[i]);
			if (c->p->cgroups)
				cgroup_pids__forget(c->p->cgroups, c->pids[i]);
		} else if (c->p->unwind) {
			unwind_tables__touch_process(c->p->unwind, c->pids[i]);
		}
	}
	c->w->stats.processes = distinct;
}

/* BPF counters since the previous collect. */
static void add_kernel_stats(struct pipeline *p, struct window_stats *ws)
{
	struct profile_stats now, *last = &p->last_stats;
	uint64_t run_ns = 0, run_cnt = 0;

	if (!sampler__stats(p->sampler, &now)) {
		ws->idle_samples = now.idle_samples - last->idle_samples;
		ws->idle_ns = now.idle_ns - last->idle_ns;
		ws->lost_stack_user = now.user_stack_full + now.user_stack_other -
				      last->user_stack_full - last->user_stack_other;
		ws->lost_stack_kernel = now.kernel_stack_full + now.kernel_stack_other -
					last->kernel_stack_full - last->kernel_stack_other;
		ws->lost_map_full = now.map_full - last->map_full;
		ws->bpf_samples = now.samples - last->samples;
		*last = now;
	}
	if (!sampler__bpf_runtime(p->sampler, &run_ns, &run_cnt)) {
		ws->bpf_run_ns = run_ns - p->last_run_ns;
		ws->bpf_run_cnt = run_cnt - p->last_run_cnt;
		p->last_run_ns = run_ns;
		p->last_run_cnt = run_cnt;
	}
}

/* Off-CPU counters since the previous collect. */
static void add_offcpu_stats(struct pipeline *p, struct window_offcpu *o)
{
	struct offcpu_stats now, *last = &p->last_offcpu;
	uint64_t run_ns = 0, run_cnt = 0;

	if (!sampler__offcpu_stats(p->sampler, &now)) {
		o->switches = now.switches - last->switches;
		o->blocks = now.blocks - last->blocks;
		o->kept = now.kept - last->kept;
		o->charged = now.charged - last->charged;
		o->blocked_ns = now.blocked_ns - last->blocked_ns;
		o->runqueue_ns = now.runqueue_ns - last->runqueue_ns;
		o->below_min = now.below_min - last->below_min;
		o->below_min_ns = now.below_min_ns - last->below_min_ns;
		o->lost = now.map_full + now.starts_full - last->map_full - last->starts_full;
		o->stack_lost = now.stack_lost - last->stack_lost;
		o->announce_lost = now.announce_lost - last->announce_lost;
		o->stale = now.stale - last->stale;
		*last = now;
	}
	if (!sampler__offcpu_runtime(p->sampler, &run_ns, &run_cnt)) {
		o->bpf_run_ns = run_ns - p->last_offcpu_run_ns;
		o->bpf_run_cnt = run_cnt - p->last_offcpu_run_cnt;
		p->last_offcpu_run_ns = run_ns;
		p->last_offcpu_run_cnt = run_cnt;
	}
}

/* Unwinder counters since the previous collect, and the tables' levels now. */
static void add_unwind_stats(struct pipeline *p, struct window_unwind *u)
{
	static const struct {
		enum unwind_stat from;
		enum window_unwind_end to;
	} ends[] = {
	    {UNWIND_STAT_END_NO_MAPPING, WINDOW_UNWIND_END_NO_MAPPING},
	    {UNWIND_STAT_END_CANNOT, WINDOW_UNWIND_END_CANNOT},
	    {UNWIND_STAT_END_BAD_CFA, WINDOW_UNWIND_END_BAD_CFA},
	    {UNWIND_STAT_END_READ, WINDOW_UNWIND_END_READ},
	    {UNWIND_STAT_END_NO_ROW, WINDOW_UNWIND_END_NO_ROW},
	    {UNWIND_STAT_STACK_MAP_FULL, WINDOW_UNWIND_END_MAP_FULL},
	};
	uint64_t now[UNWIND_STAT__COUNT], d[UNWIND_STAT__COUNT];
	struct unwind_tables_stats ts;
	struct early_maps_stats early;

	u->load_ms = sampler__load_ns(p->sampler) / 1000000;
	if (!p->unwind || sampler__unwind_stats(p->sampler, now))
		return;
	for (int i = 0; i < UNWIND_STAT__COUNT; i++)
		d[i] = now[i] - p->last_unwind[i];
	memcpy(p->last_unwind, now, sizeof(now));
	u->by_tables = d[UNWIND_STAT_TABLES];
	u->by_fp = d[UNWIND_STAT_FP];
	u->mixed = d[UNWIND_STAT_MIXED];
	u->not_loaded = d[UNWIND_STAT_NOT_LOADED];
	u->end_clean = d[UNWIND_STAT_END_CLEAN];
	u->end_fp_chain = d[UNWIND_STAT_END_FP_CHAIN];
	u->truncated = d[UNWIND_STAT_TRUNCATED];
	u->tail_hits = d[UNWIND_STAT_TAIL_HIT];
	u->tail_misses = d[UNWIND_STAT_TAIL_MISS];
	u->tail_fallbacks = d[UNWIND_STAT_TAIL_FALLBACK];
	u->tail_frames = d[UNWIND_STAT_TAIL_FRAMES];
	u->tail_vm_frames = d[UNWIND_STAT_TAIL_VM_FRAMES];
	u->tail_stored = d[UNWIND_STAT_TAIL_STORED];
	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++)
		u->end_early[ends[i].to] = d[ends[i].from];
	unwind_tables__stats(p->unwind, &ts);
	u->tables_built = ts.tables_built - p->last_tables.tables_built;
	u->build_ns = ts.build_ns - p->last_tables.build_ns;
	u->tables_corrupt = ts.build_corrupt - p->last_tables.build_corrupt;
	u->tables_too_big = ts.build_too_big - p->last_tables.build_too_big;
	u->tables_unreadable = ts.build_unreadable - p->last_tables.build_unreadable;
	p->last_tables = ts;
	early_maps__stats(p->early_maps, &early);
	u->early_captures = early.noted - p->last_early.noted;
	u->early_rereads = early.rereads - p->last_early.rereads;
	p->last_early = early;
	u->tables_loaded = ts.tables_loaded;
	u->tables_building = ts.tables_building;
	u->rows_loaded = ts.rows_loaded;
	u->rows_bytes = ts.rows_loaded * sizeof(struct unwind_row);
	u->rows_capacity = ts.rows_capacity;
	u->map_bytes = sampler__unwind_rows_bytes(p->sampler);
}

/* This thread's CPU time: what a drain costs the agent, whatever else the machine runs. */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int pipeline__collect(struct pipeline *p, struct window **ret)
{
	struct collect_ctx c = {.p = p};
	uint64_t cpu_start = thread_cpu_ns();
	int err;

	c.w = window__new();
	if (!c.w)
		return -ENOMEM;
	/* Service pending first-sight events so every pid in this window was captured. */
	sampler__poll(p->sampler, 0);
	c.w->end_ns = realtime_ns();
	c.w->start_ns = p->window_start_ns ? p->window_start_ns : c.w->end_ns;
	c.w->nominal_period_ns = p->frequency_hz ? 1000000000ULL / p->frequency_hz : 0;
	p->window_start_ns = c.w->end_ns;

	err = sampler__drain(p->sampler, add_entry, &c);
	if (c.err)
		err = c.err;
	hashtab__clear(&p->stacks);
	hashtab__clear(&p->threads);
	hashtab__clear(&p->processes);
	p->n_frames = 0;
	p->n_names = 0;
	add_kernel_stats(p, &c.w->stats);
	add_offcpu_stats(p, &c.w->stats.offcpu);
	finish_processes(&c);
	offcpu_forget_exited(p);
	process_registry__end_window(p->procs);
	symbolizer__end_window(p->sym);
	if (p->runtimes)
		runtimes__end_window(p->runtimes);
	add_unwind_stats(p, &c.w->stats.unwind);
	free(c.pids);
	c.w->stats.drains = 1;
	c.w->stats.drain_cpu_ns = thread_cpu_ns() - cpu_start;
	if (err) {
		window__free(c.w);
		return err;
	}
	*ret = c.w;
	return 0;
}

/* --- off-CPU ----------------------------------------------------------------------------- */

static int offcpu_push(struct offcpu_pid **arr, size_t *n, size_t *cap, struct offcpu_pid v)
{
	if (*n == *cap) {
		size_t grown_cap = *cap ? 2 * *cap : 64;
		struct offcpu_pid *grown = realloc(*arr, grown_cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		*arr = grown;
		*cap = grown_cap;
	}
	(*arr)[(*n)++] = v;
	return 0;
}

/* A process blocked that the filter does not know: its cgroup now (it may be gone by the time
 * it is tagged), its decision at the daemon's next look. */
static void offcpu_note_unknown(struct pipeline *p, const struct profile_event *e)
{
	struct offcpu_pid v = {.pid = e->pid, .cgroup_id = e->cgroup_id};

	snprintf(v.comm, sizeof(v.comm), "%.*s", PROFILE_COMM_LEN, e->comm);

	if (p->cgroups)
		cgroup_pids__get(p->cgroups, e->pid, e->cgroup_id, CGROUP_RECHECK_MS);
	if (offcpu_push(&p->offcpu_unknown, &p->n_offcpu_unknown, &p->offcpu_unknown_cap, v))
		sampler__offcpu_forget_tgid(p->sampler, e->pid); /* announced again later */
}

/* Decided pids that exited: undecided again, so a process reusing the pid is announced. */
static void offcpu_forget_exited(struct pipeline *p)
{
	size_t kept = 0;

	for (size_t i = 0; i < p->n_offcpu_decided; i++) {
		pid_t pid = p->offcpu_decided[i].pid;

		if (kill(pid, 0) && errno == ESRCH)
			sampler__offcpu_forget_tgid(p->sampler, pid);
		else
			p->offcpu_decided[kept++] = p->offcpu_decided[i];
	}
	p->n_offcpu_decided = kept;
}

int pipeline__offcpu_start(struct pipeline *p, const struct pipeline_offcpu *set, char *err,
			   size_t err_len)
{
	struct sampler_offcpu_settings s = {
	    .allow_list = set->allow_list,
	    .min_block_ns = set->min_block_ns,
	    .sample_every = set->sample_every,
	    .max_kept_per_cpu_s = set->max_kept_per_cpu_s,
	};

	sampler__offcpu_configure(p->sampler, &s);
	return sampler__offcpu_attach(p->sampler, err, err_len);
}

void pipeline__offcpu_stop(struct pipeline *p)
{
	sampler__offcpu_detach(p->sampler);
}

bool pipeline__offcpu_running(const struct pipeline *p)
{
	return sampler__offcpu_attached(p->sampler);
}

const char *pipeline__offcpu_error(const struct pipeline *p)
{
	return sampler__offcpu_error(p->sampler);
}

bool pipeline__offcpu_loaded(const struct pipeline *p)
{
	return sampler__offcpu_loaded(p->sampler);
}

void pipeline__offcpu_forget(struct pipeline *p, pid_t pid)
{
	sampler__offcpu_forget_tgid(p->sampler, pid);
}

int pipeline__offcpu_unknown(struct pipeline *p, struct window **ret)
{
	struct collect_ctx c = {.p = p};
	struct window_frame none = {"", "", "", ""};
	int err = 0;

	*ret = NULL;
	sampler__poll(p->sampler, 0);
	if (!p->n_offcpu_unknown)
		return 0;
	c.w = window__new();
	if (!c.w)
		return -ENOMEM;
	for (size_t i = 0; !err && i < p->n_offcpu_unknown; i++) {
		struct window_sample s = {.pid = p->offcpu_unknown[i].pid,
					  .cgroup_id = p->offcpu_unknown[i].cgroup_id,
					  .frames = &none,
					  .offcpu = true};
		const struct process_names *pn;

		s.thread = window__intern(c.w, p->offcpu_unknown[i].comm);
		pn = s.thread ? process_names(&c, s.pid, 0, s.cgroup_id, s.thread) : NULL;
		if (!pn) {
			err = -ENOMEM;
			break;
		}
		s.comm = s.thread = pn->comm;
		s.cgroup = pn->cgroup;
		s.exe = pn->exe;
		s.kernel_thread = pn->kernel_thread;
		err = window__add_interned_sample(c.w, &s);
	}
	hashtab__clear(&p->processes);
	hashtab__clear(&p->threads);
	p->n_names = 0;
	p->n_offcpu_unknown = 0;
	if (err) {
		window__free(c.w);
		return err;
	}
	*ret = c.w;
	return 0;
}

int pipeline__offcpu_decide(struct pipeline *p, pid_t pid, bool allow)
{
	struct offcpu_pid v = {.pid = pid};
	int ret = sampler__offcpu_set_tgid(p->sampler, pid, allow);

	if (!ret)
		ret = offcpu_push(&p->offcpu_decided, &p->n_offcpu_decided, &p->offcpu_decided_cap,
				  v);
	return ret;
}

void pipeline__offcpu_reset(struct pipeline *p)
{
	sampler__offcpu_clear_tgids(p->sampler);
	p->n_offcpu_decided = 0;
	p->n_offcpu_unknown = 0;
}

void pipeline__symbolizer_stats(const struct pipeline *p, struct symbolizer_stats *ret)
{
	symbolizer__stats(p->sym, ret);
}

int pipeline__python_stats(struct pipeline *p, struct pipeline_python_stats *ret)
{
	const char *name;

	memset(ret, 0, sizeof(*ret));
	if (!p->runtimes)
		return -ENOTSUP;
	runtimes__stats(p->runtimes, RUNTIME_PYTHON, &name, &ret->names);
	return sampler__python_stats(p->sampler, ret->walk);
}

int pipeline__v8_stats(struct pipeline *p, struct pipeline_v8_stats *ret)
{
	const char *name;

	memset(ret, 0, sizeof(*ret));
	if (!p->runtimes)
		return -ENOTSUP;
	runtimes__stats(p->runtimes, RUNTIME_V8, &name, &ret->names);
	return sampler__v8_stats(p->sampler, ret->walk);
}

int pipeline__ruby_stats(struct pipeline *p, struct pipeline_ruby_stats *ret)
{
	const char *name;

	memset(ret, 0, sizeof(*ret));
	if (!p->runtimes)
		return -ENOTSUP;
	runtimes__stats(p->runtimes, RUNTIME_RUBY, &name, &ret->names);
	return sampler__ruby_stats(p->sampler, ret->walk);
}

int pipeline__hotspot_stats(struct pipeline *p, struct pipeline_hotspot_stats *ret)
{
	const char *name;

	memset(ret, 0, sizeof(*ret));
	if (!p->runtimes)
		return -ENOTSUP;
	runtimes__stats(p->runtimes, RUNTIME_HOTSPOT, &name, &ret->names);
	return sampler__hotspot_stats(p->sampler, ret->walk);
}

int pipeline__php_stats(struct pipeline *p, struct runtime_stats *ret)
{
	const char *name;

	memset(ret, 0, sizeof(*ret));
	if (!p->runtimes)
		return -ENOTSUP;
	return runtimes__stats(p->runtimes, RUNTIME_PHP, &name, ret);
}

int pipeline__set_excluded_cgroups(struct pipeline *p, const uint64_t *ids, size_t n)
{
	uint64_t *copy = NULL;
	int ret;

	if (n) {
		copy = malloc(n * sizeof(*copy));
		if (!copy)
			return -ENOMEM;
		memcpy(copy, ids, n * sizeof(*copy));
	}
	ret = sampler__set_excluded_cgroups(p->sampler, ids, n);
	if (ret) {
		free(copy);
		return ret;
	}
	free(p->excluded_cgroups);
	p->excluded_cgroups = copy;
	p->n_excluded_cgroups = n;
	return 0;
}
