// SPDX-License-Identifier: Apache-2.0
/* The agent's metric registry (a mutex-guarded struct the main thread writes) and its
 * Prometheus exposition. A figure that was not measured is left out and named in
 * roottrace_agent_unmeasured with the reason, never written as 0. */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
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
	dst->symbol_tables_reread += src->symbol_tables_reread;
	dst->symbol_cap_exceeded += src->symbol_cap_exceeded;
	dst->images_replaced += src->images_replaced;
}

void agent_metrics__symbolizer_closed(struct agent_metrics *m)
{
	pthread_mutex_lock(&m->lock);
	add_symbolizer(&m->status.sym_closed, &m->status.sym_open);
	m->status.sym_open = (struct symbolizer_stats){0};
	pthread_mutex_unlock(&m->lock);
}

/* ---- interpreter frames ------------------------------------------------------------------ */

#define SERIES_LABELS_MAX 6 /* labels of one series, NULL-terminated */
#define SERIES_WALK_MAX 16  /* walk counters of one interpreter */

/* A walk counter (an index into the interpreter's walk[]) and its label value. */
struct walk_label {
	const char *label;
	int stat;
};

/* One interpreter's figures. Where they sit in struct agent_status: its closed pipelines'
 * totals and the open one's, each a struct of n_walk walk counters (at walk) and a
 * runtime_stats (at names). What /metrics shows of them, as roottrace_agent_<runtime>_*:
 * processes_total, samples_total, frames_total (one counter, or by kind), walk_problems_total,
 * names_total, names_cached and the version without a table; a series without help (or
 * labels) is not shown. A new walk counter is one more label here. */
struct runtime_series {
	const char *runtime;
	size_t closed, open, size, walk, names, n_walk;
	const char *processes_help;
	const char *unsupported; /* the outcome label of a version it cannot walk */
	const char *samples_help;
	int samples;
	const char *frames_help;
	int frames;
	struct walk_label frame_kinds[SERIES_LABELS_MAX]; /* frames by kind, when set */
	const char *problems_help;
	struct walk_label problems[SERIES_LABELS_MAX];
	const char *names_help;
	const char *cached_help;
	/* a JIT's inlined functions told as their own frames, when set: optimised_frames_total
	 * (the walk counter optimised), optimised_code_total (by result), inlined_frames_total */
	const char *optimised_help, *code_help, *inlined_help;
	int optimised;
	const char *version_metric; /* after roottrace_agent_<runtime>_ */
	const char *version_help;
};

