// SPDX-License-Identifier: Apache-2.0
/* The agent's metric registry (a mutex-guarded struct the main thread writes) and its
 * Prometheus exposition. A figure that was not measured is left out and named in
 * roottrace_agent_unmeasured with the reason, never written as 0. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "status/agent_metrics.h"
#include "symbolize/debuginfod_fetch.h"
#include "prom_text.h"

struct agent_metrics {
	pthread_mutex_t lock;
	struct agent_status status;
};

struct agent_metrics *agent_metrics__new(void)
{
	struct agent_metrics *m = calloc(1, sizeof(*m));
	struct timespec ts;
	int r;

	if (!m)
		return NULL;
	r = pthread_mutex_init(&m->lock, NULL);
	if (r) {
		free(m);
		errno = r;
		return NULL;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	m->status.started_ms = ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
	return m;
}

void agent_metrics__free(struct agent_metrics *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->lock);
	free(m);
}

void agent_metrics__control(struct agent_metrics *m, const struct agent_control_status *c)
{
	pthread_mutex_lock(&m->lock);
	m->status.control = *c;
	pthread_mutex_unlock(&m->lock);
}

void agent_metrics__window(struct agent_metrics *m, const struct window_stats *ws, double window_s)
{
	pthread_mutex_lock(&m->lock);
	m->status.windows++;
	window_stats__add(&m->status.total, ws);
	m->status.last = *ws;
	m->status.last_window_s = window_s;
	/* run_cnt stays 0 while the kernel's BPF statistics are off: the time is unknown */
	if (ws->samples + ws->idle_samples > 0 && ws->bpf_run_cnt == 0)
		m->status.bpf_time_unmeasured = true;
	pthread_mutex_unlock(&m->lock);
}

void agent_metrics__symbolizer(struct agent_metrics *m, const struct symbolizer_stats *now)
{
	pthread_mutex_lock(&m->lock);
	m->status.sym_open = *now;
	pthread_mutex_unlock(&m->lock);
}

static void add_symbolizer(struct symbolizer_stats *dst, const struct symbolizer_stats *src)
{
	for (int i = 0; i < SYM_UNKNOWN__COUNT; i++)
		dst->unknown[i] += src->unknown[i];
	dst->binaries_loaded += src->binaries_loaded;
	dst->binaries_evicted += src->binaries_evicted;
	dst->processes_captured += src->processes_captured;
	dst->processes_evicted += src->processes_evicted;
	dst->processes_forgotten += src->processes_forgotten;
	dst->binaries_opened += src->binaries_opened;
	dst->binary_cache_hits += src->binary_cache_hits;
	dst->recaptures += src->recaptures;
	dst->symbol_tables_dropped += src->symbol_tables_dropped;
	dst->images_replaced += src->images_replaced;
}

void agent_metrics__symbolizer_closed(struct agent_metrics *m)
{
	pthread_mutex_lock(&m->lock);
	add_symbolizer(&m->status.sym_closed, &m->status.sym_open);
	m->status.sym_open = (struct symbolizer_stats){0};
	pthread_mutex_unlock(&m->lock);
}

void agent_metrics__python(struct agent_metrics *m, const struct pipeline_python_stats *now)
{
	pthread_mutex_lock(&m->lock);
	m->status.python_open = *now;
	pthread_mutex_unlock(&m->lock);
}

static void add_python(struct pipeline_python_stats *dst, const struct pipeline_python_stats *src)
{
	for (int i = 0; i < PYTHON_STAT__COUNT; i++)
		dst->walk[i] += src->walk[i];
	dst->names.processes_attached += src->names.processes_attached;
	dst->names.unsupported += src->names.unsupported;
	dst->names.attach_failed += src->names.attach_failed;
	dst->names.names_read += src->names.names_read;
	dst->names.names_evicted += src->names.names_evicted;
	dst->names.names_stale += src->names.names_stale;
	dst->names.names_unreadable += src->names.names_unreadable;
	dst->names.names_cached = src->names.names_cached;
	if (src->names.unsupported_version[0])
		memcpy(dst->names.unsupported_version, src->names.unsupported_version,
		       sizeof(dst->names.unsupported_version));
}

