/* SPDX-License-Identifier: Apache-2.0 */
/* The collector's two storage interfaces. Handlers see only these structs and function
 * tables; backends (collector/sqlite/ today, PostgreSQL/ClickHouse later) fill them in.
 * Every function returns 0 or a negative errno; -ENOENT for "no such row". */
#ifndef ROOTTRACE_STORE_H
#define ROOTTRACE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STORE_NAME_MAX 128 /* environment, service, deployment, token names */
#define BUCKET_SECONDS 300 /* five-minute rollup buckets */
#define UPLOAD_ID_MAX 256  /* an upload id's bytes, with its NUL */
/* Accepted upload ids are remembered this long (or less, when retention is shorter). */
#define UPLOAD_ID_TTL_S (7 * 86400)

/* ===================================== control plane ===================================== */

enum token_kind { TOKEN_KIND_COLLECTOR = 1, TOKEN_KIND_USER = 2 };
enum token_role {
	TOKEN_ROLE_NONE = 0,
	TOKEN_ROLE_VIEWER = 1,
	TOKEN_ROLE_ENGINEER = 2,
	TOKEN_ROLE_ADMIN = 3
};

struct token_record {
	int64_t id;
	char name[STORE_NAME_MAX];
	int64_t environment_id;
	char environment[STORE_NAME_MAX];
	enum token_kind kind;
	enum token_role role; /* TOKEN_ROLE_NONE for collector tokens */
	bool revoked;
	int64_t created_at; /* unix seconds */
	uint8_t hash[32];   /* SHA-256 of the secret; the secret itself is never stored */
};

/* Settings of an environment (service == "") or one service. has_* false = inherit. */
struct settings_record {
	char environment[STORE_NAME_MAX];
	char service[STORE_NAME_MAX];
	bool has_enabled, has_sample_rate_hz, has_upload_interval_s, has_poll_interval_s;
	bool has_offcpu_enabled;
	bool enabled;
	bool offcpu_enabled; /* the node agent records off-CPU time of the enabled services */
	int sample_rate_hz;
	int upload_interval_s;
	int poll_interval_s;
};

struct audit_record {
	int64_t id;
	int64_t time; /* unix seconds */
	int64_t token_id;
	char token_name[STORE_NAME_MAX];
	char environment[STORE_NAME_MAX];
	char service[STORE_NAME_MAX]; /* "" for the environment itself */
	char *before_json;	      /* malloc'd by list functions; freed by audit_records__free */
	char *after_json;
};

struct deployment_record {
	int64_t id;
	char environment[STORE_NAME_MAX];
	char service[STORE_NAME_MAX];
	char version[STORE_NAME_MAX];
	int64_t time; /* unix seconds */
};

/* The unwinder's figures of an agent's window (docs/api.md), each as X(id, name, kind): name is
 * the upload's query parameter, the agents table's column and the services answer's key; kind
 * COUNT is a non-negative integer, MS non-negative milliseconds. */
#define UNWIND_FIGURES(X)                                                                          \
	X(TABLES, "unwind_tables", COUNT)                                                          \
	X(FP, "unwind_fp", COUNT)                                                                  \
	X(MIXED, "unwind_mixed", COUNT)                                                            \
	X(NOT_LOADED, "unwind_not_loaded", COUNT)                                                  \
	X(CLEAN, "unwind_clean", COUNT)                                                            \
	X(FP_END, "unwind_fp_end", COUNT)                                                          \
	X(EARLY, "unwind_early", COUNT)                                                            \
	X(EARLY_NO_MAPPING, "unwind_early_no_mapping", COUNT)                                      \
	X(EARLY_CANNOT, "unwind_early_cannot", COUNT)                                              \
	X(EARLY_BAD_CFA, "unwind_early_bad_cfa", COUNT)                                            \
	X(EARLY_READ, "unwind_early_read", COUNT)                                                  \
	X(TRUNCATED, "unwind_truncated", COUNT)                                                    \
	X(ROWS, "unwind_rows", COUNT)                                                              \
	X(ROW_BYTES, "unwind_row_bytes", COUNT)                                                    \
	X(TABLES_BUILT, "unwind_tables_built", COUNT)                                              \
	X(BUILD_MS, "unwind_build_ms", MS)

