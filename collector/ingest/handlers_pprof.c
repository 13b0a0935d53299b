// SPDX-License-Identifier: Apache-2.0
/* POST /api/apm/profiles (collector token): one pprof, gzipped or not, reduced to root-first
 * function stacks of the sample type that fits the profile type, merged into its five-minute
 * rollup, and acknowledged only after the store committed; a repeated upload_id merges once.
 * ingest_pprof() is that path for every upload route (ingest.h). */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "collector.h"
#include "gzip.h"
#include "http/auth.h"
#include "http/respond.h"
#include "http/validate.h"
#include "ingest/handlers.h"
#include "ingest/ingest.h"
#include "ingest/line_agg.h"
#include "ingest/links_ack.h"
#include "ingest/sample_type.h"
#include "ingest/stack_agg.h"
#include "pprof.h"
#include "store/store_fault.h"

#define INGEST_RETRY_AFTER_S 1

static const struct type_fit fits[] = {
    {"cpu", "cpu", "nanoseconds"},    {"wall", "wall", "nanoseconds"},
    {"heap", "inuse_space", "bytes"}, {"alloc", "alloc_space", "bytes"},
    {"lock", "delay", "nanoseconds"}, {"offcpu", "offcpu", "nanoseconds"},
};

static const char *const accepted_content_types[] = {
    "application/octet-stream",	       "application/x-protobuf", "application/protobuf",
    "application/vnd.google.protobuf", "application/gzip",	 "application/x-gzip",
};

static double seconds_since(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) + (now.tv_nsec - start->tv_nsec) / 1e9;
}

static int reject(const struct request *req, struct response *resp, enum reject_reason reason,
		  int status, const char *error, const char *detail)
{
	metrics__reject(req->collector->metrics, reason);
	return response__error(resp, status, error, "%s", detail);
}

int ingest_reject(const struct request *req, struct response *resp, enum reject_reason reason,
		  int status, const char *error, const char *detail)
{
	return reject(req, resp, reason, status, error, detail);
}

bool ingest_pprof_content_type_ok(const char *ct)
{
	size_t len;

	if (!ct || !*ct)
		return true;
	len = strcspn(ct, "; ");
	for (size_t i = 0; i < sizeof(accepted_content_types) / sizeof(accepted_content_types[0]);
	     i++)
		if (strlen(accepted_content_types[i]) == len &&
		    strncasecmp(ct, accepted_content_types[i], len) == 0)
			return true;
	return false;
}

/* --------------------------------------------------------------- agent self-report ---- */

/* X-RootTrace-<Name> header, else the query parameter of the same meaning. */
static const char *report_field(const struct request *req, const char *header, const char *query)
{
	const char *v = request__header(req, header);

	return v ? v : request__query(req, query);
}

static int parse_double(const char *s, double *ret)
{
	char *end;

	if (!s)
		return 0;
	errno = 0;
	*ret = strtod(s, &end);
	return errno || end == s || *end || !isfinite(*ret) || *ret < 0 ? -EINVAL : 0;
}

static int parse_count(const char *s, int64_t *ret)
{
	char *end;

	if (!s)
		return 0;
	errno = 0;
	*ret = strtoll(s, &end, 10);
	return errno || end == s || *end || *ret < 0 ? -EINVAL : 0;
}

static int copy_name(const char *what, const char *value, char *dst, size_t len, char *why,
		     size_t why_len)
{
	if (!value)
		return 0;
	if (validate_name(what, value, why, why_len))
		return -EINVAL;
	snprintf(dst, len, "%s", value);
	return 0;
}

/* The unwind_* query parameters (docs/api.md); one the agent left out stays unsent. */
static int parse_unwind_figures(const struct request *req, struct agent_report *r, char *why,
				size_t why_len)
{
	for (int f = 0; f < UNWIND_FIGURE__COUNT; f++) {
		const char *name = unwind_figure_names[f];
		const char *value = request__query(req, name);
		bool is_count = unwind_figure_kinds[f] == UNWIND_FIGURE_COUNT;
		int64_t count = 0;
		int err;

		if (!value)
			continue;
		err = is_count ? parse_count(value, &count) : parse_double(value, &r->unwind[f]);
		if (err) {
			snprintf(why, why_len, "%s must be a non-negative %s", name,
				 is_count ? "integer" : "number of milliseconds");
			return -EINVAL;
		}
		if (is_count)
			r->unwind[f] = (double)count;
		r->unwind_sent[f] = true;
	}
	return 0;
}

