// SPDX-License-Identifier: Apache-2.0
/* POST /ingest (collector token, also as a Basic password): Pyroscope's HTTP ingest, as its
 * SDKs and Grafana Alloy send it. The name gives service, deployment and type; the body, pprof
 * or folded, goes through the same pprof ingest path as /api/apm/profiles (ingest.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "crypto.h"
#include "http/auth.h"
#include "http/respond.h"
#include "http/validate.h"
#include "ingest/folded.h"
#include "ingest/handlers.h"
#include "ingest/ingest.h"
#include "ingest/pyroscope_name.h"
#include "pprof.h"

#define DEFAULT_SAMPLE_RATE_HZ 100 /* Pyroscope's default for folded uploads */
#define NS_PER_S 1000000000LL

enum body_format { FORMAT_PPROF, FORMAT_FOLDED };

/* The query beside the name: format, time range, sample rate. */
struct pyroscope_params {
	enum body_format format;
	int64_t from_s, until_s; /* 0 when not given */
	int64_t sample_rate_hz;
};

/* With no type suffix, a pprof is stored as the first of these it has a sample type for:
 * wall before cpu, so a wall-clock profile is never taken for CPU time. */
static const char *const inferred_types[] = {"wall", "cpu", "heap", "alloc", "lock"};

/* Unix seconds; Pyroscope's clients also send milliseconds or nanoseconds, told by size. */
static int parse_time(const char *s, int64_t *ret)
{
	char *end;
	long long v;

	*ret = 0;
	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v < 0)
		return -EINVAL;
	*ret = v >= 100000000000000000LL ? v / NS_PER_S : v >= 100000000000LL ? v / 1000 : v;
	return 0;
}

/* 0, or a status (400, 415) with the reason in why. */
static int parse_params(const struct request *req, struct pyroscope_params *p, char *why,
			size_t why_len)
{
	const char *format = request__query(req, "format");
	const char *rate = request__query(req, "sampleRate");
	char *end;

	p->format = format && strcmp(format, "pprof") == 0 ? FORMAT_PPROF : FORMAT_FOLDED;
	if (format && *format && strcmp(format, "pprof") && strcmp(format, "folded")) {
		snprintf(why, why_len, "format=%.32s is not supported: send pprof or folded",
			 format);
		return 415;
	}
	if (parse_time(request__query(req, "from"), &p->from_s) ||
	    parse_time(request__query(req, "until"), &p->until_s)) {
		snprintf(why, why_len, "from and until are unix times (seconds)");
		return 400;
	}
	if (p->from_s && p->until_s && p->until_s < p->from_s) {
		snprintf(why, why_len, "until is before from");
		return 400;
	}
	p->sample_rate_hz = DEFAULT_SAMPLE_RATE_HZ;
	if (rate && *rate) {
		errno = 0;
		p->sample_rate_hz = strtoll(rate, &end, 10);
		if (errno || *end || p->sample_rate_hz <= 0 || p->sample_rate_hz > NS_PER_S) {
			snprintf(why, why_len, "sampleRate is samples per second, 1 to 1000000000");
			return 400;
		}
	}
	return 0;
}

/* The stored type from the name's suffix; 422 for a type RootTrace does not store. */
static int choose_types(const struct pyroscope_name *n, const struct pyroscope_params *p,
			struct upload *u, const struct type_fit **candidates, char *why,
			size_t why_len)
{
	char accepted[256];

	if (!n->type) {
		/* Pyroscope stores a folded upload without a suffix as CPU samples. */
		if (p->format == FORMAT_FOLDED) {
			u->fit = ingest_type_fit("cpu");
			return 0;
		}
		for (size_t i = 0; i < sizeof(inferred_types) / sizeof(inferred_types[0]); i++)
			candidates[u->n_candidates++] = ingest_type_fit(inferred_types[i]);
		u->candidates = candidates;
		return 0;
	}
	pyroscope_types_accepted(accepted, sizeof(accepted));
	if (!n->type->profile_type || (p->format == FORMAT_FOLDED && n->type->counts_objects)) {
		snprintf(
		    why, why_len, "profile type %s is not stored%s; accepted: %s", n->type->name,
		    n->type->profile_type ? " from folded stacks (they count objects, not bytes)"
					  : "",
		    accepted);
		return 422;
	}
	u->fit = ingest_type_fit(n->type->profile_type);
	return 0;
}