void agent_metrics__python_closed(struct agent_metrics *m)
{
	pthread_mutex_lock(&m->lock);
	add_python(&m->status.python_closed, &m->status.python_open);
	m->status.python_open = (struct pipeline_python_stats){0};
	pthread_mutex_unlock(&m->lock);
}

void agent_metrics__v8(struct agent_metrics *m, const struct pipeline_v8_stats *now)
{
	pthread_mutex_lock(&m->lock);
	m->status.v8_open = *now;
	pthread_mutex_unlock(&m->lock);
}

static void add_runtime_names(struct runtime_stats *dst, const struct runtime_stats *src)
{
	dst->processes_attached += src->processes_attached;
	dst->unsupported += src->unsupported;
	dst->attach_failed += src->attach_failed;
	dst->names_read += src->names_read;
	dst->names_evicted += src->names_evicted;
	dst->names_stale += src->names_stale;
	dst->names_unreadable += src->names_unreadable;
	dst->names_cached = src->names_cached;
	dst->inlined_frames += src->inlined_frames;
	dst->code_read += src->code_read;
	dst->code_unreadable += src->code_unreadable;
	dst->code_evicted += src->code_evicted;
	if (src->unsupported_version[0])
		memcpy(dst->unsupported_version, src->unsupported_version,
		       sizeof(dst->unsupported_version));
}

static void add_v8(struct pipeline_v8_stats *dst, const struct pipeline_v8_stats *src)
{
	for (int i = 0; i < V8_STAT__COUNT; i++)
		dst->walk[i] += src->walk[i];
	add_runtime_names(&dst->names, &src->names);
}

void agent_metrics__v8_closed(struct agent_metrics *m)
{
	pthread_mutex_lock(&m->lock);
	add_v8(&m->status.v8_closed, &m->status.v8_open);
	m->status.v8_open = (struct pipeline_v8_stats){0};
	pthread_mutex_unlock(&m->lock);
}

void agent_metrics__php(struct agent_metrics *m, const struct runtime_stats *now)
{
	pthread_mutex_lock(&m->lock);
	m->status.php_open = *now;
	pthread_mutex_unlock(&m->lock);
}

void agent_metrics__php_closed(struct agent_metrics *m)
{
	pthread_mutex_lock(&m->lock);
	add_runtime_names(&m->status.php_closed, &m->status.php_open);
	m->status.php_open = (struct runtime_stats){0};
	pthread_mutex_unlock(&m->lock);
}

void agent_metrics__hotspot(struct agent_metrics *m, const struct pipeline_hotspot_stats *now)
{
	pthread_mutex_lock(&m->lock);
	m->status.hotspot_open = *now;
	pthread_mutex_unlock(&m->lock);
}

static void add_hotspot(struct pipeline_hotspot_stats *dst,
			const struct pipeline_hotspot_stats *src)
{
	for (int i = 0; i < HOTSPOT_STAT__COUNT; i++)
		dst->walk[i] += src->walk[i];
	add_runtime_names(&dst->names, &src->names);
}

void agent_metrics__hotspot_closed(struct agent_metrics *m)
{
	pthread_mutex_lock(&m->lock);
	add_hotspot(&m->status.hotspot_closed, &m->status.hotspot_open);
	m->status.hotspot_open = (struct pipeline_hotspot_stats){0};
	pthread_mutex_unlock(&m->lock);
}

void agent_metrics__ruby(struct agent_metrics *m, const struct pipeline_ruby_stats *now)
{
	pthread_mutex_lock(&m->lock);
	m->status.ruby_open = *now;
	pthread_mutex_unlock(&m->lock);
}

static void add_ruby(struct pipeline_ruby_stats *dst, const struct pipeline_ruby_stats *src)
{
	for (int i = 0; i < RUBY_STAT__COUNT; i++)
		dst->walk[i] += src->walk[i];
	add_runtime_names(&dst->names, &src->names);
}

void agent_metrics__ruby_closed(struct agent_metrics *m)
{
	pthread_mutex_lock(&m->lock);
	add_ruby(&m->status.ruby_closed, &m->status.ruby_open);
	m->status.ruby_open = (struct pipeline_ruby_stats){0};
	pthread_mutex_unlock(&m->lock);
}