static int parse_report(const struct request *req, struct upload *u, char *why, size_t why_len)
{
	struct agent_report *r = &u->report;
	const char *agent_id = report_field(req, "X-RootTrace-Agent-Id", "agent_id");
	static const struct report_figure {
		const char *header, *query;
		size_t offset;
		unsigned int bit;
		bool is_count;
	} figures[] = {
	    {"X-RootTrace-Window-Seconds", "window_s", offsetof(struct agent_report, window_s),
	     AGENT_FIGURE_WINDOW_S, false},
	    {"X-RootTrace-Cpu-Seconds", "cpu_s", offsetof(struct agent_report, cpu_s),
	     AGENT_FIGURE_CPU_S, false},
	    {"X-RootTrace-Bpf-Seconds", "bpf_s", offsetof(struct agent_report, bpf_s),
	     AGENT_FIGURE_BPF_S, false},
	    {"X-RootTrace-Lost-Samples", "lost_samples",
	     offsetof(struct agent_report, lost_samples), AGENT_FIGURE_LOST_SAMPLES, true},
	    {"X-RootTrace-Unknown-Frames", "unknown_frames",
	     offsetof(struct agent_report, unknown_frames), AGENT_FIGURE_UNKNOWN_FRAMES, true},
	    {"X-RootTrace-Processes", "processes", offsetof(struct agent_report, processes),
	     AGENT_FIGURE_PROCESSES, true},
	};

	if (!agent_id)
		return 0;
	u->has_report = true;
	snprintf(r->environment, sizeof(r->environment), "%s", u->environment);
	snprintf(r->service, sizeof(r->service), "%s", u->service);
	r->reported_at = time(NULL);
	if (copy_name("agent id", agent_id, r->agent_id, sizeof(r->agent_id), why, why_len) ||
	    copy_name("node", report_field(req, "X-RootTrace-Node", "node"), r->node,
		      sizeof(r->node), why, why_len) ||
	    copy_name("agent version",
		      report_field(req, "X-RootTrace-Agent-Version", "agent_version"), r->version,
		      sizeof(r->version), why, why_len))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(figures) / sizeof(figures[0]); i++) {
		const struct report_figure *f = &figures[i];
		const char *v = report_field(req, f->header, f->query);
		void *dst = (char *)r + f->offset;

		if (f->is_count ? parse_count(v, dst) : parse_double(v, dst)) {
			snprintf(why, why_len, "%s must be a non-negative %s", f->header,
				 f->is_count ? "integer" : "number");
			return -EINVAL;
		}
		if (v) /* absent: not measured */
			r->sent |= f->bit;
	}
	return parse_unwind_figures(req, r, why, why_len);
}

/* ------------------------------------------------------------------- parameters ---- */

const struct type_fit *ingest_type_fit(const char *profile_type)
{
	for (size_t i = 0; profile_type && i < sizeof(fits) / sizeof(fits[0]); i++)
		if (strcmp(fits[i].profile_type, profile_type) == 0)
			return &fits[i];
	return NULL;
}

/* 0, or a status (400, 403) with the reason in why. */
static int parse_upload(const struct request *req, struct upload *u, char *why, size_t why_len)
{
	const char *type = request__query(req, "profile_type");

	memset(u, 0, sizeof(*u));
	if (auth_environment(req, request__query(req, "environment"), &u->environment)) {
		snprintf(why, why_len, "this token belongs to environment '%s'",
			 req->token->environment);
		return 403;
	}
	u->service = request__query(req, "service");
	if (validate_name("service", u->service, why, why_len))
		return 400;
	u->fit = ingest_type_fit(type);
	if (!u->fit) {
		snprintf(why, why_len,
			 "profile_type %s%.32s%s: expected cpu, wall, offcpu, heap, alloc or lock",
			 type ? "'" : "", type ? type : "is missing", type ? "' is unknown" : "");
		return 400;
	}
	u->deployment = request__query(req, "deployment");
	if (u->deployment && *u->deployment &&
	    validate_name("deployment", u->deployment, why, why_len))
		return 400;
	if (!u->deployment)
		u->deployment = "";
	u->upload_id = report_field(req, "X-RootTrace-Upload-Id", "upload_id");
	if (u->upload_id && validate_text("upload_id", u->upload_id, UPLOAD_ID_MAX, why, why_len))
		return 400;
	u->node = report_field(req, "X-RootTrace-Node", "node");
	if (u->node && validate_name("node", u->node, why, why_len))
		return 400;
	if (u->upload_id)
		snprintf(u->objects_upload_id, sizeof(u->objects_upload_id),
			 "%s" INGEST_OBJECTS_ID_SUFFIX, u->upload_id);
	return parse_report(req, u, why, why_len) ? 400 : 0;
}