#define UNWIND_FIGURE_ENUM(id, name, kind) UNWIND_FIGURE_##id,
enum unwind_figure { UNWIND_FIGURES(UNWIND_FIGURE_ENUM) UNWIND_FIGURE__COUNT };
#undef UNWIND_FIGURE_ENUM

enum unwind_figure_kind { UNWIND_FIGURE_COUNT, UNWIND_FIGURE_MS };

/* Each figure's name and kind, indexed by enum unwind_figure. */
extern const char *const unwind_figure_names[UNWIND_FIGURE__COUNT];
extern const enum unwind_figure_kind unwind_figure_kinds[UNWIND_FIGURE__COUNT];

/* One agent's self-report, sent with an upload; the latest per (agent, service) is kept. */
struct agent_report {
	char environment[STORE_NAME_MAX];
	char agent_id[STORE_NAME_MAX];
	char node[STORE_NAME_MAX];
	char service[STORE_NAME_MAX];
	char version[STORE_NAME_MAX];
	int64_t reported_at; /* unix seconds */
	double window_s;
	double cpu_s; /* agent user+system CPU seconds over the window */
	double bpf_s; /* BPF program run time over the window */
	int64_t lost_samples;
	int64_t unknown_frames;
	int64_t processes;
	/* sent[f] false: the agent did not send figure f (older agent or older report); its
	 * value is then meaningless and shown as null, never 0. */
	bool unwind_sent[UNWIND_FIGURE__COUNT];
	double unwind[UNWIND_FIGURE__COUNT]; /* counts are whole numbers */
	/* enum agent_figure bits of the figures above that the report carried. One left out was
	 * not measured: its value is meaningless, stored as NULL and shown as null, never 0. */
	unsigned int sent;
};

/* The self-report's own figures (the unwinder's have unwind_sent), as agent_report.sent bits,
 * in the order of their columns. */
enum agent_figure {
	AGENT_FIGURE_WINDOW_S = 1u << 0,
	AGENT_FIGURE_CPU_S = 1u << 1,
	AGENT_FIGURE_BPF_S = 1u << 2,
	AGENT_FIGURE_LOST_SAMPLES = 1u << 3,
	AGENT_FIGURE_UNKNOWN_FRAMES = 1u << 4,
	AGENT_FIGURE_PROCESSES = 1u << 5,
	AGENT_FIGURES__COUNT = 6
};

struct cp_store;

struct cp_store_ops {
	void (*close)(struct cp_store *s);

	int (*environment_create)(struct cp_store *s, const char *name, int64_t *ret_id);
	int (*environment_get)(struct cp_store *s, const char *name, int64_t *ret_id);

	int (*token_create)(struct cp_store *s, const struct token_record *t, int64_t *ret_id);
	int (*token_find_by_hash)(struct cp_store *s, const uint8_t hash[32],
				  struct token_record *ret);
	int (*token_list)(struct cp_store *s, struct token_record **ret, size_t *ret_n);
	int (*token_revoke)(struct cp_store *s, int64_t id);

	/* service NULL or "" = the environment's own row. -ENOENT when absent. */
	int (*settings_get)(struct cp_store *s, const char *environment, const char *service,
			    struct settings_record *ret);
	int (*settings_list)(struct cp_store *s, const char *environment,
			     struct settings_record **ret, size_t *ret_n);
	/* Writes the settings and its audit event in one transaction. */
	int (*settings_put)(struct cp_store *s, const struct settings_record *r,
			    const struct audit_record *a);
	int (*audit_list)(struct cp_store *s, const char *environment, int64_t since, size_t limit,
			  struct audit_record **ret, size_t *ret_n);

	int (*deployment_add)(struct cp_store *s, const struct deployment_record *d,
			      int64_t *ret_id);
	int (*deployment_list)(struct cp_store *s, const char *environment, const char *service,
			       int64_t start, int64_t end, struct deployment_record **ret,
			       size_t *ret_n);

