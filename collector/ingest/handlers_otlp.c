// SPDX-License-Identifier: Apache-2.0
/* POST /v1development/profiles (OTLP/HTTP, collector token): an ExportProfilesServiceRequest,
 * protobuf or JSON, gzipped or not. Every profile is checked first (service.name, environment,
 * version); then each is reduced to root-first stacks of its RootTrace profile type and all are
 * merged in one store call; samples with a link become span links. Profiles whose sample type
 * RootTrace does not keep are counted in the answer's partial_success. The per-upload limits
 * (ingest.h) hold for the whole request: past one, 413 and nothing stored. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "collector.h"
#include "http/respond.h"
#include "http/validate.h"
#include "ingest/handlers.h"
#include "ingest/ingest.h"
#include "ingest/line_agg.h"
#include "ingest/link_batch.h"
#include "ingest/stack_agg.h"
#include "otlp.h"
#include "otlp_json.h"
#include "store/store_fault.h"

#define OTLP_RETRY_AFTER_S 1
#define NS_PER_S 1000000000LL

/* How one OTLP profile's values become RootTrace's. */
struct otlp_fit {
	const char *profile_type;
	int64_t scale;	       /* stored value = sample value × scale */
	int64_t per_timestamp; /* a timestamps-only sample: count × this; 0 = no meaning */
};

/* One profile on its way to the store. */
struct otlp_item {
	struct otlp_fit fit;
	bool rejected;
	struct stack_agg *agg;
	struct link_batch *links;
	struct line_agg *lines; /* the leaf functions' values by source position */
	uint64_t lines_dropped[3];
	struct profile_batch batch;
};

struct otlp_upload {
	const struct request *req;
	struct timespec start;
	struct otlp_request *otlp;
	struct otlp_item *items;
	size_t n_items;
	int64_t rejected, samples;
	char message[320]; /* why the first rejected profile was not stored */
	/* The per-upload limits hold for the whole request: samples, and the distinct stacks
	 * and their frames summed over its profiles' aggregates. */
	struct upload_limits lim;
	size_t n_samples;				     /* in the request */
	size_t samples_before, stacks_before, frames_before; /* of the profiles reduced */
	char why[320];					     /* the limit passed */
	struct decode_share share;			     /* its part of --max-decode-memory */
};

static double seconds_since(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) + (now.tv_nsec - start->tv_nsec) / 1e9;
}

static int64_t unit_ns(const char *unit)
{
	static const struct {
		const char *name;
		int64_t ns;
	} units[] = {
	    {"nanoseconds", 1},	       {"ns", 1},	{"microseconds", 1000}, {"us", 1000},
	    {"milliseconds", 1000000}, {"ms", 1000000}, {"seconds", NS_PER_S},	{"s", NS_PER_S},
	};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(units[i].name, unit) == 0)
			return units[i].ns;
	return 0;
}

/* cpu, wall, offcpu: the time measurements, each its own type (never merged). */
static const char *time_type(const char *type)
{
	if (!strcmp(type, "cpu"))
		return "cpu";
	if (!strcmp(type, "wall"))
		return "wall";
	if (!strcmp(type, "off_cpu") || !strcmp(type, "offcpu"))
		return "offcpu";
	return NULL;
}

static const char *bytes_type(const char *type)
{
	if (!strcmp(type, "inuse_space"))
		return "heap";
	if (!strcmp(type, "alloc_space") || !strcmp(type, "allocated_space"))
		return "alloc";
	return NULL;
}

/* The period in nanoseconds when the period type is a time; 0 otherwise. */
static int64_t period_ns(const struct otlp_profile *p)
{
	int64_t ns = unit_ns(p->period_unit), v;

	if (!ns || p->period <= 0 || __builtin_mul_overflow(p->period, ns, &v))
		return 0;
	return v;
}