/* --------------------------------------------------------------------- decoding ---- */

/* "cpu/nanoseconds, samples/count" */
static void list_sample_types(const struct pprof_decoded *p, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < p->n_sample_types && used < len; i++)
		used += snprintf(buf + used, len - used, "%s%s/%s", i ? ", " : "",
				 p->sample_types[i].type, p->sample_types[i].unit);
	if (!p->n_sample_types)
		snprintf(buf, len, "none");
}

/* The upload's time (Pyroscope's from=), else the pprof's time_nanos, else now: its bucket
 * and its span links' time. */
static int64_t upload_time(const struct upload *u, const struct pprof_decoded *p)
{
	return u->time_s > 0	   ? u->time_s
	       : p->time_nanos > 0 ? p->time_nanos / 1000000000
				   : (int64_t)time(NULL);
}

static int64_t bucket_of(const struct upload *u, const struct pprof_decoded *p)
{
	int64_t t = upload_time(u, p);

	return t - t % BUCKET_SECONDS;
}

/* How far ahead of its counted memory an upload reserves in --max-decode-memory. */
#define DECODE_RESERVE_STEP (64u << 10)

void decode_share__busy_why(const struct decode_share *share, size_t needed, char *why,
			    size_t why_len)
{
	char more[48] = "";

	if (needed)
		snprintf(more, sizeof(more), " and this one needs %zu", needed);
	snprintf(why, why_len,
		 "the collector is decoding other uploads with %zu of its %zu bytes "
		 "(--max-decode-memory)%s; retry after the Retry-After seconds",
		 decode_budget__used(share->budget), share->budget->limit, more);
}

/* The inflate's meter: the bytes it asked for, kept for the reason when refused. */
struct inflate_meter {
	struct decode_share *share;
	size_t refused;
};

static int reserve_inflated(void *ctx, size_t bytes)
{
	struct inflate_meter *m = ctx;
	int err = decode_share__grow(m->share, bytes);

	if (err)
		m->refused = bytes;
	return err;
}

/* Inflates when the body is gzip, counting its buffer in share; *ret_owned is what to free. 0,
 * a status or -EBUSY, with why. */
static int body_bytes(const struct request *req, struct decode_share *share, const uint8_t *body,
		      size_t body_len, const uint8_t **ret, size_t *ret_len, uint8_t **ret_owned,
		      char *why, size_t why_len)
{
	struct upload_limits lim = ingest_limits(&req->collector->opts);
	struct inflate_meter asked = {share, 0};
	struct mem_meter meter = {reserve_inflated, &asked};
	size_t cap = req->collector->opts.max_inflated;
	int err;

	if (cap > lim.memory) /* the decompressed body is part of the upload's memory */
		cap = lim.memory;
	*ret_owned = NULL;
	if (!gzip_is_compressed(body, body_len)) {
		*ret = body;
		*ret_len = body_len;
		return 0;
	}
	err = gzip_inflate_metered(body, body_len, cap, &meter, ret_owned, ret_len);
	if (err == -EFBIG) {
		snprintf(why, why_len, "gzip body inflates past the %zu-byte limit (%s)", cap,
			 cap == lim.memory ? "--max-upload-memory" : "--max-inflated");
		return 413;
	}
	if (err == -EBUSY) {
		decode_share__busy_why(share, asked.refused, why, why_len);
		return -EBUSY;
	}
	if (err) {
		snprintf(why, why_len, "gzip body is %s",
			 err == -ENOMEM ? "too large to inflate" : "corrupt or truncated");
		return err == -ENOMEM ? 503 : 400;
	}
	*ret = *ret_owned;
	return 0;
}

int ingest_body_bytes(const struct request *req, struct decode_share *share, const uint8_t **ret,
		      size_t *ret_len, uint8_t **ret_owned, char *why, size_t why_len)
{
	return body_bytes(req, share, req->body, req->body_len, ret, ret_len, ret_owned, why,
			  why_len);
}