void agent_metrics__uploads(struct agent_metrics *m, const struct uploader_stats *st)
{
	pthread_mutex_lock(&m->lock);
	m->status.uploads = *st;
	pthread_mutex_unlock(&m->lock);
}

void agent_metrics__snapshot(struct agent_metrics *m, struct agent_status *ret)
{
	pthread_mutex_lock(&m->lock);
	*ret = m->status;
	pthread_mutex_unlock(&m->lock);
}

/* ---- exposition ------------------------------------------------------------------------ */

#define P "roottrace_agent_"

struct labelled {
	const char *label;
	uint64_t value;
};

/* One counter with a sample per label value: name{key="label"} value. */
static void counter_by(struct prom_text *t, const char *name, const char *help, const char *key,
		       const struct labelled *values, size_t n)
{
	prom_text__header(t, name, "counter", help);
	for (size_t i = 0; i < n; i++)
		prom_text__appendf(t, "%s{%s=\"%s\"} %llu\n", name, key, values[i].label,
				   (unsigned long long)values[i].value);
}

/* Left out of the exposition, with the reason (a fixed word, no escaping needed). */
static void unmeasured(struct prom_text *t, const char *metric, const char *reason)
{
	prom_text__appendf(t, P "unmeasured{metric=\"%s\",reason=\"%s\"} 1\n", metric, reason);
}

static void render_control(struct prom_text *t, const struct agent_status *s)
{
	const struct agent_control_status *c = &s->control;

	prom_text__header(t, P "info", "gauge", "Always 1; the agent's version as a label.");
	prom_text__appendf(t, P "info{version=\"%s\"} 1\n", ROOTTRACE_VERSION);
	prom_text__gauge(t, P "sampling", "1 while the BPF program is attached and sampling.",
			 c->sampling);
	prom_text__gauge(t, P "sample_rate_hz", "Sampling frequency in use (0 when not sampling).",
			 c->sampling_hz);
	prom_text__gauge(t, P "config_held",
			 "1 while a valid collector config is held (0: failing closed).",
			 c->have_config);
	counter_by(t, P "config_polls_total", "Config polls, by result.", "result",
		   (const struct labelled[]){{"ok", c->polls.ok}, {"failed", c->polls.failed}}, 2);
}

static void render_samples(struct prom_text *t, const struct agent_status *s)
{
	const struct window_stats *w = &s->total;

	prom_text__counter(t, P "windows_total",
			   "Windows collected (the figures below advance once per window).",
			   s->windows);
	prom_text__counter(t, P "samples_total", "On-CPU samples recorded (idle excluded).",
			   w->samples);
	prom_text__counter(t, P "idle_samples_total", "Samples that hit the idle task.",
			   w->idle_samples);
	counter_by(t, P "lost_samples_total",
		   "Samples lost, by reason: stack not stored (stack map full or failed walk), "
		   "the kernel aggregation map full, profiles the upload queue dropped.",
		   "reason",
		   (const struct labelled[]){{"user_stack", w->lost_stack_user},
					     {"kernel_stack", w->lost_stack_kernel},
					     {"aggregation_map_full", w->lost_map_full},
					     {"upload_queue_full", s->uploads.dropped_samples}},
		   4);
	prom_text__counter(t, P "unknown_frames_total",
			   "Frames that could not be named ([unknown]), as in the self-report.",
			   w->unknown_frames);
	prom_text__gauge(t, P "processes", "Distinct processes sampled in the last window.",
			 (double)s->last.processes);
}

