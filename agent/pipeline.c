// SPDX-License-Identifier: Apache-2.0
/* The record pipeline: sampler (BPF aggregation) -> symboliser -> struct window. Shared by
 * `record` and `run`; first-sight events from BPF trigger an early process capture. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pipeline.h"
#include "sampler.h"
#include "symbolizer.h"

/* Frames per sample: a kernel stack plus a user stack. */
#define MAX_FRAMES (2 * PROFILE_STACK_DEPTH)

struct pipeline {
	struct sampler *sampler;
	struct symbolizer *sym;
	struct pipeline_options opts;
	int frequency_hz;
	int64_t window_start_ns;
	struct profile_stats last_stats; /* BPF counters at the previous collect */
	uint64_t last_run_ns, last_run_cnt;
	uint64_t *excluded_cgroups; /* filtered again in user space (cgroup v1 hosts, races) */
	size_t n_excluded_cgroups;
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

static void on_event(const struct profile_event *e, void *ctx)
{
	struct pipeline *p = ctx;

	/* -ESRCH: it already exited; its frames will be [unknown] and counted as such */
	if (e->type == PROFILE_EVENT_EXEC)
		symbolizer__forget_process(p->sym, e->pid);
	symbolizer__capture_process(p->sym, e->pid);
}

struct pipeline *pipeline__open(const struct pipeline_options *opts, char *err, size_t err_len)
{
	struct symbolizer_options sym_opts = {
		.max_binaries = opts->max_binaries,
		.max_processes = opts->max_processes,
	};
	struct sampler_options sampler_opts = {
		.pid = opts->pid,
		.on_event = on_event,
	};
	struct pipeline *p;

	p = calloc(1, sizeof(*p));
	if (!p) {
		snprintf(err, err_len, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	p->opts = *opts;
	p->sym = symbolizer__new(&sym_opts);
	if (!p->sym) {
		snprintf(err, err_len, "creating the symboliser failed: %s", strerror(errno));
		goto fail;
	}
	sampler_opts.ctx = p;
	p->sampler = sampler__open(&sampler_opts, err, err_len);
	if (!p->sampler)
		goto fail;
	return p;
fail:
	{
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
	sampler__free(p->sampler);
	symbolizer__free(p->sym);
	free(p->excluded_cgroups);
	free(p);
}

int pipeline__start(struct pipeline *p, int frequency_hz, char *err, size_t err_len)
{
	int ret;

	if (frequency_hz < SAMPLE_RATE_MIN_HZ)
		frequency_hz = SAMPLE_RATE_MIN_HZ;
	if (frequency_hz > SAMPLE_RATE_MAX_HZ)
		frequency_hz = SAMPLE_RATE_MAX_HZ;
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
	return sampler__poll(p->sampler, timeout_ms);
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
	return ret->function && ret->module && ret->build_id ? 0 : -ENOMEM;
}

/* Names the frames, leaf first: kernel, then user. Stack entries after the first are return
 * addresses; ip - 1 keeps a call that ends a function inside its caller. */
static int symbolise(struct collect_ctx *c, const struct sampler_entry *e,
		     struct window_frame *frames, size_t *ret_n)
{
	struct sym_frame f;
	size_t n = 0;
	int ret;

	for (size_t i = 0; i < e->n_kernel; i++) {
		symbolizer__resolve_kernel(c->p->sym, e->kernel_ips[i] - (i ? 1 : 0), &f);
		c->w->stats.unknown_frames += !f.known;
		ret = add_frame(c->w, &f, &frames[n++]);
		if (ret)
			return ret;
	}
	for (size_t i = 0; i < e->n_user; i++) {
		symbolizer__resolve_user(c->p->sym, e->key->pid, e->user_ips[i] - (i ? 1 : 0), &f);
		c->w->stats.unknown_frames += !f.known;
		ret = add_frame(c->w, &f, &frames[n++]);
		if (ret)
			return ret;
	}
	if (!n) { /* both walks failed or were absent: keep the CPU time, honestly unnamed */
		snprintf(f.function, sizeof(f.function), "[unknown]");
		f.module[0] = f.build_id[0] = '\0';
		c->w->stats.unknown_frames++;
		ret = add_frame(c->w, &f, &frames[n++]);
		if (ret)
			return ret;
	}
	*ret_n = n;
	return 0;
}

static int add_entry(const struct sampler_entry *e, void *ctx)
{
	struct collect_ctx *c = ctx;
	struct window_frame frames[MAX_FRAMES];
	char thread[PROFILE_COMM_LEN + 1], comm[PROFILE_COMM_LEN + 1];
	struct window_sample s = {
		.pid = e->key->pid,
		.tid = e->key->tid,
		.cgroup_id = e->key->cgroup_id,
		.frames = frames,
		.count = e->value->count,
		.cpu_ns = e->value->period_ns,
	};
	const char *process_name;
	int ret;

	if (cgroup_excluded(c->p, s.cgroup_id))
		return 0;
	ret = symbolise(c, e, frames, &s.n_frames);
	if (ret)
		goto fail;
	if (sampler__thread_name(c->p->sampler, s.tid, thread, sizeof(thread)))
		thread[0] = '\0';
	process_name = symbolizer__comm(c->p->sym, s.pid);
	if (!process_name || !*process_name) {
		/* never captured (it exited first): the main thread's name as BPF saw it */
		if (sampler__thread_name(c->p->sampler, s.pid, comm, sizeof(comm)))
			snprintf(comm, sizeof(comm), "%s", thread);
		process_name = comm;
	}
	s.comm = process_name;
	s.thread = thread[0] ? thread : process_name;
	ret = window__add_sample(c->w, &s);
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
			symbolizer__forget_process(c->p->sym, c->pids[i]);
			sampler__forget_pid(c->p->sampler, c->pids[i]);
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
		ws->lost_stack_user = now.user_stack_eexist + now.user_stack_other -
				      last->user_stack_eexist - last->user_stack_other;
		ws->lost_stack_kernel = now.kernel_stack_eexist + now.kernel_stack_other -
					last->kernel_stack_eexist - last->kernel_stack_other;
		ws->lost_map_full = now.map_full - last->map_full;
		*last = now;
	}
	if (!sampler__bpf_runtime(p->sampler, &run_ns, &run_cnt)) {
		ws->bpf_run_ns = run_ns - p->last_run_ns;
		ws->bpf_run_cnt = run_cnt - p->last_run_cnt;
		p->last_run_ns = run_ns;
		p->last_run_cnt = run_cnt;
	}
}

int pipeline__collect(struct pipeline *p, struct window **ret)
{
	struct collect_ctx c = { .p = p };
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
	add_kernel_stats(p, &c.w->stats);
	finish_processes(&c);
	free(c.pids);
	if (err) {
		window__free(c.w);
		return err;
	}
	*ret = c.w;
	return 0;
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