/* What one upload becomes: the chosen measurement and, for alloc, the object counts. */
struct reduced {
	struct sample_type_choice choice;
	struct stack_agg *agg;
	struct sample_type_choice objects_choice;
	struct stack_agg *objects; /* NULL when the profile has no alloc_objects/count */
	struct link_batch *links;  /* the samples that name a span */
	struct line_agg *lines;	   /* the leaf functions' values by source position */
	int inuse_objects_index;   /* heap: the in-use object counts' column, -1 when none */
	int64_t inuse_objects;	   /* their sum, reported beside the bytes */
	size_t inflated_len;	   /* the decompressed copy of the body, 0 when none */
	struct decode_share share; /* its part of --max-decode-memory */
	size_t counted;		   /* what upload_limits__check_memory() last counted */
	struct mem_meter scratch;  /* the stream's unpacking arena, counted on top of it */
};

/* The stream's arena (one message at a time) grows: reserve it beside what was counted. */
static int reserve_scratch(void *ctx, size_t bytes)
{
	struct reduced *r = ctx;

	return decode_share__grow(&r->share, r->counted + bytes);
}

struct upload_limits ingest_limits(const struct collector_options *o)
{
	return (struct upload_limits){
	    .samples = o->max_samples ? o->max_samples : DEFAULT_MAX_SAMPLES,
	    .stacks = o->max_stacks ? o->max_stacks : DEFAULT_MAX_STACKS,
	    .stack_frames = o->max_stack_frames ? o->max_stack_frames : DEFAULT_MAX_STACK_FRAMES,
	    .memory = o->max_upload_memory ? o->max_upload_memory : DEFAULT_MAX_UPLOAD_MEMORY,
	};
}

int upload_limits__check_memory(const struct upload_limits *lim, struct decode_share *share,
				size_t bytes, size_t i, size_t n, char *why, size_t why_len)
{
	if (bytes > lim->memory) {
		snprintf(
		    why, why_len,
		    "decoding it needs more than %zu bytes (--max-upload-memory %zu): %zu after "
		    "%zu of %zu samples",
		    lim->memory, lim->memory, bytes, i, n);
		return -ENOSPC;
	}
	/* Reserved a step ahead: called after every sample, this takes the shared counter once per
	 * step of growth instead of at each sample. */
	if (bytes <= share->held ||
	    decode_share__grow(share, (bytes + DECODE_RESERVE_STEP - 1) / DECODE_RESERVE_STEP *
					  DECODE_RESERVE_STEP) == 0 ||
	    decode_share__grow(share, bytes) == 0)
		return 0;
	decode_share__busy_why(share, bytes, why, why_len);
	return -EBUSY;
}

int ingest_answer_decode_busy(const struct request *req, struct response *resp, const char *why)
{
	resp->retry_after_s = INGEST_RETRY_AFTER_S;
	return reject(req, resp, REJECT_DECODE_MEMORY_FULL, 503, "overloaded", why);
}

int upload_limits__check_samples(const struct upload_limits *lim, size_t n, char *why,
				 size_t why_len)
{
	if (n <= lim->samples)
		return 0;
	snprintf(why, why_len, "the profile has %zu samples, more than --max-samples %zu", n,
		 lim->samples);
	return -E2BIG;
}

int upload_limits__check_stacks(const struct upload_limits *lim, size_t n_stacks, size_t n_frames,
				size_t i, size_t n, char *why, size_t why_len)
{
	if (n_stacks > lim->stacks) {
		snprintf(why, why_len,
			 "more than %zu distinct stacks (--max-stacks %zu): %zu seen in the first "
			 "%zu of %zu samples",
			 lim->stacks, lim->stacks, n_stacks, i + 1, n);
		return -E2BIG;
	}
	if (n_frames > lim->stack_frames) {
		snprintf(why, why_len,
			 "more than %zu frames in its distinct stacks (--max-stack-frames %zu): "
			 "%zu seen in the first %zu of %zu samples",
			 lim->stack_frames, lim->stack_frames, n_frames, i + 1, n);
		return -E2BIG;
	}
	return 0;
}

/* -E2BIG with the reason when the aggregate passed a limit after sample i of n. */
static int check_agg(struct stack_agg *agg, const struct upload_limits *lim, size_t i, size_t n,
		     char *why, size_t why_len)
{
	size_t n_stacks;

	stack_agg__stacks(agg, &n_stacks);
	return upload_limits__check_stacks(lim, n_stacks, stack_agg__n_frames(agg), i, n, why,
					   why_len);
}

/* One sample's value of the chosen type, in the stored unit, into agg; its value in *ret_v
 * (0: nothing added). */
static int add_value(const struct pprof_decoded_sample *s, const struct sample_type_choice *c,
		     struct stack_agg *agg, int64_t *ret_v)
{
	int err;

	*ret_v = s->values[c->index];
	if (!*ret_v)
		return 0;
	err = sample_type_scale(*ret_v, c->scale, ret_v);
	return err ? err : stack_agg__add(agg, (const char *const *)s->frames, s->n_frames, *ret_v);
}

