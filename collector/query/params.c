/* SPDX-License-Identifier: Apache-2.0 */
/* Read-endpoint parameters: profile type table, time and duration parsing, windows aligned
 * to rollup buckets. Validation errors are one line, ready for a 400's detail. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "duration.h"
#include "ingest/span_context.h"
#include "query/params.h"
#include "rfc3339.h"

#define MAX_WINDOW_SECONDS (400LL * 86400)

static const struct profile_type_info profile_types[] = {
    {"cpu", "nanoseconds", false, "cpu", "cpu", "nanoseconds"},
    {"wall", "nanoseconds", false, "wall", "wall", "nanoseconds"},
    {"offcpu", "nanoseconds", false, "off_cpu", "off_cpu", "nanoseconds"},
    {"heap", "bytes", true, "inuse_space", "space", "bytes"},
    {"alloc", "bytes", false, "alloc_space", "space", "bytes"},
    /* The object counts of alloc uploads that carry alloc_objects/count: "how often". */
    {"alloc_objects", "count", false, "alloc_objects", "space", "bytes"},
    {"lock", "nanoseconds", false, "delay", "contentions", "count"},
};

const struct profile_type_info *profile_type_lookup(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < sizeof(profile_types) / sizeof(profile_types[0]); i++)
		if (strcmp(profile_types[i].name, name) == 0)
			return &profile_types[i];
	return NULL;
}