	int (*agent_report_put)(struct cp_store *s, const struct agent_report *r);
	int (*agent_report_list)(struct cp_store *s, const char *environment,
				 struct agent_report **ret, size_t *ret_n);
};

struct cp_store {
	const struct cp_store_ops *ops;
};

void audit_records__free(struct audit_record *a, size_t n);

/* ===================================== profile store ===================================== */

/* One stack with its value for one bucket. Its frames, root first, are the indexes of their
 * function names in the batch's `names`, varint-encoded (about a byte and a half a frame
 * where a pointer would take eight: a large upload's stacks hold millions of frames);
 * stack_frame_next() reads them. */
struct stack_value {
	const uint8_t *frames;
	uint32_t frames_len; /* bytes */
	uint32_t n_frames;
	int64_t value;
};

/* The names index of the frame at *pos in a stack_value's frames; *pos moves past it. */
static inline uint32_t stack_frame_next(const uint8_t **pos)
{
	const uint8_t *p = *pos;
	uint32_t v = 0;

	for (int shift = 0;; shift += 7) {
		v |= (uint32_t)(*p & 0x7f) << shift;
		if (!(*p++ & 0x80))
			break;
	}
	*pos = p;
	return v;
}

/* ====================================== line detail ====================================== */

/* Self time inside one leaf function by source position (issue 32): never part of a stack's
 * identity, a drill-down beside the rollups, with their series, buckets and retention. */
enum line_kind {
	LINE_KIND_FILE = 0,    /* source: the file name; position: the line */
	LINE_KIND_ADDRESS = 1, /* source: build-id (hex) LINE_MODULE_SEP module; position: offset */
	LINE_KIND_DROPPED = 2, /* source: ""; position: enum line_drop, the bound that dropped it */
	LINE_KINDS
};

enum line_drop { LINE_DROP_FUNCTION = 1, LINE_DROP_SERIES = 2 };

/* An address's source is its build-id, then this and its module's file name (basename; none
 * when the upload named no file for the mapping): the answer names the module it is in. */
#define LINE_MODULE_SEP '\n'

/* The source of a line whose function named no file. */
#define LINE_UNKNOWN_FILE "[unknown file]"

/* The bounds: positions kept per leaf function, and in all, per series and bucket (and per
 * upload). Past them the smallest positions are folded into the function's dropped value. */
#define LINE_MAX_PER_FUNCTION 256
#define LINE_MAX_PER_SERIES 8192

/* One leaf function's value at one position, in an upload's batch. */
struct line_value {
	uint32_t function; /* index into the batch's names */
	uint32_t kind;	   /* enum line_kind */
	const char *source;
	uint64_t position;
	int64_t value;
};

/* A function's positions summed over a window (the lines route's read). */
struct line_row {
	uint32_t kind; /* enum line_kind */
	char *source;  /* malloc'd */
	uint64_t position;
	int64_t value;
};

struct line_window {
	struct line_row *rows;
	size_t n;
	int64_t uploads; /* uploads that landed in the window's buckets (heap averages by this) */
};

void line_window__release(struct line_window *w);

/* One upload, already decoded and reduced to the chosen sample type. */
struct profile_batch {
	const char *environment;
	const char *service;
	const char *deployment;	  /* "" when unknown */
	const char *profile_type; /* cpu, wall, heap, alloc, lock */
	int64_t bucket_start;	  /* unix seconds, a multiple of BUCKET_SECONDS */
	int64_t period;		  /* the profile's nominal period, for export */
	const struct stack_value *stacks;
	size_t n_stacks;
	const char *const *names; /* the function names the stacks' frames index */
	size_t n_names;
	/* NULL, or the sender's id of this upload: the first batch with an (environment,
	 * upload_id) is merged and the id remembered in the same transaction; a later one
	 * (a retry whose answer was lost) is not merged again. */
	const char *upload_id;
	bool *ret_duplicate; /* NULL, or set by ingest: true when upload_id was already stored */
	/* The node (host) the upload came from, "" or NULL when unknown. Part of the series key:
	 * a service on one node keeps one series (no extra rollup rows); one on N nodes has N. */
	const char *node;
	/* The leaf functions' values by position (none: the upload carried no positions). */
	const struct line_value *lines;
	size_t n_lines;
	/* NULL, or set by ingest: positions the store's bounds folded into dropped values when
	 * merging this batch into its bucket, by enum line_drop (index 0 unused). */
	uint64_t *ret_lines_dropped;
};