/* Service, deployment and type from the name; 0, or a status with why. */
static int parse_name(const struct request *req, const struct pyroscope_name *n,
		      const struct pyroscope_params *p, struct upload *u,
		      const struct type_fit **candidates, char *why, size_t why_len)
{
	const char *version = pyroscope_name__label(n, "service_version");

	auth_environment(req, NULL, &u->environment);
	u->service = pyroscope_name__label(n, "service_name");
	if (!u->service)
		u->service = n->app;
	if (validate_name("service", u->service, why, why_len))
		return 400;
	u->deployment = version ? version : pyroscope_name__label(n, "version");
	if (u->deployment && *u->deployment &&
	    validate_name("deployment", u->deployment, why, why_len))
		return 400;
	if (!u->deployment)
		u->deployment = "";
	return choose_types(n, p, u, candidates, why, why_len);
}

/* A resend of the same bytes for the same name and window merges once (Pyroscope's clients
 * retry failed uploads and send no id of their own). */
static int derive_upload_id(const struct request *req, const char *name,
			    char id[2 * SHA256_LEN + 16])
{
	uint8_t body_hash[SHA256_LEN], hash[SHA256_LEN];
	char key[PYROSCOPE_NAME_MAX + 2 * SHA256_LEN + 128];
	const char *from = request__query(req, "from"), *until = request__query(req, "until");
	const char *format = request__query(req, "format");
	int len;

	if (sha256(req->body, req->body_len, body_hash))
		return -EIO;
	len = snprintf(key, sizeof(key), "%s\n%s\n%s\n%s\n", name, from ? from : "",
		       until ? until : "", format ? format : "");
	if (len < 0 || (size_t)len + SHA256_LEN > sizeof(key))
		return -EINVAL;
	memcpy(key + len, body_hash, SHA256_LEN);
	if (sha256(key, (size_t)len + SHA256_LEN, hash))
		return -EIO;
	len = snprintf(id, 2 * SHA256_LEN + 16, "pyroscope:");
	for (size_t i = 0; i < SHA256_LEN; i++)
		len += snprintf(id + len, 2 * SHA256_LEN + 16 - len, "%02x", hash[i]);
	return 0;
}

/* ------------------------------------------------------------------- folded ---- */

struct folded_build {
	struct pprof_builder *builder;
	int64_t ns_per_count; /* > 0 for time types: a folded value counts samples */
	int64_t sample_rate_hz;
	uint64_t location_ids[FOLDED_MAX_FRAMES];
};

static int add_folded_stack(void *ctx, const char *const *frames, size_t n_frames, int64_t value)
{
	struct folded_build *fb = ctx;
	__int128 scaled = value;

	if (fb->ns_per_count) {
		scaled = (__int128)value * NS_PER_S / fb->sample_rate_hz;
		if (scaled > INT64_MAX)
			return -EOVERFLOW;
	}
	for (size_t i = 0; i < n_frames; i++) {
		fb->location_ids[i] = pprof_builder__location(fb->builder, frames[i], 0);
		if (!fb->location_ids[i])
			return -ENOMEM;
	}
	value = (int64_t)scaled;
	return pprof_builder__add_sample(fb->builder, fb->location_ids, n_frames, &value, NULL, 0);
}

/* The folded body as a pprof of u's sample type (time types: counts × 1/sampleRate s). */
static int folded_to_pprof(const struct request *req, const struct upload *u,
			   const struct pyroscope_params *p, uint8_t **ret, size_t *ret_len,
			   char *why, size_t why_len)
{
	struct pprof_value_type type = {u->fit->sample_type, u->fit->unit};
	/* cpu and wall folded values count samples; lock's are nanoseconds, heap's bytes. */
	bool is_time =
	    !strcmp(u->fit->profile_type, "cpu") || !strcmp(u->fit->profile_type, "wall");
	struct pprof_builder_options opts = {
	    .sample_types = &type,
	    .n_sample_types = 1,
	    .period_type = type,
	    .period = is_time ? NS_PER_S / p->sample_rate_hz : 0,
	    .time_nanos = p->from_s * NS_PER_S,
	};
	struct folded_build *fb = calloc(1, sizeof(*fb));
	int err = -ENOMEM;

	if (fb)
		fb->builder = pprof_builder__new(&opts);
	if (!fb || !fb->builder)
		goto out;
	fb->ns_per_count = is_time ? opts.period : 0;
	fb->sample_rate_hz = p->sample_rate_hz;
	err = folded_parse((const char *)req->body, req->body_len, add_folded_stack, fb, why,
			   why_len);
	if (err == -EOVERFLOW)
		snprintf(why, why_len,
			 "a folded value overflows 64 bits once scaled to nanoseconds");
	if (!err)
		err = pprof_builder__encode(fb->builder, ret, ret_len);
out:
	if (fb)
		pprof_builder__free(fb->builder);
	free(fb);
	return err;
}