/* The sample's leaf position into the line detail: file:line where its leaf location has a
 * line, else (the agent's native frames) its mapping's build-id and the leaf's file offset. */
static int add_line(const struct pprof_decoded_sample *s, struct reduced *r, int64_t v)
{
	uint32_t leaf = stack_agg__last_leaf(r->agg);

	if (!s->n_frames)
		return 0;
	if (s->leaf_line > 0)
		return line_agg__add(r->lines, leaf, LINE_KIND_FILE,
				     *s->leaf_file ? s->leaf_file : LINE_UNKNOWN_FILE,
				     (uint64_t)s->leaf_line, v);
	if (*s->leaf_build_id && s->leaf_address)
		return line_agg__add_address(r->lines, leaf, s->leaf_build_id, s->leaf_module,
					     s->leaf_address, v);
	return 0;
}

/* One sample into the aggregates and, when its labels name a span, the span links (every
 * pprof route). */
static int reduce_sample(const struct pprof_decoded_sample *s, int count_idx, int64_t time_s,
			 struct reduced *r)
{
	int64_t v, objects;
	int err = add_value(s, &r->choice, r->agg, &v);

	if (!err && v)
		err = add_line(s, r, v);
	if (!err && v)
		err = link_batch__add_labelled(r->links, time_s, (const char *const *)s->frames,
					       s->n_frames, s->labels, s->n_labels, v,
					       count_idx >= 0 ? s->values[count_idx] : 1);
	if (!err && r->objects)
		err = add_value(s, &r->objects_choice, r->objects, &objects);
	if (!err && r->inuse_objects_index >= 0 &&
	    __builtin_add_overflow(r->inuse_objects, s->values[r->inuse_objects_index],
				   &r->inuse_objects))
		err = -EOVERFLOW;
	return err;
}

static bool has_negative_value(const struct pprof_decoded_sample *s, const struct reduced *r)
{
	return s->values[r->choice.index] < 0 ||
	       (r->objects && s->values[r->objects_choice.index] < 0) ||
	       (r->inuse_objects_index >= 0 && s->values[r->inuse_objects_index] < 0);
}

/* Merges each sample as it is read: the upload's memory is its aggregates, not its samples.
 * 0, -EINVAL (a bad profile), -E2BIG (a limit passed), -ENOMEM; the reason in why. */
/* The most decoding the upload holds: the stream's tables, the aggregates and span links, and
 * either the decompressed body (freed before the store takes the stacks) or the store's write
 * of those stacks. */
static size_t held_bytes(const struct pprof_stream *stream, const struct reduced *r)
{
	size_t n_stacks, n_objects = 0, write;

	stack_agg__stacks(r->agg, &n_stacks);
	if (r->objects)
		stack_agg__stacks(r->objects, &n_objects);
	write = (n_stacks + n_objects) * INGEST_WRITE_BYTES_PER_STACK;
	return (r->inflated_len > write ? r->inflated_len : write) + pprof_stream__bytes(stream) +
	       stack_agg__bytes(r->agg) + (r->objects ? stack_agg__bytes(r->objects) : 0) +
	       link_batch__bytes(r->links) + line_agg__bytes(r->lines);
}

static int reduce(struct pprof_stream *stream, int64_t time_s, const struct upload_limits *lim,
		  struct reduced *r, char *why, size_t why_len)
{
	const struct pprof_decoded *header = pprof_stream__header(stream);
	int count_idx = pprof_decoded__find_type(header, "samples", "count");
	struct pprof_decoded_sample s;
	int more = 0, err;

	r->counted = held_bytes(stream, r);
	err = upload_limits__check_memory(lim, &r->share, r->counted, 0, header->n_samples, why,
					  why_len);
	for (size_t i = 0; !err && (more = pprof_stream__next(stream, &s, why, why_len)) > 0; i++) {
		if (has_negative_value(&s, r)) {
			snprintf(why, why_len, "sample %zu has a negative value", i);
			return -EINVAL;
		}
		err = reduce_sample(&s, count_idx, time_s, r);
		if (err == -EOVERFLOW)
			snprintf(why, why_len, "sample values overflow a 64-bit sum");
		if (!err)
			err = check_agg(r->agg, lim, i, header->n_samples, why, why_len);
		if (err)
			break;
		r->counted = held_bytes(stream, r);
		err = upload_limits__check_memory(lim, &r->share, r->counted, i + 1,
						  header->n_samples, why, why_len);
	}
	if (!err && more == -EBUSY) /* the stream's arena was refused its growth */
		decode_share__busy_why(&r->share, 0, why, why_len);
	return err ? err : more;
}