/* An interpreter whose pipeline stats are a struct {walk[], names} of the given type. */
#define PIPELINE(field, type)                                                                      \
	.closed = offsetof(struct agent_status, field##_closed),                                   \
	.open = offsetof(struct agent_status, field##_open), .size = sizeof(type),                 \
	.walk = offsetof(type, walk), .names = offsetof(type, names),                              \
	.n_walk = sizeof(((type *)0)->walk) / sizeof(uint64_t)

_Static_assert(PYTHON_STAT__COUNT <= SERIES_WALK_MAX && V8_STAT__COUNT <= SERIES_WALK_MAX &&
		   RUBY_STAT__COUNT <= SERIES_WALK_MAX && HOTSPOT_STAT__COUNT <= SERIES_WALK_MAX,
	       "SERIES_WALK_MAX holds every interpreter's walk counters");

#define NAMES_HELP(what, reused)                                                                   \
	what " frame names by how they were served: read from the process, or [unknown] "          \
	     "(" reused ", memory unreadable); evicted: dropped from the bounded cache."

enum { SERIES_PYTHON, SERIES_V8, SERIES_PHP, SERIES_RUBY, SERIES_HOTSPOT, SERIES__COUNT };

static const struct runtime_series series[SERIES__COUNT] = {
    [SERIES_PYTHON] =
	{
	    .runtime = "python",
	    PIPELINE(python, struct pipeline_python_stats),
	    .processes_help = "Python processes found, by outcome: walked, or of a version "
			      "without an offset table (native frames).",
	    .unsupported = "no_table",
	    .samples_help = "Samples of a Python process whose interpreter frames were walked.",
	    .samples = PYTHON_STAT_SAMPLES,
	    .frames_help = "Interpreter frames recorded.",
	    .frames = PYTHON_STAT_FRAMES,
	    .problems_help = "Python samples whose interpreter walk fell short, by reason.",
	    .problems = {{"no_thread_state", PYTHON_STAT_NO_THREAD},
			 {"truncated", PYTHON_STAT_TRUNCATED},
			 {"unreadable", PYTHON_STAT_READ},
			 {"announcement_lost", PYTHON_STAT_EVENTS_LOST}},
	    .names_help = NAMES_HELP("Interpreter", "code object freed and reused"),
	    .cached_help = "Interpreter frame names held now.",
	    .version_metric = "version_without_table",
	    .version_help = "A Python version found without an offset table (the last one).",
	},
    [SERIES_V8] =
	{
	    .runtime = "v8",
	    PIPELINE(v8, struct pipeline_v8_stats),
	    .processes_help = "V8 (Node.js) processes found, by outcome: walked, or whose "
			      "v8dbg_* constants lack what JS frames need (native frames).",
	    .unsupported = "unsupported",
	    .samples_help = "Samples of a V8 process walked for JS frames.",
	    .samples = V8_STAT_SAMPLES,
	    .frames_help = "JS frames recorded.",
	    .frames = V8_STAT_FRAMES,
	    .problems_help = "V8 walks that fell short, by reason: the stack was full at a JS "
			     "frame, or a first-seen function was not announced (named when its "
			     "window is).",
	    .problems = {{"truncated", V8_STAT_TRUNCATED},
			 {"announcement_lost", V8_STAT_EVENTS_LOST}},
	    .names_help = NAMES_HELP("JS", "another object at the function's address now"),
	    .cached_help = "JS frame names held now.",
	    .optimised_help = "JS frames of TurboFan or Maglev code recorded with their pc offset.",
	    .optimised = V8_STAT_OPTIMISED,
	    .code_help =
		"Optimised code objects whose inlining tables were read, by outcome: "
		"read, or unreadable (freed, moved, another code there: outer names only); "
		"evicted: dropped from the bounded cache.",
	    .inlined_help = "Frames of functions TurboFan or Maglev inlined, told as their own.",
	    .version_metric = "version_unsupported",
	    .version_help = "A V8 version found without the constants JS frames need (the last "
			    "one).",
	},
    [SERIES_PHP] =
	{
	    .runtime = "php",
	    .closed = offsetof(struct agent_status, php_closed),
	    .open = offsetof(struct agent_status, php_open),
	    .size = sizeof(struct runtime_stats),
	    .processes_help = "PHP processes found, by outcome: walked, or of a version without "
			      "an offset table (native frames).",
	    .unsupported = "unsupported",
	    .names_help = NAMES_HELP("PHP", "another function at that address now"),
	    .cached_help = "PHP frame names held now.",
	    .version_metric = "version_without_table",
	    .version_help = "A PHP version found without an offset table (the last one).",
	},
    [SERIES_RUBY] =
	{
	    .runtime = "ruby",
	    PIPELINE(ruby, struct pipeline_ruby_stats),
	    .processes_help = "Ruby processes found, by outcome: walked, or of a version without "
			      "an offset table (native frames).",
	    .unsupported = "no_table",
	    .samples_help = "Samples of a Ruby process whose control frames were walked.",
	    .samples = RUBY_STAT_SAMPLES,
	    .frames_help = "Ruby frames recorded.",
	    .frames = RUBY_STAT_FRAMES,
	    .problems_help = "Ruby samples whose walk fell short, by reason.",
	    .problems = {{"no_execution_context", RUBY_STAT_NO_EC},
			 {"truncated", RUBY_STAT_TRUNCATED},
			 {"unreadable", RUBY_STAT_READ},
			 {"announcement_lost", RUBY_STAT_EVENTS_LOST}},
	    .names_help = NAMES_HELP("Ruby", "another iseq or method entry at that address now"),
	    .cached_help = "Ruby frame names held now.",
	    .version_metric = "version_without_table",
	    .version_help = "A Ruby version found without an offset table (the last one).",
	},
    [SERIES_HOTSPOT] =
	{
	    .runtime = "hotspot",
	    PIPELINE(hotspot, struct pipeline_hotspot_stats),
	    .processes_help = "HotSpot JVMs found, by outcome: walked, or whose VMStructs lack "
			      "what Java frames need (native frames).",
	    .unsupported = "unsupported",
	    .samples_help = "Samples of a JVM walked for Java frames.",
	    .samples = HOTSPOT_STAT_SAMPLES,
	    .frames_help = "Code-cache frames recorded, by kind: interpreted or compiled Java "
			   "frames, or stubs kept as native pcs.",
	    .frame_kinds = {{"interpreted", HOTSPOT_STAT_INTERPRETED},
			    {"compiled", HOTSPOT_STAT_COMPILED},
			    {"stub", HOTSPOT_STAT_STUB}},
	    .problems_help = "JVM walks that fell short, by reason: a code-cache pc in no blob, "
			     "a frame that could not be read ([unknown]), the stack full at a "
			     "Java frame, or a first-seen method not announced (named when its "
			     "window is).",
	    .problems = {{"no_blob", HOTSPOT_STAT_NO_BLOB},
			 {"read", HOTSPOT_STAT_READ},
			 {"truncated", HOTSPOT_STAT_TRUNCATED},
			 {"announcement_lost", HOTSPOT_STAT_EVENTS_LOST}},
	    .names_help = NAMES_HELP("Java", "another Method at that address now"),
	    .cached_help = "Java frame names held now.",
	    .code_help = "nmethods' PcDesc tables (where their inlined calls are) by result: "
			 "read, dropped as another nmethod's at a window's end (stale), or "
			 "replaced for room (evicted).",
	    .version_metric = "version_unsupported",
	    .version_help = "A JVM version found whose VMStructs lack what Java frames need (the "
			    "last one).",
	},
};

/* The walk counters and names in one of r's stats structs (as strchr, const in, not out). */
static uint64_t *walk_of(const struct runtime_series *r, const void *stats)
{
	return (uint64_t *)((const char *)stats + r->walk);
}

static struct runtime_stats *names_of(const struct runtime_series *r, const void *stats)
{
	return (struct runtime_stats *)((const char *)stats + r->names);
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
	dst->code_stale += src->code_stale;
	if (src->unsupported_version[0])
		memcpy(dst->unsupported_version, src->unsupported_version,
		       sizeof(dst->unsupported_version));
}

/* The open pipeline's figures so far. */
static void series_publish(struct agent_metrics *m, int id, const void *now)
{
	pthread_mutex_lock(&m->lock);
	memcpy((char *)&m->status + series[id].open, now, series[id].size);
	pthread_mutex_unlock(&m->lock);
}

/* The open pipeline closed: its counters join the totals (its cache level replaces theirs). */
static void series_closed(struct agent_metrics *m, int id)
{
	const struct runtime_series *r = &series[id];
	char *closed = (char *)&m->status + r->closed, *open = (char *)&m->status + r->open;

	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < r->n_walk; i++)
		walk_of(r, closed)[i] += walk_of(r, open)[i];
	add_runtime_names(names_of(r, closed), names_of(r, open));
	memset(open, 0, r->size);
	pthread_mutex_unlock(&m->lock);
}

void agent_metrics__python(struct agent_metrics *m, const struct pipeline_python_stats *now)
{
	series_publish(m, SERIES_PYTHON, now);
}

void agent_metrics__python_closed(struct agent_metrics *m)
{
	series_closed(m, SERIES_PYTHON);
}

void agent_metrics__v8(struct agent_metrics *m, const struct pipeline_v8_stats *now)
{
	series_publish(m, SERIES_V8, now);
}

void agent_metrics__v8_closed(struct agent_metrics *m)
{
	series_closed(m, SERIES_V8);
}

void agent_metrics__php(struct agent_metrics *m, const struct runtime_stats *now)
{
	series_publish(m, SERIES_PHP, now);
}

void agent_metrics__php_closed(struct agent_metrics *m)
{
	series_closed(m, SERIES_PHP);
}

void agent_metrics__ruby(struct agent_metrics *m, const struct pipeline_ruby_stats *now)
{
	series_publish(m, SERIES_RUBY, now);
}

void agent_metrics__ruby_closed(struct agent_metrics *m)
{
	series_closed(m, SERIES_RUBY);
}

void agent_metrics__hotspot(struct agent_metrics *m, const struct pipeline_hotspot_stats *now)
{
	series_publish(m, SERIES_HOTSPOT, now);
}

void agent_metrics__hotspot_closed(struct agent_metrics *m)
{
	series_closed(m, SERIES_HOTSPOT);
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
	prom_text__header(t, P "drain_cpu_seconds_total", "counter",
			  "The agent's own CPU time in its drains (reading the maps, naming the "
			  "stacks, the exited processes): the collecting thread's.");
	prom_text__sample(t, P "drain_cpu_seconds_total", "", w->drain_cpu_ns / 1e9);
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
	counter_by(
	    t, P "stack_tail_walks_total",
	    "User stack walks by the thread's cached stack tail: ended with it (hit), walked "
	    "to the end (miss), or a tail frame matched but a stack word had changed "
	    "(fallback: walked instead).",
	    "result",
	    (const struct labelled[]){
		{"hit", u->tail_hits}, {"miss", u->tail_misses}, {"fallback", u->tail_fallbacks}},
	    3);
	prom_text__counter(t, P "stack_tail_frames_total",
			   "Frames copied from cached stack tails instead of unwound.",
			   u->tail_frames);
	prom_text__counter(t, P "stack_tail_vm_frames_total",
			   "Of the frames copied from stack tails, the JS and Java ones.",
			   u->tail_vm_frames);
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
	prom_text__counter(t, P "symbol_tables_reread_total",
			   "Symbol tables parsed again after a drop over the memory cap.",
			   all.symbol_tables_reread);
	prom_text__counter(t, P "symbol_cache_over_cap_total",
			   "Windows that ended with the symbol tables they used over the memory "
			   "cap (a soft cap: none of them dropped).",
			   all.symbol_cap_exceeded);
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

/* An interpreter's walk counters, labelled, as counter_by takes them; the count. */
static size_t walk_labelled(const struct walk_label *labels, const uint64_t *walk,
			    struct labelled *ret)
{
	size_t n = 0;

	for (; n < SERIES_LABELS_MAX && labels[n].label; n++)
		ret[n] = (struct labelled){labels[n].label, walk[labels[n].stat]};
	return n;
}

/* Interpreter frames: what the walk recorded and missed, what naming read and dropped, and
 * the last interpreter version without an offset table (its processes keep native frames).
 * Closed pipelines' totals and the open one's, summed. */
static void render_series(struct prom_text *t, const struct agent_status *s, int id)
{
	const struct runtime_series *r = &series[id];
	const char *closed = (const char *)s + r->closed, *open = (const char *)s + r->open;
	struct runtime_stats n = *names_of(r, closed);
	uint64_t w[SERIES_WALK_MAX] = {0};
	struct labelled values[SERIES_LABELS_MAX];
	char name[96];

	for (size_t i = 0; i < r->n_walk; i++)
		w[i] = walk_of(r, closed)[i] + walk_of(r, open)[i];
	add_runtime_names(&n, names_of(r, open));
#define NAME(suffix) (snprintf(name, sizeof(name), P "%s_%s", r->runtime, suffix), name)
	counter_by(t, NAME("processes_total"), r->processes_help, "outcome",
		   (const struct labelled[]){{"attached", n.processes_attached},
					     {r->unsupported, n.unsupported},
					     {"attach_failed", n.attach_failed}},
		   3);
	if (r->samples_help)
		prom_text__counter(t, NAME("samples_total"), r->samples_help, w[r->samples]);
	if (r->frame_kinds[0].label)
		counter_by(t, NAME("frames_total"), r->frames_help, "kind", values,
			   walk_labelled(r->frame_kinds, w, values));
	else if (r->frames_help)
		prom_text__counter(t, NAME("frames_total"), r->frames_help, w[r->frames]);
	if (r->problems[0].label)
		counter_by(t, NAME("walk_problems_total"), r->problems_help, "reason", values,
			   walk_labelled(r->problems, w, values));
	counter_by(t, NAME("names_total"), r->names_help, "result",
		   (const struct labelled[]){{"read", n.names_read},
					     {"stale", n.names_stale},
					     {"unreadable", n.names_unreadable},
					     {"evicted", n.names_evicted}},
		   4);
	prom_text__gauge(t, NAME("names_cached"), r->cached_help, (double)n.names_cached);
	if (r->optimised_help) {
		prom_text__counter(t, NAME("optimised_frames_total"), r->optimised_help,
				   w[r->optimised]);
		counter_by(t, NAME("optimised_code_total"), r->code_help, "result",
			   (const struct labelled[]){{"read", n.code_read},
						     {"unreadable", n.code_unreadable},
						     {"evicted", n.code_evicted}},
			   3);
		prom_text__counter(t, NAME("inlined_frames_total"), r->inlined_help,
				   n.inlined_frames);
	} else if (r->code_help) { /* inlining tables without a walk counter of their own */
		counter_by(t, NAME("compiled_code_total"), r->code_help, "result",
			   (const struct labelled[]){{"read", n.code_read},
						     {"stale", n.code_stale},
						     {"evicted", n.code_evicted}},
			   3);
	}
	if (n.unsupported_version[0]) {
		prom_text__header(t, NAME(r->version_metric), "gauge", r->version_help);
		prom_text__appendf(t, "%s{version=\"%s\"} 1\n", name, n.unsupported_version);
	}
#undef NAME
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
	render_series(&t, s, SERIES_PYTHON);
	render_debuginfod(&t);
	for (int id = SERIES_V8; id < SERIES__COUNT; id++)
		render_series(&t, s, id);
	render_uploads(&t, s);
	render_measured(&t, s);
	return prom_text__finish(&t, ret, ret_len);
}