struct window_query {
	const char *environment;
	const char *service;
	const char *profile_type;
	const char *deployment; /* NULL = every deployment */
	int64_t start, end;	/* unix seconds, [start, end) */
	const char *node;	/* NULL = every node ("" = uploads that named none) */
};

/* A window merged across buckets: distinct stacks with summed values. */
struct merged_stack {
	char **frames; /* root first */
	size_t n_frames;
	int64_t value;
};

struct merged_window {
	struct merged_stack *stacks;
	size_t n_stacks;
	int64_t uploads; /* uploads that landed in the window's buckets (heap averages by this) */
	int64_t period;	 /* the last seen nominal period, 0 if unknown */
};

struct service_summary {
	char service[STORE_NAME_MAX];
	char profile_type[16];
	int64_t last_upload; /* unix seconds */
	int64_t uploads;
};

/* A service's uploads in one five-minute bucket (coverage history). */
struct service_bucket {
	char service[STORE_NAME_MAX];
	int64_t bucket;	     /* unix seconds */
	int64_t last_upload; /* the bucket's newest upload, unix seconds */
};

/* Uploads of one service from one node (host comparison). */
struct service_node {
	char service[STORE_NAME_MAX];
	char node[STORE_NAME_MAX]; /* "" for uploads that named no node */
	int64_t last_upload;	   /* unix seconds */
	int64_t uploads;
};

struct profile_store;
struct gc_stats;

struct profile_store_ops {
	void (*close)(struct profile_store *s);
	/* Merges the batches into their rollups (stacks dictionary first) in one transaction;
	 * returns only after it committed. -EAGAIN (nothing written) when the backend's write
	 * queue is full: the caller should answer "retry later". */
	int (*ingest)(struct profile_store *s, const struct profile_batch *batches, size_t n);
	int (*merge_window)(struct profile_store *s, const struct window_query *q,
			    struct merged_window *ret);
	int (*services)(struct profile_store *s, const char *environment,
			struct service_summary **ret, size_t *ret_n);
	/* (service, bucket) pairs with uploads in buckets [start, end), by bucket then service. */
	int (*service_buckets)(struct profile_store *s, const char *environment, int64_t start,
			       int64_t end, struct service_bucket **ret, size_t *ret_n);
	/* The nodes each service's uploads came from, by service then node. */
	int (*service_nodes)(struct profile_store *s, const char *environment,
			     struct service_node **ret, size_t *ret_n);
	/* Deletes rollups whose bucket ends before cutoff, and upload ids accepted before cutoff
	 * or more than UPLOAD_ID_TTL_S ago; settings and audit are untouched. ret_deleted counts
	 * rollup rows. */
	int (*retention)(struct profile_store *s, int64_t cutoff, int64_t *ret_deleted);
	int (*size_bytes)(struct profile_store *s, int64_t *ret_bytes);
	/* The ingest group commit's counters (group sizes, failed uploads) and the backend's
	 * name ("sqlite", "clickhouse"). */
	void (*ingest_stats)(struct profile_store *s, struct gc_stats *ret,
			     const char **ret_backend);
	/* The positions of one leaf function over the window q, summed (NULL: the backend keeps
	 * no line detail). */
	int (*lines_window)(struct profile_store *s, const struct window_query *q,
			    const char *function, struct line_window *ret);
};

struct profile_store {
	const struct profile_store_ops *ops;
};

void merged_window__release(struct merged_window *w);

/* ====================================== span links ======================================= */