/* duplicate: the upload id was stored before; this copy was not merged again. */
static json_t *ack_json(const struct upload *u, const struct profile_batch *b, size_t samples,
			const struct reduced *r, bool duplicate, json_t *links)
{
	char sample_type[64];
	json_t *ack;

	snprintf(sample_type, sizeof(sample_type), "%s/%s", r->choice.type, r->choice.unit);
	ack = json_pack("{s:b, s:b, s:s, s:s, s:s?, s:s, s:s, s:I, s:I, s:I, s:I, s:I}", "stored",
			1, "duplicate", duplicate, "environment", u->environment, "service",
			u->service, "node", u->node && *u->node ? u->node : NULL, "profile_type",
			u->fit->profile_type, "sample_type", sample_type, "scale",
			(json_int_t)r->choice.scale, "bucket", (json_int_t)b->bucket_start,
			"stacks", (json_int_t)b->n_stacks, "samples", (json_int_t)samples, "total",
			(json_int_t)stack_agg__total(r->agg));
	if (ack && r->objects)
		json_object_set_new(ack, "alloc_objects",
				    json_integer(stack_agg__total(r->objects)));
	if (ack && r->inuse_objects_index >= 0)
		json_object_set_new(ack, "inuse_objects", json_integer(r->inuse_objects));
	if (ack)
		json_object_set_new(ack, "line_positions", json_integer((json_int_t)b->n_lines));
	if (ack)
		json_object_set_new(ack, "links", links);
	else
		json_decref(links);
	return ack;
}

static int store(const struct request *req, struct response *resp, const struct upload *u,
		 const struct pprof_decoded *p, const struct reduced *r,
		 const struct timespec *start)
{
	struct collector *c = req->collector;
	struct profile_batch batches[2] = {{
	    .environment = u->environment,
	    .service = u->service,
	    .deployment = u->deployment,
	    .profile_type = u->fit->profile_type,
	    .bucket_start = bucket_of(u, p),
	    .period = p->period,
	    .upload_id = u->upload_id,
	    .node = u->node,
	}};
	uint64_t dropped[3] = {0}, merge_dropped[3] = {0};
	bool duplicate = false;
	int err;

	batches[0].ret_duplicate = &duplicate;
	batches[0].stacks = stack_agg__stacks(r->agg, &batches[0].n_stacks);
	batches[0].names = stack_agg__names(r->agg, &batches[0].n_names);
	batches[0].ret_lines_dropped = merge_dropped;
	err = line_agg__finish(r->lines, &batches[0].lines, &batches[0].n_lines, dropped);
	if (err)
		return response__error(
		    resp, err == -ENOMEM ? 500 : 400, err == -ENOMEM ? "internal" : "bad_profile",
		    "%s", err == -ENOMEM ? "out of memory" : "line values overflow a 64-bit sum");
	if (r->objects) { /* its own series, merged in the same transaction */
		batches[1] = batches[0];
		batches[1].profile_type = "alloc_objects";
		batches[1].upload_id = u->upload_id ? u->objects_upload_id : NULL;
		batches[1].ret_duplicate = NULL;
		batches[1].stacks = stack_agg__stacks(r->objects, &batches[1].n_stacks);
		batches[1].names = stack_agg__names(r->objects, &batches[1].n_names);
		batches[1].lines = NULL;
		batches[1].n_lines = 0;
		batches[1].ret_lines_dropped = NULL;
	}
	err = c->profiles->ops->ingest(c->profiles, batches, r->objects ? 2 : 1);
	if (err == -EAGAIN) {
		/* Backpressure: nothing was written; the sender keeps the profile and retries. */
		resp->retry_after_s = INGEST_RETRY_AFTER_S;
		return reject(req, resp, REJECT_OVERLOADED, 429, "overloaded",
			      "the collector's write queue is full; retry after the Retry-After "
			      "seconds");
	}
	if (err) {
		char cause[STORE_FAULT_DETAIL_MAX + 64], detail[sizeof(cause) + 64];

		store_fault_describe(err, cause, sizeof(cause));
		snprintf(detail, sizeof(detail), "the profile could not be stored%s%s%s",
			 *cause ? ": " : "", cause,
			 err == STORE_ERR_SERIES_COLLISION ? "" : "; retry");
		resp->retry_after_s = INGEST_RETRY_AFTER_S;
		return reject(req, resp, REJECT_STORE_ERROR, 503, "store_unavailable", detail);
	}
	if (duplicate) {
		/* Stored by an earlier request with this id: its answer was lost, not its data. */
		metrics__upload_duplicate(c->metrics);
	} else {
		/* The profile is committed; a failed self-report does not undo that. */
		if (u->has_report)
			c->cp->ops->agent_report_put(c->cp, &u->report);
		for (int bound = LINE_DROP_FUNCTION; bound <= LINE_DROP_SERIES; bound++)
			metrics__lines_dropped(c->metrics, bound,
					       dropped[bound] + merge_dropped[bound]);
		metrics__upload_accepted(c->metrics, req->body_len, batches[0].n_stacks,
					 seconds_since(start));
	}
	return response__json(resp, 200,
			      ack_json(u, &batches[0], p->n_samples, r, duplicate,
				       duplicate
					   ? json_null()
					   : link_batch_store_json(req, r->links, u->environment)));
}