/* false when RootTrace keeps no profile type for this sample type. */
static bool fit_profile(const struct otlp_profile *p, struct otlp_fit *ret)
{
	const char *type = time_type(p->sample_type);
	int64_t ns = unit_ns(p->sample_unit);

	memset(ret, 0, sizeof(*ret));
	if (type && ns) { /* (cpu, nanoseconds), (off_cpu, milliseconds), ... */
		*ret = (struct otlp_fit){type, ns, period_ns(p)};
		return true;
	}
	type = time_type(p->period_type);
	if (type && !strcmp(p->sample_unit, "count") && period_ns(p)) {
		/* (samples, count) every period of (cpu, nanoseconds): count × period. */
		*ret = (struct otlp_fit){type, period_ns(p), period_ns(p)};
		return true;
	}
	type = bytes_type(p->sample_type);
	if (type && !strcmp(p->sample_unit, "bytes")) {
		*ret = (struct otlp_fit){type, 1, 0};
		return true;
	}
	if (!strcmp(p->sample_type, "delay") && ns) {
		*ret = (struct otlp_fit){"lock", ns, 0};
		return true;
	}
	return false;
}

static void reject_profile(struct otlp_upload *u, struct otlp_item *it, size_t i,
			   const char *detail)
{
	it->rejected = true;
	if (!u->rejected++)
		snprintf(u->message, sizeof(u->message), "profile %zu not stored: %s", i, detail);
}

/* ---------------------------------------------------------------- checks first ---- */

/* 0, or a status (400, 403) with why: a request that fails one check stores nothing. */
static int check_profile(struct otlp_upload *u, size_t i, struct otlp_item *it, char *why,
			 size_t why_len)
{
	const struct otlp_profile *p = otlp_request__profile(u->otlp, i);
	const char *env = u->req->token->environment;
	char detail[256];

	if (!p->service || !*p->service) {
		snprintf(why, why_len,
			 "profile %zu: resource attribute service.name is missing (a string naming "
			 "the service is required)",
			 i);
		return 400;
	}
	if (validate_name("service.name", p->service, why, why_len) ||
	    (p->service_version && *p->service_version &&
	     validate_name("service.version", p->service_version, why, why_len)))
		return 400;
	if (p->environment && *p->environment && strcmp(p->environment, env)) {
		snprintf(why, why_len,
			 "profile %zu: deployment.environment.name '%.64s' is not this token's "
			 "environment '%s'",
			 i, p->environment, env);
		return 403;
	}
	if (!fit_profile(p, &it->fit)) {
		snprintf(detail, sizeof(detail),
			 "sample type %.40s/%.40s (period %.40s/%.40s) is not one RootTrace keeps",
			 p->sample_type, p->sample_unit, p->period_type, p->period_unit);
		reject_profile(u, it, i, detail);
	}
	return 0;
}

/* ------------------------------------------------------------------ reduction ---- */

static int64_t seconds_of(int64_t nanos)
{
	return nanos > 0 ? nanos / NS_PER_S : (int64_t)time(NULL);
}

/* A sample's stored value; -1 when it has none (timestamps only on a bytes profile). */
static int64_t sample_value(const struct otlp_fit *fit, const struct otlp_sample *s)
{
	int64_t v;

	if (s->timestamps_only && !fit->per_timestamp)
		return -1;
	if (__builtin_mul_overflow(s->value, s->timestamps_only ? fit->per_timestamp : fit->scale,
				   &v))
		return -1;
	return v;
}

/* The sample's leaf position into the line detail (as the pprof route does). */
static int add_line(struct otlp_item *it, const struct otlp_sample *s, int64_t v)
{
	uint32_t leaf = stack_agg__last_leaf(it->agg);

	if (!s->n_frames)
		return 0;
	if (s->leaf_line > 0)
		return line_agg__add(it->lines, leaf, LINE_KIND_FILE,
				     *s->leaf_file ? s->leaf_file : LINE_UNKNOWN_FILE,
				     (uint64_t)s->leaf_line, v);
	if (*s->leaf_build_id && s->leaf_offset)
		return line_agg__add_address(it->lines, leaf, s->leaf_build_id, s->leaf_module,
					     s->leaf_offset, v);
	return 0;
}