/* ------------------------------------------------------------------ handler ---- */

/* Pyroscope reads the body whatever its Content-Type says (its clients send octet-stream,
 * binary/octet-stream, curl's form default...), except multipart, which it parses: refused.
 * 0, or RESPONDED with a 415. */
static int check_content_type(const struct request *req, struct response *resp)
{
	if (!req->content_type || strncasecmp(req->content_type, "multipart/", 10) != 0)
		return 0;
	ingest_reject(req, resp, REJECT_CONTENT_TYPE, 415, "unsupported_media_type",
		      "multipart uploads (pyroscope-go's) are not supported: send the profile as "
		      "the raw body");
	return RESPONDED;
}

static int ingest_folded(const struct request *req, struct response *resp, const struct upload *u,
			 const struct pyroscope_params *p, const struct timespec *start)
{
	uint8_t *pb = NULL;
	size_t pb_len = 0;
	char why[320];
	int err;

	if (!req->body_len)
		return ingest_reject(req, resp, REJECT_BAD_PPROF, 400, "bad_profile", "empty body");
	err = folded_to_pprof(req, u, p, &pb, &pb_len, why, sizeof(why));
	if (err == -ENOMEM)
		return response__error(resp, 500, "internal", "out of memory");
	if (err)
		return ingest_reject(req, resp, REJECT_BAD_PPROF, 400, "bad_profile", why);
	ingest_pprof(req, resp, u, pb, pb_len, start);
	free(pb);
	return 0;
}

/* Answers a refusal decided before the body is read. */
static void reject_request(const struct request *req, struct response *resp, int status,
			   const char *why)
{
	switch (status) {
	case 415:
		ingest_reject(req, resp, REJECT_CONTENT_TYPE, status, "unsupported_media_type",
			      why);
		break;
	case 422:
		ingest_reject(req, resp, REJECT_NO_SAMPLE_TYPE, status, "unknown_profile_type",
			      why);
		break;
	case 500:
		response__error(resp, status, "internal", "%s", why);
		break;
	default:
		ingest_reject(req, resp, REJECT_BAD_REQUEST, status, "bad_request", why);
	}
}

int handle_pyroscope_ingest(const struct request *req, struct response *resp)
{
	const struct type_fit *candidates[sizeof(inferred_types) / sizeof(inferred_types[0])];
	const char *name_text = request__query(req, "name");
	struct pyroscope_params params;
	struct pyroscope_name *name;
	char why[512], upload_id[2 * SHA256_LEN + 16];
	struct timespec start;
	struct upload u = {0};
	int status;

	clock_gettime(CLOCK_MONOTONIC, &start);
	name = malloc(sizeof(*name));
	if (!name)
		return response__error(resp, 500, "internal", "out of memory");
	status = parse_params(req, &params, why, sizeof(why));
	if (!status && pyroscope_name_parse(name_text, name, why, sizeof(why)))
		status = 400;
	if (!status)
		status = parse_name(req, name, &params, &u, candidates, why, sizeof(why));
	if (!status && derive_upload_id(req, name_text, upload_id))
		status = 500;
	if (status) {
		reject_request(req, resp, status,
			       status == 500 ? "could not hash the upload" : why);
	} else if (!check_content_type(req, resp)) {
		u.upload_id = upload_id;
		u.time_s = params.from_s;
		if (params.format == FORMAT_PPROF)
			ingest_pprof(req, resp, &u, req->body, req->body_len, &start);
		else
			ingest_folded(req, resp, &u, &params, &start);
	}
	free(name);
	return 0;
}