static void render_unwind(struct prom_text *t, const struct window_unwind *u)
{
	counter_by(t, P "stack_walks_total",
		   "User stacks by how they were walked: .eh_frame tables, frame pointers, both, "
		   "or the kernel's frame-pointer walk before the process's tables were loaded.",
		   "method",
		   (const struct labelled[]){{"tables", u->by_tables},
					     {"frame_pointers", u->by_fp},
					     {"mixed", u->mixed},
					     {"tables_not_loaded", u->not_loaded}},
		   4);
	counter_by(
	    t, P "stack_walk_ends_total",
	    "How table walks ended: at a stop frame, at the end of a frame-pointer chain, "
	    "truncated at the depth cap, or early (the other reasons).",
	    "end",
	    (const struct labelled[]){{"stop_frame", u->end_clean},
				      {"frame_pointer_chain", u->end_fp_chain},
				      {"truncated", u->truncated},
				      {"no_mapping", u->end_early[WINDOW_UNWIND_END_NO_MAPPING]},
				      {"unsupported_rule", u->end_early[WINDOW_UNWIND_END_CANNOT]},
				      {"bad_cfa", u->end_early[WINDOW_UNWIND_END_BAD_CFA]},
				      {"unreadable_stack", u->end_early[WINDOW_UNWIND_END_READ]},
				      {"no_row", u->end_early[WINDOW_UNWIND_END_NO_ROW]},
				      {"stack_map_full", u->end_early[WINDOW_UNWIND_END_MAP_FULL]}},
	    9);
	prom_text__counter(t, P "unwind_tables_built_total", "Unwind tables compiled.",
			   u->tables_built);
	counter_by(t, P "unwind_table_failures_total",
		   "Binaries left to frame pointers because their table could not be built.",
		   "reason",
		   (const struct labelled[]){{"corrupt", u->tables_corrupt},
					     {"too_big", u->tables_too_big},
					     {"unreadable", u->tables_unreadable}},
		   3);
	prom_text__gauge(t, P "unwind_rows_bytes",
			 "Kernel memory the loaded unwind rows use (at the last window).",
			 (double)u->rows_bytes);
}

/* debuginfod's fetches (agent/symbolize/debuginfod_fetch.h): left out while it is off. */
static void render_debuginfod(struct prom_text *t)
{
	struct labelled failed[DEBUGINFOD_FAIL__COUNT];
	struct debuginfod_fetch_stats d;

	debuginfod_fetch__stats(&d);
	if (!d.enabled)
		return;
	for (int i = 0; i < DEBUGINFOD_FAIL__COUNT; i++)
		failed[i] = (struct labelled){debuginfod_fetch__failure_name(i), d.failed[i]};
	prom_text__counter(
	    t, P "debuginfod_requests_total",
	    "Debug files asked of the debuginfod servers (a build-id once, again only "
	    "after its negative-cache time).",
	    d.requests);
	prom_text__counter(t, P "debuginfod_fetched_total", "Debug files debuginfod served.",
			   d.fetched);
	counter_by(t, P "debuginfod_failures_total",
		   "Fetches that failed, by cause (queue_full: refused, over the queue's bound).",
		   "cause", failed, DEBUGINFOD_FAIL__COUNT);
	prom_text__counter(t, P "debuginfod_negative_cache_hits_total",
			   "Lookups of a build-id that failed recently, answered without asking.",
			   d.negative_hits);
	prom_text__gauge(t, P "debuginfod_in_flight", "Fetches under way now.",
			 (double)d.in_flight);
	prom_text__gauge(t, P "debuginfod_queued", "Fetches waiting for a worker now.",
			 (double)d.queued);
	prom_text__gauge(t, P "debuginfod_cache_bytes",
			 "Bytes in the debuginfod cache directory (at the last fetch).",
			 (double)d.cache_bytes);
}

static void render_symbolizer(struct prom_text *t, const struct agent_status *s)
{
	struct symbolizer_stats all = s->sym_closed;
	struct labelled unknown[SYM_UNKNOWN__COUNT];

	add_symbolizer(&all, &s->sym_open);
	for (int i = 0; i < SYM_UNKNOWN__COUNT; i++)
		unknown[i] = (struct labelled){symbolizer__reason_name(i), all.unknown[i]};
	counter_by(t, P "unknown_frame_lookups_total",
		   "Addresses the symboliser could not name, by reason (each distinct stack is "
		   "looked up once).",
		   "reason", unknown, SYM_UNKNOWN__COUNT);
	prom_text__gauge(t, P "processes_tracked",
			 "Processes whose address maps the symboliser holds now.",
			 (double)s->sym_open.processes_cached);
	prom_text__counter(t, P "processes_captured_total",
			   "Processes whose maps were captured at first sight.",
			   all.processes_captured);
	prom_text__gauge(t, P "symbol_cache_bytes", "Memory held by cached symbol tables now.",
			 (double)s->sym_open.symbol_bytes);
	prom_text__counter(t, P "symbol_cache_hits_total",
			   "Mappings served by an already cached binary.", all.binary_cache_hits);
	prom_text__counter(t, P "symbol_cache_misses_total",
			   "Binaries opened and read (a cache miss).", all.binaries_opened);
	counter_by(t, P "symbol_cache_evictions_total",
		   "Cache evictions: binaries over the count cap, symbol tables over the memory "
		   "cap (read again when needed), process maps over the count cap.",
		   "cache",
		   (const struct labelled[]){{"binaries", all.binaries_evicted},
					     {"symbol_tables", all.symbol_tables_dropped},
					     {"processes", all.processes_evicted}},
		   3);
}