static int reduce_sample(struct otlp_upload *u, struct otlp_item *it, size_t i, size_t j)
{
	const struct otlp_profile *p = otlp_request__profile(u->otlp, i);
	struct span_context ctx;
	struct otlp_sample s;
	int64_t v;
	int err;

	otlp_request__sample(u->otlp, i, j, &s);
	v = sample_value(&it->fit, &s);
	if (v < 0)
		return -ERANGE;
	if (!v)
		return 0;
	err = stack_agg__add(it->agg, s.frames, s.n_frames, v);
	if (!err)
		err = add_line(it, &s, v);
	if (err || !span_context_from_bytes(s.trace_id, s.span_id, &ctx))
		return err;
	return link_batch__add(it->links, seconds_of(s.time_nanos ? s.time_nanos : p->time_nanos),
			       s.frames, s.n_frames, v, s.timestamps_only ? s.value : 1, &ctx);
}

/* What decoding the request holds now: its decoded structures, the aggregates and span links
 * of the profiles reduced so far, and the store's write of their stacks to come. */
static size_t held_bytes(const struct otlp_upload *u, size_t n_stacks)
{
	size_t bytes = otlp_request__bytes(u->otlp) + n_stacks * INGEST_WRITE_BYTES_PER_STACK;

	for (size_t i = 0; i < u->n_items; i++)
		bytes += (u->items[i].agg ? stack_agg__bytes(u->items[i].agg) : 0) +
			 (u->items[i].lines ? line_agg__bytes(u->items[i].lines) : 0) +
			 link_batch__bytes(u->items[i].links);
	return bytes;
}

/* -E2BIG (a count) or -ENOSPC (memory) with u->why when the request passes a limit after its
 * sample j. */
static int check_limits(struct otlp_upload *u, const struct otlp_item *it, size_t j)
{
	size_t n_stacks;
	int err;

	stack_agg__stacks(it->agg, &n_stacks);
	n_stacks += u->stacks_before;
	err = upload_limits__check_stacks(
	    &u->lim, n_stacks, u->frames_before + stack_agg__n_frames(it->agg),
	    u->samples_before + j, u->n_samples, u->why, sizeof(u->why));
	if (!err && (j & 255) == 0) /* every item is walked: not at every sample */
		err = upload_limits__check_memory(&u->lim, &u->share, held_bytes(u, n_stacks),
						  u->samples_before + j + 1, u->n_samples, u->why,
						  sizeof(u->why));
	return err;
}

static int reduce_profile(struct otlp_upload *u, size_t i)
{
	const struct otlp_profile *p = otlp_request__profile(u->otlp, i);
	struct otlp_item *it = &u->items[i];
	int64_t t = seconds_of(p->time_nanos);
	int err = 0;

	it->agg = stack_agg__new();
	it->lines = line_agg__new();
	it->links = link_batch__new(p->service, it->fit.profile_type, NULL); /* no node */
	if (!it->agg || !it->links || !it->lines)
		return -ENOMEM;
	for (size_t j = 0; j < p->n_samples && !err; j++) {
		err = reduce_sample(u, it, i, j);
		if (!err)
			err = check_limits(u, it, j);
	}
	u->samples_before += p->n_samples;
	if (err == -ERANGE || err == -EOVERFLOW) {
		reject_profile(u, it, i,
			       err == -ERANGE ? "a sample's value overflows or has no meaning "
						"(timestamps only on a bytes profile)"
					      : "sample values overflow a 64-bit sum");
		return 0;
	}
	if (err)
		return err;
	u->samples += (int64_t)p->n_samples;
	it->batch = (struct profile_batch){
	    .environment = u->req->token->environment,
	    .service = p->service,
	    .deployment = p->service_version ? p->service_version : "",
	    .profile_type = it->fit.profile_type,
	    .bucket_start = t - t % BUCKET_SECONDS,
	    .period = p->period,
	};
	it->batch.stacks = stack_agg__stacks(it->agg, &it->batch.n_stacks);
	it->batch.names = stack_agg__names(it->agg, &it->batch.n_names);
	err = line_agg__finish(it->lines, &it->batch.lines, &it->batch.n_lines, it->lines_dropped);
	if (err)
		return err;
	u->stacks_before += it->batch.n_stacks;
	u->frames_before += stack_agg__n_frames(it->agg);
	return 0;
}