/* Samples that carried a span context (pprof labels span_id / trace_id, Datadog's "span id",
 * OTLP links), kept apart from the rollups so that span ids never become series keys, and with
 * their own, shorter retention. */
#define DEFAULT_LINK_RETENTION_HOURS 72
#define TRACE_ID_HEX 33 /* 32 hex digits and the NUL; "" when the sender gave none */
#define SPAN_ID_HEX 17	/* 16 hex digits and the NUL */

struct span_link {
	int64_t time; /* unix seconds */
	const char *service;
	const char *profile_type;
	const char *const *frames; /* root first */
	size_t n_frames;
	int64_t value;	 /* in the profile type's unit */
	int64_t samples; /* samples (timestamps) behind value */
	char trace_id[TRACE_ID_HEX];
	char span_id[SPAN_ID_HEX];
	char root_span_id[SPAN_ID_HEX]; /* the local root span it runs under; "" when unknown */
	/* The span's parent (pprof label parent_span_id); "" when unknown, as from every
	 * profiler known today: include_children then cannot walk below a span (span_tree.h). */
	char parent_span_id[SPAN_ID_HEX];
	const char *span_name; /* "" when not given (Datadog's trace endpoint, span_name label) */
	const char *node; /* the uploading node (host); "" or NULL when the upload named none */
};

/* Links of a trace_id (and span_id), or of a span_id, or else of a span_name (an endpoint's
 * spans, for a baseline); NULL = not a filter. [start, end) unix seconds. */
struct span_link_query {
	const char *environment;
	const char *service;	  /* NULL = every service */
	const char *profile_type; /* NULL = every type */
	const char *trace_id;
	const char *span_id;
	const char *span_name;
	/* spans() with span_id: also the spans whose local root span is span_id (Datadog's "local
	 * root span id", Pyroscope's profile_id), for query/span_tree.c's walk. */
	bool include_children;
	/* merge() with span_id: NULL = that span's links; else the links of these n spans (the
	 * span and its descendants, as query/span_tree.c resolved them) instead. */
	const char (*span_ids)[SPAN_ID_HEX];
	size_t n_span_ids;
	const char *node; /* NULL = every node ("" = links of uploads that named none) */
	int64_t start, end;
};

/* One span of a trace, summed over its links of one service and profile type. */
struct span_summary {
	char span_id[SPAN_ID_HEX];
	/* Any of the span's links' trace, parent and local root ids, "" when none named one. */
	char trace_id[TRACE_ID_HEX];
	char parent_span_id[SPAN_ID_HEX];
	char root_span_id[SPAN_ID_HEX];
	char span_name[STORE_NAME_MAX];
	char service[STORE_NAME_MAX];
	char profile_type[16];
	int64_t samples, value;
	int64_t first, last; /* unix seconds */
};

struct link_store;

struct link_store_ops {
	void (*close)(struct link_store *s);
	/* Stores the links of one upload in one transaction. */
	int (*add)(struct link_store *s, const char *environment, const struct span_link *links,
		   size_t n);
	/* The matching links' stacks, summed (ret->uploads and ->period are 0). */
	int (*merge)(struct link_store *s, const struct span_link_query *q,
		     struct merged_window *ret);
	/* The spans of q->trace_id, or else the span q->span_id (with q->include_children, and
	 * the spans under it as their local root): one row per (span, service, type). */
	int (*spans)(struct link_store *s, const struct span_link_query *q,
		     struct span_summary **ret, size_t *ret_n);
	/* The spans of q->service and q->profile_type (both required) with links in [q->start,
	 * q->end) (and q->node): one row per span, its value inside the window, largest first,
	 * at most limit rows. */
	int (*slowest)(struct link_store *s, const struct span_link_query *q, size_t limit,
		       struct span_summary **ret, size_t *ret_n);
	/* Deletes links older than cutoff; ret_deleted counts them. */
	int (*retention)(struct link_store *s, int64_t cutoff, int64_t *ret_deleted);
};

struct link_store {
	const struct link_store_ops *ops;
};

#endif