/* The fit u names, or the first candidate the pprof has, with the sample type chosen for it
 * (sample_type.h: any time unit); -EINVAL with a reason when none fits. */
static int choose_fit(const struct upload *u, const struct pprof_decoded *p,
		      const struct type_fit **ret, struct sample_type_choice *ret_choice, char *why,
		      size_t why_len)
{
	char types[192], wanted[192];
	size_t used = 0;

	for (size_t i = 0; !u->fit && i < u->n_candidates; i++) {
		const struct type_fit *f = u->candidates[i];

		if (!sample_type_choose(f->profile_type, p->sample_types, p->n_sample_types,
					ret_choice)) {
			*ret = f;
			return 0;
		}
		used += snprintf(wanted + used, sizeof(wanted) - used, "%s%s/%s (%s)",
				 i ? ", " : "", f->sample_type, f->unit, f->profile_type);
		if (used >= sizeof(wanted))
			break;
	}
	list_sample_types(p, types, sizeof(types));
	if (!u->fit) {
		snprintf(why, why_len,
			 "no sample type to store: expected one of %s (time in s, ms, us or ns); "
			 "this one has %s",
			 u->n_candidates ? wanted : "none", types);
		return -EINVAL;
	}
	*ret = u->fit;
	if (!sample_type_choose(u->fit->profile_type, p->sample_types, p->n_sample_types,
				ret_choice))
		return 0;
	snprintf(why, why_len, "a %s profile needs sample type %s; this one has %s",
		 u->fit->profile_type, ret_choice->expected, types);
	return -EINVAL;
}

/* The stream of the body's pprof and its fitting sample type (u->fit, r->choice set); 0, or
 * RESPONDED with the answer written. */
static int open_profile(const struct request *req, struct response *resp, struct upload *u,
			const uint8_t *pb, size_t pb_len, struct pprof_stream **ret,
			struct reduced *r)
{
	struct upload_limits lim = ingest_limits(&req->collector->opts);
	const struct pprof_decoded *header;
	char why[320];

	int err;

	r->counted = r->inflated_len;
	r->scratch = (struct mem_meter){reserve_scratch, r};
	err = pprof_stream__open_metered(pb, pb_len, &r->scratch, ret, why, sizeof(why));
	if (err == -EBUSY) {
		decode_share__busy_why(&r->share, 0, why, sizeof(why));
		ingest_answer_decode_busy(req, resp, why);
		return RESPONDED;
	}
	if (err) {
		reject(req, resp, REJECT_BAD_PPROF, 400, "bad_profile", why);
		return RESPONDED;
	}
	header = pprof_stream__header(*ret);
	if (upload_limits__check_samples(&lim, header->n_samples, why, sizeof(why))) {
		reject(req, resp, REJECT_TOO_MANY_SAMPLES, 413, "too_many_samples", why);
		return RESPONDED;
	}
	if (choose_fit(u, header, &u->fit, &r->choice, why, sizeof(why))) {
		reject(req, resp, REJECT_NO_SAMPLE_TYPE, 422, "no_fitting_sample_type", why);
		return RESPONDED;
	}
	return 0;
}

/* Streams the samples into the chosen sample type's aggregate, the span links and, for alloc,
 * the object counts too, in one pass. 0, or RESPONDED with the answer written. */
static int reduce_profile(const struct request *req, struct response *resp, const struct upload *u,
			  struct pprof_stream *s, struct reduced *r)
{
	const struct pprof_decoded *p = pprof_stream__header(s);
	struct upload_limits lim = ingest_limits(&req->collector->opts);
	char why[320];
	int err = 0;