/* ---------------------------------------------------------------------- store ---- */

static int store_batches(struct otlp_upload *u, size_t *ret_stacks)
{
	struct profile_store *ps = u->req->collector->profiles;
	struct profile_batch *batches = calloc(u->n_items ? u->n_items : 1, sizeof(*batches));
	size_t n = 0;
	int err;

	if (!batches)
		return -ENOMEM;
	*ret_stacks = 0;
	for (size_t i = 0; i < u->n_items; i++) {
		if (u->items[i].rejected || !u->items[i].batch.n_stacks)
			continue;
		batches[n++] = u->items[i].batch;
		*ret_stacks += u->items[i].batch.n_stacks;
	}
	err = n ? ps->ops->ingest(ps, batches, n) : 0;
	free(batches);
	return err;
}

/* After the rollups committed. A failure is said in the answer's partial_success message
 * (rejected_profiles stays 0: the profiles are stored, only their span links are not). */
static void store_links(struct otlp_upload *u)
{
	size_t dropped = 0;
	int err = 0;

	for (size_t i = 0; i < u->n_items; i++) {
		if (u->items[i].rejected)
			continue;
		dropped += link_batch__dropped(u->items[i].links);
		if (!err)
			err = link_batch__store(u->items[i].links, u->req->collector->links,
						u->req->token->environment);
	}
	if (err && !u->rejected) {
		snprintf(u->message, sizeof(u->message),
			 "profiles stored, their span links not: %s", store_strerror(err));
	} else if (dropped && !u->rejected)
		snprintf(u->message, sizeof(u->message),
			 "profiles stored, %zu span links past %u per profile not", dropped,
			 LINK_BATCH_MAX);
}

/* OTLP's answer in the request's encoding, with RootTrace's own figures as headers. */
static int answer(struct otlp_upload *u, struct response *resp, bool json)
{
	uint8_t *buf;
	size_t len;

	if (json)
		return response__json(resp, 200, otlp_json_response(u->rejected, u->message));
	if (otlp_encode_response(u->rejected, u->message, &buf, &len))
		return response__error(resp, 500, "internal", "out of memory");
	return response__body(resp, 200, "application/x-protobuf", (char *)buf, len);
}

/* ------------------------------------------------------------------- handler ---- */

static int content_kind(const struct request *req, bool *ret_json)
{
	const char *ct = req->content_type;
	size_t len = ct ? strcspn(ct, "; ") : 0;

	*ret_json = len == 16 && strncasecmp(ct, "application/json", len) == 0;
	if (*ret_json || !len)
		return 0;
	if ((len == 22 && strncasecmp(ct, "application/x-protobuf", len) == 0) ||
	    (len == 20 && strncasecmp(ct, "application/protobuf", len) == 0) ||
	    (len == 24 && strncasecmp(ct, "application/octet-stream", len) == 0))
		return 0;
	return -EINVAL;
}

/* Decodes the request capped by --max-upload-memory and by what --max-decode-memory has left:
 * -E2BIG from the decoder is 413 when the upload's own limit stopped it, 503 when the budget did.
 */
