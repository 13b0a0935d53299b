// SPDX-License-Identifier: Apache-2.0
/* Collector counters kept with relaxed atomics (any pool thread may bump them) and rendered
 * in the Prometheus text format. */
#include <stdatomic.h>
#include <stdlib.h>

#include "http/metrics.h"
#include "prom_text.h"
#include "store/backend_errors.h"
#include "store/group_commit.h"
#include "store/store_fault.h"

static const double latency_bounds_s[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
					  0.05,	  0.1,	 0.25,	 0.5,	1,    2.5};
#define N_BOUNDS (sizeof(latency_bounds_s) / sizeof(latency_bounds_s[0]))

static const char *const reason_names[REJECT_REASON_COUNT] = {
    [REJECT_BAD_REQUEST] = "bad_request",
    [REJECT_BAD_GZIP] = "bad_gzip",
    [REJECT_BAD_PPROF] = "bad_pprof",
    [REJECT_UNAUTHORIZED] = "unauthorized",
    [REJECT_FORBIDDEN] = "forbidden",
    [REJECT_BODY_TOO_LARGE] = "body_too_large",
    [REJECT_INFLATED_TOO_LARGE] = "inflated_too_large",
    [REJECT_CONTENT_TYPE] = "unsupported_content_type",
    [REJECT_NO_SAMPLE_TYPE] = "no_fitting_sample_type",
    [REJECT_STORE_ERROR] = "store_error",
    [REJECT_OVERLOADED] = "overloaded",
    [REJECT_TOO_MANY_SAMPLES] = "too_many_samples",
    [REJECT_TOO_MANY_STACKS] = "too_many_stacks",
    [REJECT_TOO_MUCH_MEMORY] = "too_much_memory",
    [REJECT_DECODE_MEMORY_FULL] = "decode_memory_full",
};

struct metrics {
	atomic_uint_fast64_t requests;
	atomic_uint_fast64_t uploads;
	atomic_uint_fast64_t duplicates;
	atomic_uint_fast64_t bytes;
	atomic_uint_fast64_t stack_values;
	atomic_uint_fast64_t rejects[REJECT_REASON_COUNT];
	atomic_uint_fast64_t latency_buckets[N_BOUNDS + 1]; /* last = +Inf */
	atomic_uint_fast64_t latency_sum_us;
	atomic_uint_fast64_t lines_dropped[3]; /* by enum line_drop (store.h); [0] unused */
};

struct metrics *metrics__new(void)
{
	return calloc(1, sizeof(struct metrics));
}

void metrics__free(struct metrics *m)
{
	free(m);
}

void metrics__upload_accepted(struct metrics *m, size_t body_bytes, size_t stack_values,
			      double latency_s)
{
	size_t b = 0;

	atomic_fetch_add_explicit(&m->uploads, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&m->bytes, body_bytes, memory_order_relaxed);
	atomic_fetch_add_explicit(&m->stack_values, stack_values, memory_order_relaxed);
	while (b < N_BOUNDS && latency_s > latency_bounds_s[b])
		b++;
	atomic_fetch_add_explicit(&m->latency_buckets[b], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&m->latency_sum_us, (uint64_t)(latency_s * 1e6),
				  memory_order_relaxed);
}

void metrics__upload_duplicate(struct metrics *m)
{
	atomic_fetch_add_explicit(&m->duplicates, 1, memory_order_relaxed);
}

void metrics__lines_dropped(struct metrics *m, int bound, uint64_t positions)
{
	if (bound > 0 && bound < 3 && positions)
		atomic_fetch_add_explicit(&m->lines_dropped[bound], positions,
					  memory_order_relaxed);
}

void metrics__reject(struct metrics *m, enum reject_reason reason)
{
	if (reason < REJECT_REASON_COUNT)
		atomic_fetch_add_explicit(&m->rejects[reason], 1, memory_order_relaxed);
}

void metrics__request(struct metrics *m)
{
	atomic_fetch_add_explicit(&m->requests, 1, memory_order_relaxed);
}