	r->agg = stack_agg__new();
	r->lines = line_agg__new();
	/* heap: in-use object counts beside the bytes (Go's inuse_objects, gperftools' objects) */
	r->inuse_objects_index = -1;
	if (strcmp(u->fit->profile_type, "heap") == 0) {
		r->inuse_objects_index = pprof_decoded__find_type(p, "inuse_objects", "count");
		if (r->inuse_objects_index < 0)
			r->inuse_objects_index = pprof_decoded__find_type(p, "objects", "count");
	}
	r->links = link_batch__new(u->service, u->fit->profile_type, u->node);
	if (strcmp(u->fit->profile_type, "alloc") == 0 &&
	    sample_type_choose("alloc_objects", p->sample_types, p->n_sample_types,
			       &r->objects_choice) == 0)
		err = (r->objects = stack_agg__new()) ? 0 : -ENOMEM;
	if (!err)
		err = r->agg && r->links && r->lines
			  ? reduce(s, upload_time(u, p), &lim, r, why, sizeof(why))
			  : -ENOMEM;
	if (err == -ENOMEM)
		response__error(resp, 500, "internal", "out of memory");
	else if (err == -E2BIG)
		reject(req, resp, REJECT_TOO_MANY_STACKS, 413, "too_many_stacks", why);
	else if (err == -ENOSPC)
		reject(req, resp, REJECT_TOO_MUCH_MEMORY, 413, "too_much_memory", why);
	else if (err == -EBUSY)
		ingest_answer_decode_busy(req, resp, why);
	else if (err)
		reject(req, resp, REJECT_BAD_PPROF, 400, "bad_profile", why);
	return err ? RESPONDED : 0;
}

int ingest_pprof(const struct request *req, struct response *resp, const struct upload *upload,
		 const uint8_t *body, size_t body_len, const struct timespec *start)
{
	struct pprof_stream *profile = NULL;
	struct reduced reduced = {0};
	struct upload u = *upload;
	uint8_t *inflated = NULL;
	const uint8_t *pb;
	size_t pb_len;
	char why[320];
	int status;

	if (!body_len)
		return reject(req, resp, REJECT_BAD_PPROF, 400, "bad_profile", "empty body");
	reduced.share.budget = &req->collector->decode;
	status = body_bytes(req, &reduced.share, body, body_len, &pb, &pb_len, &inflated, why,
			    sizeof(why));
	if (status == -EBUSY) {
		ingest_answer_decode_busy(req, resp, why);
		goto out;
	}
	if (status) {
		if (status == 503)
			resp->retry_after_s = INGEST_RETRY_AFTER_S;
		reject(req, resp,
		       status == 413   ? REJECT_INFLATED_TOO_LARGE
		       : status == 400 ? REJECT_BAD_GZIP
				       : REJECT_STORE_ERROR,
		       status, status == 413 ? "inflated_too_large" : "bad_gzip", why);
		goto out;
	}
	reduced.inflated_len = inflated ? pb_len : 0;
	if (open_profile(req, resp, &u, pb, pb_len, &profile, &reduced) ||
	    reduce_profile(req, resp, &u, profile, &reduced))
		goto out;
	/* The names the aggregates and the links point to live in the stream's string table,
	 * not in the body: the inflated copy can go before the store holds the upload. */
	free(inflated);
	inflated = NULL;
	store(req, resp, &u, pprof_stream__header(profile), &reduced, start);
out:
	link_batch__free(reduced.links);
	line_agg__free(reduced.lines);
	stack_agg__free(reduced.agg);
	stack_agg__free(reduced.objects);
	pprof_stream__free(profile);
	free(inflated);
	decode_share__release(&reduced.share);
	return 0;
}

int handle_profiles_ingest(const struct request *req, struct response *resp)
{
	struct timespec start;
	struct upload u;
	char why[320];
	int status;

	clock_gettime(CLOCK_MONOTONIC, &start);
	status = parse_upload(req, &u, why, sizeof(why));
	if (status)
		return reject(req, resp, status == 403 ? REJECT_FORBIDDEN : REJECT_BAD_REQUEST,
			      status, status == 403 ? "forbidden" : "bad_request", why);
	if (!ingest_pprof_content_type_ok(req->content_type))
		return reject(req, resp, REJECT_CONTENT_TYPE, 415, "unsupported_media_type",
			      "send the pprof as application/octet-stream (gzip is detected "
			      "by its magic bytes)");
	return ingest_pprof(req, resp, &u, req->body, req->body_len, &start);
}