static int fail(char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t err_len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, err_len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int query_parse_duration(const char *s, int64_t *ret_seconds)
{
	int64_t ms;

	/* A window names a unit of a second or more ("15m", "7d"): bare numbers and ms are
	 * refused here, though the shared grammar has them. */
	if (!duration_has_seconds_unit(s) || duration_parse_ms(s, &ms) || ms <= 0 ||
	    ms / 1000 > MAX_WINDOW_SECONDS)
		return -EINVAL;
	*ret_seconds = ms / 1000;
	return 0;
}

static int64_t floor_div(int64_t a, int64_t b)
{
	return a >= 0 ? a / b : -((-a + b - 1) / b);
}

struct query_window query_window__align(struct query_window w)
{
	struct query_window a;

	a.start = floor_div(w.start, BUCKET_SECONDS) * BUCKET_SECONDS;
	a.end = -floor_div(-w.end, BUCKET_SECONDS) * BUCKET_SECONDS;
	if (a.end <= a.start)
		a.end = a.start + BUCKET_SECONDS;
	return a;
}

static bool is_preset(const char *s)
{
	static const char *const presets[] = {"15m", "1h", "6h", "24h", "7d", "30d"};

	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
		if (strcmp(presets[i], s) == 0)
			return true;
	return false;
}

/* The end of a window ending now: past now's own second, which holds what was stamped in it.
 * Ending at now itself, a window read on a bucket's first second ends before that bucket, and
 * an upload acknowledged in that second is missing from a read right after it. */
static int64_t now_end(int64_t now)
{
	return now + 1;
}

int query_window_parse(param_getter get, const void *ctx, const char *prefix, int64_t now,
		       int64_t default_range, struct query_window *ret, char *err, size_t err_len)
{
	char k_start[32], k_end[32];
	const char *range = *prefix ? NULL : get(ctx, "time_range");
	const char *start, *end;
	struct query_window w;
	int64_t seconds;

	snprintf(k_start, sizeof(k_start), "%sstart", prefix);
	snprintf(k_end, sizeof(k_end), "%send", prefix);
	start = get(ctx, k_start);
	end = get(ctx, k_end);
	if (range && (start || end))
		return fail(err, err_len, "give either time_range or start/end, not both");
	if (range) {
		if (!is_preset(range))
			return fail(err, err_len,
				    "time_range \"%.32s\" is not one of 15m, 1h, 6h, 24h, 7d, 30d",
				    range);
		query_parse_duration(range, &seconds);
		w.start = now - seconds;
		w.end = now_end(now);
	} else if (start || end) {
		if (!start || !end)
			return fail(err, err_len, "%s and %s go together", k_start, k_end);
		if (time_text_parse(start, &w.start))
			return fail(err, err_len,
				    "%s \"%.40s\" is neither RFC 3339 nor unix seconds", k_start,
				    start);
		if (time_text_parse(end, &w.end))
			return fail(err, err_len,
				    "%s \"%.40s\" is neither RFC 3339 nor unix seconds", k_end,
				    end);
		if (w.end <= w.start)
			return fail(err, err_len, "%s must be after %s", k_end, k_start);
		if (w.end - w.start > MAX_WINDOW_SECONDS)
			return fail(err, err_len, "window longer than 400 days");
	} else if (default_range > 0) {
		w.start = now - default_range;
		w.end = now_end(now);
	} else {
		return fail(err, err_len, "missing %s and %s", k_start, k_end);
	}
	*ret = query_window__align(w);
	return 0;
}

const char query_param_repeated[] = "\x01(repeated)";

static int copy_name(const char *key, const char *v, char *dst, char *err, size_t err_len)
{
	size_t n = strlen(v);

	if (v == query_param_repeated)
		return fail(err, err_len, "%s is given more than once", key);
	if (n == 0 || n >= STORE_NAME_MAX)
		return fail(err, err_len, "%s must be 1 to %d characters", key, STORE_NAME_MAX - 1);
	memcpy(dst, v, n + 1);
	return 0;
}

static int parse_profile_type(const char *v, const struct profile_type_info **ret, char *err,
			      size_t err_len)
{
	if (v == query_param_repeated)
		return fail(err, err_len,
			    "profile_type is given more than once: one measurement per query, "
			    "never merged");
	if (!v || !*v)
		return fail(
		    err, err_len,
		    "profile_type is required (cpu, wall, offcpu, heap, alloc, alloc_objects "
		    "or lock): measurements are never merged");
	if (strpbrk(v, ", +;|"))
		return fail(err, err_len,
			    "one profile_type per query, got \"%.40s\": measurements are never "
			    "merged",
			    v);
	*ret = profile_type_lookup(v);
	if (!*ret)
		return fail(err, err_len,
			    "unknown profile_type \"%.40s\" (cpu, wall, offcpu, heap, alloc, "
			    "alloc_objects or lock)",
			    v);
	return 0;
}

/* trace_id= (1-32 hex digits), span_id= (1-16) and include_children: the span links'
 * filters. */
static int parse_span_ids(param_getter get, const void *ctx, struct query_params *ret, char *err,
			  size_t err_len)
{
	const char *trace_id = get(ctx, "trace_id"), *span_id = get(ctx, "span_id");

	if (trace_id && (trace_id == query_param_repeated ||
			 !span_id_normalise(trace_id, TRACE_ID_HEX - 1, ret->trace_id)))
		return fail(err, err_len,
			    "trace_id must be given once, as 1 to 32 hex digits (not all zeros)");
	if (span_id && (span_id == query_param_repeated ||
			!span_id_normalise(span_id, SPAN_ID_HEX - 1, ret->span_id)))
		return fail(err, err_len,
			    "span_id must be given once, as 1 to 16 hex digits (not all zeros)");
	if (query_param_bool(get, ctx, "include_children", &ret->include_children, err, err_len))
		return -EINVAL;
	if (ret->include_children && !span_id)
		return fail(err, err_len, "include_children needs span_id");
	return 0;
}

int query_param_bool(param_getter get, const void *ctx, const char *key, bool *ret, char *err,
		     size_t err_len)
{
	const char *v = get(ctx, key);

	*ret = v && !strcmp(v, "true");
	if (!v || !strcmp(v, "true") || !strcmp(v, "false"))
		return 0;
	return fail(err, err_len, "%s must be true or false", key);
}

int query_params_parse(param_getter get, const void *ctx, int64_t now, int64_t default_range,
		       struct query_params *ret, char *err, size_t err_len)
{
	const char *service = get(ctx, "service");
	const char *deployment = get(ctx, "deployment");
	int err_;

	memset(ret, 0, sizeof(*ret));
	if (!service)
		return fail(err, err_len, "service is required");
	err_ = copy_name("service", service, ret->service, err, err_len);
	if (err_)
		return err_;
	err_ = parse_profile_type(get(ctx, "profile_type"), &ret->type, err, err_len);
	if (err_)
		return err_;
	if (deployment) {
		err_ = copy_name("deployment", deployment, ret->deployment, err, err_len);
		if (err_)
			return err_;
		ret->has_deployment = true;
	}
	if (get(ctx, "node")) {
		err_ = copy_name("node", get(ctx, "node"), ret->node, err, err_len);
		if (err_)
			return err_;
		ret->has_node = true;
	}
	err_ = parse_span_ids(get, ctx, ret, err, err_len);
	if (err_)
		return err_;
	return query_window_parse(get, ctx, "", now, default_range, &ret->window, err, err_len);
}

int query_param_int(param_getter get, const void *ctx, const char *key, int64_t def, int64_t min,
		    int64_t max, int64_t *ret, char *err, size_t err_len)
{
	const char *v = get(ctx, key);
	char *end;
	long long n;

	if (!v) {
		*ret = def;
		return 0;
	}
	errno = 0;
	n = strtoll(v, &end, 10);
	if (errno || end == v || *end != '\0' || n < min || n > max)
		return fail(err, err_len, "%s must be an integer from %lld to %lld", key,
			    (long long)min, (long long)max);
	*ret = n;
	return 0;
}

void query_params__window_query(const struct query_params *p, const char *environment,
				struct query_window w, const char *deployment, const char *node,
				struct window_query *ret)
{
	ret->node = node;
	ret->environment = environment;
	ret->service = p->service;
	ret->profile_type = p->type->name;
	ret->deployment = deployment;
	ret->start = w.start;
	ret->end = w.end;
}