static int decode_within(struct decode_share *share, const uint8_t *buf, size_t len, size_t held,
			 size_t memory, struct otlp_request **ret, char *why, size_t why_len)
{
	size_t want = memory > held ? memory - held : 1, cap;
	int err = decode_share__grow(share, held);

	cap = err ? 0 : decode_share__grab(share, want);
	err = cap ? otlp_decode_capped(buf, len, cap, ret, why, why_len) : -E2BIG;
	if (err == -E2BIG && cap < want) {
		decode_share__busy_why(share, 0, why, why_len);
		return -EBUSY;
	}
	return err;
}

/* The body decoded into *ret within the memory budget; 0, or RESPONDED with the refusal. */
static int decode(const struct request *req, bool json, struct decode_share *share,
		  struct otlp_request **ret, struct response *resp)
{
	size_t memory = ingest_limits(&req->collector->opts).memory, held;
	uint8_t *inflated = NULL, *pb = NULL;
	const uint8_t *body;
	size_t body_len, pb_len = 0;
	char why[320];
	int status, err;

	status = ingest_body_bytes(req, share, &body, &body_len, &inflated, why, sizeof(why));
	if (status == -EBUSY)
		return ingest_answer_decode_busy(req, resp, why), RESPONDED;
	if (status) {
		metrics__reject(req->collector->metrics,
				status == 413 ? REJECT_INFLATED_TOO_LARGE : REJECT_BAD_GZIP);
		return response__error(resp, status,
				       status == 413 ? "inflated_too_large" : "bad_gzip", "%s",
				       why),
		       RESPONDED;
	}
	err = json ? otlp_json_to_protobuf(body, body_len, &pb, &pb_len, why, sizeof(why)) : 0;
	held = (inflated ? body_len : 0) + (pb ? pb_len : 0); /* beside the decoded request */
	if (!err)
		err = decode_within(share, pb ? pb : body, pb ? pb_len : body_len, held, memory,
				    ret, why, sizeof(why));
	free(pb);
	free(inflated);
	if (!err) /* the body's copies are gone: what it holds now is the decoded request */
		decode_share__trim(share, otlp_request__bytes(*ret));
	if (err == -EBUSY)
		return ingest_answer_decode_busy(req, resp, why), RESPONDED;
	if (err == -E2BIG) {
		metrics__reject(req->collector->metrics, REJECT_TOO_MUCH_MEMORY);
		return response__error(resp, 413, "too_much_memory", "%s (--max-upload-memory)",
				       why),
		       RESPONDED;
	}
	if (err == -ENOMEM)
		return response__error(resp, 503, "overloaded",
				       "out of memory decoding the request"),
		       RESPONDED;
	if (err) {
		metrics__reject(req->collector->metrics, REJECT_BAD_PPROF);
		return response__error(resp, 400, "bad_profile", "%s", why), RESPONDED;
	}
	return 0;
}

/* Every profile allowed in the token's environment; 0, or RESPONDED with a 400 or 403. */
static int checks(struct otlp_upload *u, struct response *resp)
{
	char why[320];

	for (size_t i = 0; i < u->n_items; i++) {
		int status = check_profile(u, i, &u->items[i], why, sizeof(why));

		if (status) {
			metrics__reject(u->req->collector->metrics,
					status == 403 ? REJECT_FORBIDDEN : REJECT_BAD_REQUEST);
			response__error(resp, status, status == 403 ? "forbidden" : "bad_request",
					"%s", why);
			return RESPONDED;
		}
	}
	return 0;
}

/* 0, or RESPONDED with a 413 when the request's profiles hold more than --max-samples samples. */
static int within_sample_limit(struct otlp_upload *u, struct response *resp)
{
	u->lim = ingest_limits(&u->req->collector->opts);
	for (size_t i = 0; i < u->n_items; i++)
		if (!u->items[i].rejected)
			u->n_samples += otlp_request__profile(u->otlp, i)->n_samples;
	if (!upload_limits__check_samples(&u->lim, u->n_samples, u->why, sizeof(u->why)))
		return 0;
	ingest_reject(u->req, resp, REJECT_TOO_MANY_SAMPLES, 413, "too_many_samples", u->why);
	return RESPONDED;
}