static void render_uploads(struct prom_text *t, const struct agent_status *s)
{
	const struct uploader_stats *u = &s->uploads;

	prom_text__gauge(t, P "upload_queue_profiles", "Profiles waiting for upload.",
			 (double)u->queued);
	prom_text__gauge(t, P "upload_queue_bytes", "Bytes of profiles waiting for upload.",
			 (double)u->queued_bytes);
	prom_text__counter(t, P "profiles_uploaded_total", "Profiles the collector acknowledged.",
			   u->uploaded);
	prom_text__counter(t, P "uploaded_bytes_total",
			   "Bytes (gzipped pprof) the collector acknowledged.", u->uploaded_bytes);
	counter_by(t, P "upload_failures_total",
		   "Failed uploads, by reason: no HTTP answer, 5xx/408 and 429 (all retried), "
		   "other 4xx (dropped), queue or spool full (oldest dropped).",
		   "reason",
		   (const struct labelled[]){{"network", u->failed_network},
					     {"server_error", u->failed_server},
					     {"throttled", u->failed_throttled},
					     {"rejected", u->rejected},
					     {"queue_full", u->dropped}},
		   5);
}

static double process_cpu_s(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return -1;
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* Resident set size from /proc/self/statm; -1 when it cannot be read. */
static long long rss_bytes(void)
{
	long long pages = -1, resident = -1;
	FILE *f = fopen("/proc/self/statm", "re");

	if (!f)
		return -1;
	if (fscanf(f, "%lld %lld", &pages, &resident) != 2)
		resident = -1;
	fclose(f);
	return resident < 0 ? -1 : resident * sysconf(_SC_PAGESIZE);
}

/* Timestamps, own CPU, BPF time, memory: each present only when known. */
static void render_measured(struct prom_text *t, const struct agent_status *s)
{
	double cpu_s = process_cpu_s();
	long long rss = rss_bytes();

	prom_text__header(t, P "unmeasured", "gauge",
			  "Figures left out of this exposition, with the reason (never 0).");
	if (!s->control.polls.last_ok_ns)
		unmeasured(t, P "last_config_poll_timestamp_seconds", "never");
	if (!s->uploads.last_upload_ns)
		unmeasured(t, P "last_upload_timestamp_seconds", "never");
	if (cpu_s < 0)
		unmeasured(t, P "cpu_seconds_total", "getrusage_failed");
	if (s->bpf_time_unmeasured)
		unmeasured(t, P "bpf_seconds_total", "bpf_stats_disabled");
	if (rss < 0)
		unmeasured(t, P "resident_memory_bytes", "proc_unreadable");
	if (s->control.polls.last_ok_ns)
		prom_text__gauge(t, P "last_config_poll_timestamp_seconds",
				 "Unix time of the last valid config from the collector.",
				 s->control.polls.last_ok_ns / 1e9);
	if (s->uploads.last_upload_ns)
		prom_text__gauge(t, P "last_upload_timestamp_seconds",
				 "Unix time of the last acknowledged upload.",
				 s->uploads.last_upload_ns / 1e9);
	if (cpu_s >= 0) {
		prom_text__header(t, P "cpu_seconds_total", "counter",
				  "The agent's own user + system CPU time, every thread.");
		prom_text__sample(t, P "cpu_seconds_total", "", cpu_s);
	}
	if (!s->bpf_time_unmeasured) {
		prom_text__header(t, P "bpf_seconds_total", "counter",
				  "In-kernel run time of the agent's BPF programs (per window).");
		prom_text__sample(t, P "bpf_seconds_total", "", s->total.bpf_run_ns / 1e9);
	}
	if (rss >= 0)
		prom_text__gauge(t, P "resident_memory_bytes", "The agent's resident set size.",
				 (double)rss);
}

/* Interpreter frames: what the walk recorded and missed, what naming read and dropped, and
 * the last interpreter version without an offset table (its processes keep native frames). */
static void render_python(struct prom_text *t, const struct agent_status *s)
{
	struct pipeline_python_stats all = s->python_closed;
	const uint64_t *w = all.walk;
	const struct runtime_stats *n = &all.names;

	add_python(&all, &s->python_open);
	counter_by(t, P "python_processes_total",
		   "Python processes found, by outcome: walked, or of a version without an "
		   "offset table (native frames).",
		   "outcome",
		   (const struct labelled[]){{"attached", n->processes_attached},
					     {"no_table", n->unsupported},
					     {"attach_failed", n->attach_failed}},
		   3);
	prom_text__counter(t, P "python_samples_total",
			   "Samples of a Python process whose interpreter frames were walked.",
			   w[PYTHON_STAT_SAMPLES]);
	prom_text__counter(t, P "python_frames_total", "Interpreter frames recorded.",
			   w[PYTHON_STAT_FRAMES]);
	counter_by(t, P "python_walk_problems_total",
		   "Python samples whose interpreter walk fell short, by reason.", "reason",
		   (const struct labelled[]){{"no_thread_state", w[PYTHON_STAT_NO_THREAD]},
					     {"truncated", w[PYTHON_STAT_TRUNCATED]},
					     {"unreadable", w[PYTHON_STAT_READ]},
					     {"announcement_lost", w[PYTHON_STAT_EVENTS_LOST]}},
		   4);
	counter_by(t, P "python_names_total",
		   "Interpreter frame names by how they were served: read from the process, or "
		   "[unknown] (code object freed and reused, memory unreadable); evicted: dropped "
		   "from the bounded cache.",
		   "result",
		   (const struct labelled[]){{"read", n->names_read},
					     {"stale", n->names_stale},
					     {"unreadable", n->names_unreadable},
					     {"evicted", n->names_evicted}},
		   4);
	prom_text__gauge(t, P "python_names_cached", "Interpreter frame names held now.",
			 (double)n->names_cached);
	if (n->unsupported_version[0]) {
		prom_text__header(t, P "python_version_without_table", "gauge",
				  "A Python version found without an offset table (the last one).");
		prom_text__appendf(t, P "python_version_without_table{version=\"%s\"} 1\n",
				   n->unsupported_version);
	}
}

static void render_v8(struct prom_text *t, const struct agent_status *s)
{
	struct pipeline_v8_stats all = s->v8_closed;
	const uint64_t *w = all.walk;
	const struct runtime_stats *n = &all.names;

	add_v8(&all, &s->v8_open);
	counter_by(t, P "v8_processes_total",
		   "V8 (Node.js) processes found, by outcome: walked, or whose v8dbg_* constants "
		   "lack what JS frames need (native frames).",
		   "outcome",
		   (const struct labelled[]){{"attached", n->processes_attached},
					     {"unsupported", n->unsupported},
					     {"attach_failed", n->attach_failed}},
		   3);
	prom_text__counter(t, P "v8_samples_total", "Samples of a V8 process walked for JS frames.",
			   w[V8_STAT_SAMPLES]);
	prom_text__counter(t, P "v8_frames_total", "JS frames recorded.", w[V8_STAT_FRAMES]);
	counter_by(t, P "v8_walk_problems_total",
		   "V8 walks that fell short, by reason: the stack was full at a JS frame, or a "
		   "first-seen function was not announced (named when its window is).",
		   "reason",
		   (const struct labelled[]){{"truncated", w[V8_STAT_TRUNCATED]},
					     {"announcement_lost", w[V8_STAT_EVENTS_LOST]}},
		   2);
	counter_by(t, P "v8_names_total",
		   "JS frame names by how they were served: read from the process, or [unknown] "
		   "(another object at the function's address now, memory unreadable); evicted: "
		   "dropped from the bounded cache.",
		   "result",
		   (const struct labelled[]){{"read", n->names_read},
					     {"stale", n->names_stale},
					     {"unreadable", n->names_unreadable},
					     {"evicted", n->names_evicted}},
		   4);
	prom_text__gauge(t, P "v8_names_cached", "JS frame names held now.",
			 (double)n->names_cached);
	prom_text__counter(t, P "v8_optimised_frames_total",
			   "JS frames of TurboFan or Maglev code recorded with their pc offset.",
			   w[V8_STAT_OPTIMISED]);
	counter_by(t, P "v8_optimised_code_total",
		   "Optimised code objects whose inlining tables were read, by outcome: read, or "
		   "unreadable (freed, moved, another code there: outer names only); evicted: "
		   "dropped from the bounded cache.",
		   "result",
		   (const struct labelled[]){{"read", n->code_read},
					     {"unreadable", n->code_unreadable},
					     {"evicted", n->code_evicted}},
		   3);
	prom_text__counter(t, P "v8_inlined_frames_total",
			   "Frames of functions TurboFan or Maglev inlined, told as their own.",
			   n->inlined_frames);
	if (n->unsupported_version[0]) {
		prom_text__header(
		    t, P "v8_version_unsupported", "gauge",
		    "A V8 version found without the constants JS frames need (the last "
		    "one).");
		prom_text__appendf(t, P "v8_version_unsupported{version=\"%s\"} 1\n",
				   n->unsupported_version);
	}
}

static void render_php(struct prom_text *t, const struct agent_status *s)
{
	struct runtime_stats n = s->php_closed;

	add_runtime_names(&n, &s->php_open);
	counter_by(t, P "php_processes_total",
		   "PHP processes found, by outcome: walked, or of a version without an offset "
		   "table (native frames).",
		   "outcome",
		   (const struct labelled[]){{"attached", n.processes_attached},
					     {"unsupported", n.unsupported},
					     {"attach_failed", n.attach_failed}},
		   3);
	counter_by(t, P "php_names_total",
		   "PHP frame names by how they were served: read from the process, or [unknown] "
		   "(another function at that address now, memory unreadable); evicted: dropped "
		   "from the bounded cache.",
		   "result",
		   (const struct labelled[]){{"read", n.names_read},
					     {"stale", n.names_stale},
					     {"unreadable", n.names_unreadable},
					     {"evicted", n.names_evicted}},
		   4);
	prom_text__gauge(t, P "php_names_cached", "PHP frame names held now.",
			 (double)n.names_cached);
	if (n.unsupported_version[0]) {
		prom_text__header(t, P "php_version_without_table", "gauge",
				  "A PHP version found without an offset table (the last one).");
		prom_text__appendf(t, P "php_version_without_table{version=\"%s\"} 1\n",
				   n.unsupported_version);
	}
}

static void render_hotspot(struct prom_text *t, const struct agent_status *s)
{
	struct pipeline_hotspot_stats all = s->hotspot_closed;
	const uint64_t *w = all.walk;
	const struct runtime_stats *n = &all.names;

	add_hotspot(&all, &s->hotspot_open);
	counter_by(t, P "hotspot_processes_total",
		   "HotSpot JVMs found, by outcome: walked, or whose VMStructs lack what Java "
		   "frames need (native frames).",
		   "outcome",
		   (const struct labelled[]){{"attached", n->processes_attached},
					     {"unsupported", n->unsupported},
					     {"attach_failed", n->attach_failed}},
		   3);
	prom_text__counter(t, P "hotspot_samples_total", "Samples of a JVM walked for Java frames.",
			   w[HOTSPOT_STAT_SAMPLES]);
	counter_by(t, P "hotspot_frames_total",
		   "Code-cache frames recorded, by kind: interpreted or compiled Java frames, or "
		   "stubs kept as native pcs.",
		   "kind",
		   (const struct labelled[]){{"interpreted", w[HOTSPOT_STAT_INTERPRETED]},
					     {"compiled", w[HOTSPOT_STAT_COMPILED]},
					     {"stub", w[HOTSPOT_STAT_STUB]}},
		   3);
	counter_by(t, P "hotspot_walk_problems_total",
		   "JVM walks that fell short, by reason: a code-cache pc in no blob, a frame "
		   "that could not be read ([unknown]), the stack full at a Java frame, or a "
		   "first-seen method not announced (named when its window is).",
		   "reason",
		   (const struct labelled[]){{"no_blob", w[HOTSPOT_STAT_NO_BLOB]},
					     {"read", w[HOTSPOT_STAT_READ]},
					     {"truncated", w[HOTSPOT_STAT_TRUNCATED]},
					     {"announcement_lost", w[HOTSPOT_STAT_EVENTS_LOST]}},
		   4);
	counter_by(t, P "hotspot_names_total",
		   "Java frame names by how they were served: read from the process, or [unknown] "
		   "(another Method at that address now, memory unreadable); evicted: dropped "
		   "from the bounded cache.",
		   "result",
		   (const struct labelled[]){{"read", n->names_read},
					     {"stale", n->names_stale},
					     {"unreadable", n->names_unreadable},
					     {"evicted", n->names_evicted}},
		   4);
	prom_text__gauge(t, P "hotspot_names_cached", "Java frame names held now.",
			 (double)n->names_cached);
	if (n->unsupported_version[0]) {
		prom_text__header(t, P "hotspot_version_unsupported", "gauge",
				  "A JVM version found whose VMStructs lack what Java frames need "
				  "(the last one).");
		prom_text__appendf(t, P "hotspot_version_unsupported{version=\"%s\"} 1\n",
				   n->unsupported_version);
	}
}

static void render_ruby(struct prom_text *t, const struct agent_status *s)
{
	struct pipeline_ruby_stats all = s->ruby_closed;
	const uint64_t *w = all.walk;
	const struct runtime_stats *n = &all.names;

	add_ruby(&all, &s->ruby_open);
	counter_by(t, P "ruby_processes_total",
		   "Ruby processes found, by outcome: walked, or of a version without an offset "
		   "table (native frames).",
		   "outcome",
		   (const struct labelled[]){{"attached", n->processes_attached},
					     {"no_table", n->unsupported},
					     {"attach_failed", n->attach_failed}},
		   3);
	prom_text__counter(t, P "ruby_samples_total",
			   "Samples of a Ruby process whose control frames were walked.",
			   w[RUBY_STAT_SAMPLES]);
	prom_text__counter(t, P "ruby_frames_total", "Ruby frames recorded.", w[RUBY_STAT_FRAMES]);
	counter_by(t, P "ruby_walk_problems_total",
		   "Ruby samples whose walk fell short, by reason.", "reason",
		   (const struct labelled[]){{"no_execution_context", w[RUBY_STAT_NO_EC]},
					     {"truncated", w[RUBY_STAT_TRUNCATED]},
					     {"unreadable", w[RUBY_STAT_READ]},
					     {"announcement_lost", w[RUBY_STAT_EVENTS_LOST]}},
		   4);
	counter_by(t, P "ruby_names_total",
		   "Ruby frame names by how they were served: read from the process, or [unknown] "
		   "(another iseq or method entry at that address now, memory unreadable); "
		   "evicted: dropped from the bounded cache.",
		   "result",
		   (const struct labelled[]){{"read", n->names_read},
					     {"stale", n->names_stale},
					     {"unreadable", n->names_unreadable},
					     {"evicted", n->names_evicted}},
		   4);
	prom_text__gauge(t, P "ruby_names_cached", "Ruby frame names held now.",
			 (double)n->names_cached);
	if (n->unsupported_version[0]) {
		prom_text__header(t, P "ruby_version_without_table", "gauge",
				  "A Ruby version found without an offset table (the last one).");
		prom_text__appendf(t, P "ruby_version_without_table{version=\"%s\"} 1\n",
				   n->unsupported_version);
	}
}

int agent_metrics__render(const struct agent_status *s, int64_t now_ms, char **ret, size_t *ret_len)
{
	struct prom_text t = {0};

	render_control(&t, s);
	prom_text__gauge(&t, P "uptime_seconds", "Seconds since the agent started.",
			 (now_ms - s->started_ms) / 1e3);
	render_samples(&t, s);
	render_unwind(&t, &s->total.unwind);
	render_symbolizer(&t, s);
	render_python(&t, s);
	render_debuginfod(&t);
	render_v8(&t, s);
	render_php(&t, s);
	render_ruby(&t, s);
	render_hotspot(&t, s);
	render_uploads(&t, s);
	render_measured(&t, s);
	return prom_text__finish(&t, ret, ret_len);
}