static uint64_t load(atomic_uint_fast64_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

static void render_latency(struct metrics *m, struct prom_text *t)
{
	uint64_t cumulative = 0;

	prom_text__header(t, "roottrace_ingest_latency_seconds", "histogram",
			  "Time from a complete upload body to its acknowledgement (decode, merge, "
			  "commit).");
	for (size_t b = 0; b < N_BOUNDS; b++) {
		cumulative += load(&m->latency_buckets[b]);
		prom_text__appendf(t, "roottrace_ingest_latency_seconds_bucket{le=\"%g\"} %llu\n",
				   latency_bounds_s[b], (unsigned long long)cumulative);
	}
	cumulative += load(&m->latency_buckets[N_BOUNDS]);
	prom_text__appendf(t, "roottrace_ingest_latency_seconds_bucket{le=\"+Inf\"} %llu\n",
			   (unsigned long long)cumulative);
	prom_text__appendf(t, "roottrace_ingest_latency_seconds_sum %.6f\n",
			   load(&m->latency_sum_us) / 1e6);
	prom_text__appendf(t, "roottrace_ingest_latency_seconds_count %llu\n",
			   (unsigned long long)cumulative);
}

/* Uploads per group commit (one transaction, or one ClickHouse INSERT), as a histogram. */
static void render_batches(const struct store_metrics *stores, struct prom_text *t)
{
	const struct gc_stats *s = stores->ingest;
	uint64_t cumulative = 0;

	prom_text__header(t, "roottrace_ingest_batch_uploads", "histogram",
			  "Uploads written by one store commit (group commit), by backend.");
	for (int b = 0; b < GC_SIZE_BUCKETS - 1; b++) {
		cumulative += s->sizes[b];
		prom_text__appendf(
		    t,
		    "roottrace_ingest_batch_uploads_bucket{backend=\"%s\",le=\"%d\"} "
		    "%llu\n",
		    stores->ingest_backend, 1 << b, (unsigned long long)cumulative);
	}
	prom_text__appendf(
	    t, "roottrace_ingest_batch_uploads_bucket{backend=\"%s\",le=\"+Inf\"} %llu\n",
	    stores->ingest_backend, (unsigned long long)s->commits);
	prom_text__appendf(t, "roottrace_ingest_batch_uploads_sum{backend=\"%s\"} %llu\n",
			   stores->ingest_backend, (unsigned long long)s->items);
	prom_text__appendf(t, "roottrace_ingest_batch_uploads_count{backend=\"%s\"} %llu\n",
			   stores->ingest_backend, (unsigned long long)s->commits);
	prom_text__header(t, "roottrace_ingest_commit_failures_total", "counter",
			  "Uploads whose store commit failed (answered 500 or 503), by backend.");
	prom_text__appendf(t, "roottrace_ingest_commit_failures_total{backend=\"%s\"} %llu\n",
			   stores->ingest_backend, (unsigned long long)s->failed);
	prom_text__header(
	    t, "roottrace_ingest_linger_expired_total", "counter",
	    "Commits whose leader waited the whole linger for more uploads, by backend.");
	prom_text__appendf(t, "roottrace_ingest_linger_expired_total{backend=\"%s\"} %llu\n",
			   stores->ingest_backend, (unsigned long long)s->lingers_expired);
}

/* One counter per database server in use. */
static void render_per_server(const struct store_metrics *stores, struct prom_text *t,
			      const char *name, const char *help,
			      uint64_t (*get)(enum backend_server b))
{
	prom_text__header(t, name, "counter", help);
	for (int b = 0; b < BACKEND_SERVER_COUNT; b++)
		if (b == BACKEND_POSTGRESQL ? stores->postgresql : stores->clickhouse)
			prom_text__appendf(t, "%s{backend=\"%s\"} %llu\n", name,
					   backend_server_name(b), (unsigned long long)get(b));
}

static void render_backend_errors(const struct store_metrics *stores, struct prom_text *t)
{
	if (!stores->postgresql && !stores->clickhouse)
		return; /* SQLite: no server to ask or fail */
	render_per_server(stores, t, "roottrace_backend_requests_total",
			  "Requests sent to a database server (statements to PostgreSQL, HTTP "
			  "requests to ClickHouse), by server.",
			  backend_requests__get);
	render_per_server(stores, t, "roottrace_backend_connections_total",
			  "Connections opened to a database server (PostgreSQL's pool, ClickHouse "
			  "requests that found no kept-alive connection), by server.",
			  backend_connections__get);
	render_per_server(stores, t, "roottrace_backend_errors_total",
			  "Requests to a database server that failed (no connection, timeout, "
			  "error answer), by server.",
			  backend_errors__get);
	if (stores->clickhouse) {
		prom_text__header(
		    t, "roottrace_store_series_collisions_total", "counter",
		    "Upload groups refused because a series' 64-bit id in the ClickHouse "
		    "series dictionary already names other strings (the log names both).");
		prom_text__appendf(t, "roottrace_store_series_collisions_total %llu\n",
				   (unsigned long long)store_fault__collisions());
	}
}

/* Whether backend b serves one of the stores. */
static bool backend_used(const struct store_metrics *stores, enum store_backend b)
{
	return b == STORE_BACKEND_POSTGRESQL   ? stores->postgresql
	       : b == STORE_BACKEND_CLICKHOUSE ? stores->clickhouse
					       : !stores->postgresql || !stores->clickhouse;
}

/* Failed store requests by backend and cause, and the fault each backend is in now. */
static void render_store_faults(const struct store_metrics *stores, struct prom_text *t)
{
	struct store_fault f;

	prom_text__header(t, "roottrace_store_failures_total", "counter",
			  "Store requests that failed, by backend and cause (disk_full, read_only, "
			  "refused, unreachable, io_error).");
	for (int b = 0; b < STORE_BACKEND__COUNT; b++)
		for (int c = 0; backend_used(stores, b) && c < STORE_FAULT__COUNT; c++)
			prom_text__appendf(t,
					   "roottrace_store_failures_total{backend=\"%s\","
					   "cause=\"%s\"} %llu\n",
					   store_backend_name(b), store_fault_cause_name(c),
					   (unsigned long long)store_fault__count(b, c));
	prom_text__header(t, "roottrace_store_fault", "gauge",
			  "1 for the cause of the fault a backend is in now (its last request "
			  "failed and none since showed the cause gone), else 0.");
	for (int b = 0; b < STORE_BACKEND__COUNT; b++) {
		bool faulty = backend_used(stores, b) && store_fault__get(b, &f);

		for (int c = 0; backend_used(stores, b) && c < STORE_FAULT__COUNT; c++)
			prom_text__appendf(t,
					   "roottrace_store_fault{backend=\"%s\",cause=\"%s\"} "
					   "%d\n",
					   store_backend_name(b), store_fault_cause_name(c),
					   faulty && (int)f.cause == c);
	}
}

int metrics__render(struct metrics *m, const struct store_metrics *stores, char **ret,
		    size_t *ret_len)
{
	struct prom_text t = {0};

	prom_text__counter(&t, "roottrace_http_requests_total", "HTTP requests received.",
			   load(&m->requests));
	prom_text__counter(&t, "roottrace_uploads_accepted_total",
			   "Profiles stored and acknowledged.", load(&m->uploads));
	prom_text__counter(&t, "roottrace_uploads_duplicate_total",
			   "Uploads whose upload_id was already stored: answered 200, not merged "
			   "again.",
			   load(&m->duplicates));
	prom_text__counter(&t, "roottrace_upload_bytes_accepted_total",
			   "Request body bytes of accepted uploads (as sent, before inflating).",
			   load(&m->bytes));
	prom_text__counter(&t, "roottrace_stack_values_accepted_total",
			   "Distinct stacks merged into rollups, summed over uploads.",
			   load(&m->stack_values));
	prom_text__header(
	    &t, "roottrace_line_positions_dropped_total", "counter",
	    "Source positions (file:line or build-id+offset) of leaf functions folded "
	    "into a dropped value by a line detail bound: per function or per series.");
	prom_text__sample(&t, "roottrace_line_positions_dropped_total", "bound=\"function\"",
			  (double)load(&m->lines_dropped[1]));
	prom_text__sample(&t, "roottrace_line_positions_dropped_total", "bound=\"series\"",
			  (double)load(&m->lines_dropped[2]));
	prom_text__header(&t, "roottrace_rejects_total", "counter", "Requests refused, by reason.");
	for (int r = 0; r < REJECT_REASON_COUNT; r++)
		prom_text__appendf(&t, "roottrace_rejects_total{reason=\"%s\"} %llu\n",
				   reason_names[r], (unsigned long long)load(&m->rejects[r]));
	render_latency(m, &t);
	render_batches(stores, &t);
	render_backend_errors(stores, &t);
	render_store_faults(stores, &t);
	prom_text__header(
	    &t, "roottrace_decode_memory_bytes", "gauge",
	    "Memory reserved by the uploads being decoded now (--max-decode-memory).");
	prom_text__appendf(&t, "roottrace_decode_memory_bytes %zu\n", stores->decode_bytes);
	prom_text__header(&t, "roottrace_decode_memory_limit_bytes", "gauge",
			  "--max-decode-memory: what all uploads decoding at once may hold.");
	prom_text__appendf(&t, "roottrace_decode_memory_limit_bytes %zu\n", stores->decode_limit);
	if (stores->store_bytes >= 0) {
		prom_text__header(&t, "roottrace_store_size_bytes", "gauge",
				  "Profile store bytes on disk (SQLite: the file plus its WAL).");
		prom_text__appendf(&t, "roottrace_store_size_bytes %lld\n",
				   (long long)stores->store_bytes);
	}
	return prom_text__finish(&t, ret, ret_len);
}