static int store_and_answer(struct otlp_upload *u, struct response *resp, bool json)
{
	size_t stacks;
	int err = store_batches(u, &stacks);

	if (err) {
		char cause[STORE_FAULT_DETAIL_MAX + 64];

		store_fault_describe(err, cause, sizeof(cause));
		resp->retry_after_s = OTLP_RETRY_AFTER_S;
		metrics__reject(u->req->collector->metrics,
				err == -EAGAIN ? REJECT_OVERLOADED : REJECT_STORE_ERROR);
		return response__error(resp, err == -EAGAIN ? 429 : 503,
				       err == -EAGAIN ? "overloaded" : "store_unavailable",
				       "the profiles could not be stored%s%s%s", *cause ? ": " : "",
				       cause, err == STORE_ERR_SERIES_COLLISION ? "" : "; retry");
	}
	metrics__upload_accepted(u->req->collector->metrics, u->req->body_len, stacks,
				 seconds_since(&u->start));
	for (size_t i = 0; i < u->n_items; i++)
		for (int bound = LINE_DROP_FUNCTION; bound <= LINE_DROP_SERIES; bound++)
			metrics__lines_dropped(u->req->collector->metrics, bound,
					       u->items[i].lines_dropped[bound]);
	store_links(u);
	return answer(u, resp, json);
}

static void upload_release(struct otlp_upload *u)
{
	for (size_t i = 0; i < u->n_items; i++) {
		stack_agg__free(u->items[i].agg);
		line_agg__free(u->items[i].lines);
		link_batch__free(u->items[i].links);
	}
	free(u->items);
	otlp_request__free(u->otlp);
	decode_share__release(&u->share);
}

int handle_otlp_profiles(const struct request *req, struct response *resp)
{
	struct otlp_upload u = {.req = req};
	bool json;
	int err = 0;

	clock_gettime(CLOCK_MONOTONIC, &u.start);
	if (content_kind(req, &json)) {
		metrics__reject(req->collector->metrics, REJECT_CONTENT_TYPE);
		return response__error(resp, 415, "unsupported_media_type",
				       "send application/x-protobuf or application/json (gzip is "
				       "detected by its magic bytes)");
	}
	if (!req->body_len)
		return response__error(resp, 400, "bad_profile", "empty body");
	u.share.budget = &req->collector->decode;
	if (decode(req, json, &u.share, &u.otlp, resp)) {
		decode_share__release(&u.share);
		return 0;
	}
	u.n_items = otlp_request__n_profiles(u.otlp);
	u.items = calloc(u.n_items ? u.n_items : 1, sizeof(*u.items));
	if (!u.items || checks(&u, resp)) {
		if (!u.items)
			response__error(resp, 500, "internal", "out of memory");
		goto out;
	}
	if (within_sample_limit(&u, resp))
		goto out;
	for (size_t i = 0; i < u.n_items && !err; i++)
		if (!u.items[i].rejected)
			err = reduce_profile(&u, i);
	if (!err) /* the last samples' growth too */
		err = upload_limits__check_memory(&u.lim, &u.share, held_bytes(&u, u.stacks_before),
						  u.n_samples, u.n_samples, u.why, sizeof(u.why));
	if (err == -E2BIG)
		ingest_reject(req, resp, REJECT_TOO_MANY_STACKS, 413, "too_many_stacks", u.why);
	else if (err == -ENOSPC)
		ingest_reject(req, resp, REJECT_TOO_MUCH_MEMORY, 413, "too_much_memory", u.why);
	else if (err == -EBUSY)
		ingest_answer_decode_busy(req, resp, u.why);
	else if (err)
		response__error(resp, 500, "internal", "out of memory");
	else
		store_and_answer(&u, resp, json);
out:
	upload_release(&u);
	return 0;
}
