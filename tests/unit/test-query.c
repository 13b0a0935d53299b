/* SPDX-License-Identifier: Apache-2.0 */
/* Query unit tests with hand-computed answers: top (recursion once per stack), the product
 * docs' diff (Decode +19.5 pts first), normalisation, cost (3,600 CPU-s/h = 730), heap as a
 * gauge, collapsed stacks, and parameter validation. */
#include <errno.h>
#include <math.h>

#include "test.h"
#include "query_fixture.h"

#include "query/query.h"
#include "query/params.h"

#define CLOSE(a, b) (fabs((a) - (b)) < 1e-9)

static const struct function_stat *func(const struct function_table *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->funcs[i].name, name) == 0)
			return &t->funcs[i];
	return NULL;
}

static const struct diff_mover *mover(const struct diff_result *d, const char *name)
{
	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->movers[i].name, name) == 0)
			return &d->movers[i];
	return NULL;
}

TEST(top_ranks_by_self_with_total_beside)
{
	static const char *const lines[] = {"main;a;b 10", "main;a 5", "main;c 20", "main;a;b 1",
					    NULL};
	struct merged_window w = fixture_window(lines, 1);
	struct function_table t;

	CHECK_EQ_INT(query_functions(&w, &t), 0);
	CHECK_EQ_INT(t.total, 36);
	CHECK_EQ_INT(t.n, 4);
	CHECK_EQ_STR(t.funcs[0].name, "c");
	CHECK_EQ_STR(t.funcs[1].name, "b");
	CHECK_EQ_INT(t.funcs[1].self, 11);
	CHECK_EQ_STR(t.funcs[2].name, "a");
	CHECK_EQ_INT(t.funcs[2].self, 5);
	CHECK_EQ_INT(t.funcs[2].total, 16);
	CHECK_EQ_STR(t.funcs[3].name, "main");
	CHECK_EQ_INT(t.funcs[3].self, 0);
	CHECK_EQ_INT(t.funcs[3].total, 36);
	CHECK(CLOSE(query_share(t.funcs[0].self, t.total), 20.0 * 100 / 36));
	function_table__release(&t);
	fixture_free(&w);
}

TEST(top_counts_recursion_once_per_stack)
{
	static const char *const lines[] = {"f;g;f;g;f 10", "f 5", "g 1", NULL};
	struct merged_window w = fixture_window(lines, 1);
	struct function_table t;

	CHECK_EQ_INT(query_functions(&w, &t), 0);
	CHECK_EQ_INT(t.total, 16);
	CHECK_EQ_INT(func(&t, "f")->self, 15);
	CHECK_EQ_INT(func(&t, "f")->total, 15); /* not 35 */
	CHECK_EQ_INT(func(&t, "g")->self, 1);
	CHECK_EQ_INT(func(&t, "g")->total, 11); /* not 21 */
	CHECK(func(&t, "f")->total <= t.total);
	function_table__release(&t);
	fixture_free(&w);
}

/* The product docs: before 7.02 s of samples, after 7.38 s (nanoseconds). */
static const char *const docs_before[] = {
    "main;serve;api/serialize.renderPayload 1123200000",		     /* 16.0 */
    "main;serve;api/serialize.renderPayload;encoding/json.Decode 631800000", /* 9.0 */
    "main;serve;api/serialize.renderPayload;encoding/json.Decode;runtime.mallocgc 421200000",
    "main;serve;handleOther 4843800000", /* 69.0 */
    NULL,
};
static const char *const docs_after[] = {
    "main;serve;api/serialize.renderPayload 1298880000",		      /* 17.6 */
    "main;serve;api/serialize.renderPayload;encoding/json.Decode 2103300000", /* 28.5 */
    "main;serve;api/serialize.renderPayload;encoding/json.Decode;runtime.mallocgc 885600000",
    "main;serve;handleOther 3092220000", /* 41.9 */
    NULL,
};

TEST(diff_product_docs_shares_and_ranking)
{
	struct merged_window b = fixture_window(docs_before, 1), a = fixture_window(docs_after, 1);
	const struct diff_mover *render, *decode, *malloc_, *other;
	struct diff_result d;

	CHECK_EQ_INT(query_diff(&b, &a, &d), 0);
	CHECK_EQ_INT(d.before_total, 7020000000LL);
	CHECK_EQ_INT(d.after_total, 7380000000LL);
	CHECK(d.has_total_change);
	CHECK(CLOSE(d.total_change_pct, 360.0 * 100 / 7020));
	render = mover(&d, "api/serialize.renderPayload");
	decode = mover(&d, "encoding/json.Decode");
	malloc_ = mover(&d, "runtime.mallocgc");
	other = mover(&d, "handleOther");
	CHECK(render && decode && malloc_ && other);
	CHECK(CLOSE(render->before_self_share, 16.0) && CLOSE(render->before_total_share, 31.0));
	CHECK(CLOSE(decode->before_self_share, 9.0) && CLOSE(decode->before_total_share, 15.0));
	CHECK(CLOSE(render->after_self_share, 17.6) && CLOSE(render->after_total_share, 58.1));
	CHECK(CLOSE(decode->after_self_share, 28.5) && CLOSE(decode->after_total_share, 40.5));
	CHECK_EQ_STR(d.movers[0].name, "encoding/json.Decode");
	CHECK(CLOSE(d.movers[0].delta_pts, 19.5));
	CHECK_EQ_STR(d.movers[1].name, "runtime.mallocgc");
	CHECK_EQ_STR(d.movers[2].name, "api/serialize.renderPayload");
	CHECK(CLOSE(d.movers[2].delta_pts, 1.6));
	CHECK_EQ_STR(d.movers[d.n - 1].name, "handleOther");
	CHECK(CLOSE(other->delta_pts, -27.1));
	for (size_t i = 1; i < d.n; i++)
		CHECK(d.movers[i - 1].delta_pts >= d.movers[i].delta_pts);
	diff_result__release(&d);
	fixture_free(&b);
	fixture_free(&a);
}

TEST(diff_normalises_each_side_to_its_own_total)
{
	static const char *const twice[] = {
	    "main;serve;api/serialize.renderPayload 2246400000",
	    "main;serve;api/serialize.renderPayload;encoding/json.Decode 1263600000",
	    "main;serve;api/serialize.renderPayload;encoding/json.Decode;runtime.mallocgc "
	    "842400000",
	    "main;serve;handleOther 9687600000",
	    NULL,
	};
	struct merged_window b = fixture_window(docs_before, 1), a = fixture_window(twice, 1);
	struct diff_result d;

	CHECK_EQ_INT(query_diff(&b, &a, &d), 0);
	CHECK(CLOSE(d.total_change_pct, 100.0));
	CHECK_EQ_INT(d.n, 6);
	for (size_t i = 0; i < d.n; i++)
		CHECK(fabs(d.movers[i].delta_pts) <= 0.1);
	diff_result__release(&d);
	fixture_free(&b);
	fixture_free(&a);
}

TEST(diff_one_side_only_functions_have_zero_on_the_other)
{
	static const char *const b_lines[] = {"main;old 30", "main;both 70", NULL};
	static const char *const a_lines[] = {"main;new 50", "main;both 50", NULL};
	struct merged_window b = fixture_window(b_lines, 1), a = fixture_window(a_lines, 1);
	const struct diff_mover *old, *new_;
	struct diff_result d;

	CHECK_EQ_INT(query_diff(&b, &a, &d), 0);
	CHECK_EQ_INT(d.n, 4);
	old = mover(&d, "old");
	new_ = mover(&d, "new");
	CHECK(old && new_);
	CHECK(CLOSE(old->before_self_share, 30.0) && CLOSE(old->after_self_share, 0.0));
	CHECK(CLOSE(old->after_total_share, 0.0));
	CHECK(CLOSE(new_->before_self_share, 0.0) && CLOSE(new_->after_self_share, 50.0));
	CHECK_EQ_STR(d.movers[0].name, "new");
	CHECK(CLOSE(d.movers[0].delta_pts, 50.0));
	CHECK_EQ_STR(d.movers[d.n - 1].name, "old");
	CHECK(CLOSE(d.total_change_pct, 0.0));
	diff_result__release(&d);
	fixture_free(&b);
	fixture_free(&a);
}

TEST(diff_empty_before_has_no_total_change)
{
	static const char *const none[] = {NULL};
	static const char *const a_lines[] = {"main 5", NULL};
	struct merged_window b = fixture_window(none, 0), a = fixture_window(a_lines, 1);
	struct diff_result d;

	CHECK_EQ_INT(query_diff(&b, &a, &d), 0);
	CHECK(!d.has_total_change);
	CHECK(CLOSE(d.movers[0].after_self_share, 100.0));
	diff_result__release(&d);
	fixture_free(&b);
	fixture_free(&a);
}

TEST(cost_3600_cpu_seconds_in_an_hour_is_730_vcpu_hours)
{
	static const char *const lines[] = {"main;work 3600000000000", "main;idle 900000000000",
					    NULL};
	struct merged_window w = fixture_window(lines, 1);
	struct cost_result c;
	const char *reason = NULL;

	CHECK_EQ_INT(query_cost(&w, profile_type_lookup("cpu"), 3600, &c, &reason), 0);
	CHECK_EQ_INT(c.n, 2);
	CHECK_EQ_STR(c.lines[0].name, "work");
	CHECK(CLOSE(c.lines[0].cpu_seconds, 3600.0));
	CHECK(CLOSE(c.lines[0].avg_vcpus, 1.0));
	CHECK(CLOSE(c.lines[0].vcpu_hours_per_month, 730.0));
	CHECK(CLOSE(c.lines[1].avg_vcpus, 0.25));
	CHECK(CLOSE(c.service.cpu_seconds, 4500.0));
	CHECK(CLOSE(c.service.vcpu_hours_per_month, 912.5));
	cost_result__release(&c);
	fixture_free(&w);
}

TEST(cost_is_null_with_a_reason_for_everything_but_cpu)
{
	static const char *const lines[] = {"main;work 3600000000000", NULL};
	static const char *const types[] = {"wall", "heap", "alloc", "lock"};
	struct merged_window w = fixture_window(lines, 1);

	for (size_t i = 0; i < 4; i++) {
		struct cost_result c;
		const char *reason = NULL;

		CHECK_EQ_INT(query_cost(&w, profile_type_lookup(types[i]), 3600, &c, &reason),
			     -EOPNOTSUPP);
		CHECK(reason && strlen(reason) > 10);
		CHECK_EQ_INT(c.n, 0);
	}
	fixture_free(&w);
}

TEST(heap_is_a_gauge_averaged_over_uploads)
{
	/* twelve hourly snapshots of 1 GB merge to 12 GB over 12 uploads: 1 GB, not 12 */
	static const char *const lines[] = {"main;cache 12000000000", "main;tiny 5", NULL};
	struct merged_window w = fixture_window(lines, 12), cpu = fixture_window(lines, 12);
	struct function_table t;

	merged_window__normalise(&w, profile_type_lookup("heap"));
	CHECK_EQ_INT(w.stacks[0].value, 1000000000);
	CHECK_EQ_INT(w.stacks[1].value, 0); /* 5/12 rounds to 0: skipped by queries */
	CHECK_EQ_INT(query_functions(&w, &t), 0);
	CHECK_EQ_INT(t.total, 1000000000);
	CHECK(!func(&t, "tiny"));
	function_table__release(&t);
	merged_window__normalise(&cpu, profile_type_lookup("cpu")); /* sums are untouched */
	CHECK_EQ_INT(cpu.stacks[0].value, 12000000000LL);
	fixture_free(&w);
	fixture_free(&cpu);
}

TEST(collapsed_lines_biggest_first)
{
	static const char *const lines[] = {"main;a 5", "main;b;c 20", "x;y 0", NULL};
	struct merged_window w = fixture_window(lines, 1);
	char *out;
	size_t len;

	CHECK_EQ_INT(query_collapsed(&w, &out, &len), 0);
	CHECK_EQ_STR(out, "main;b;c 20\nmain;a 5\n");
	CHECK_EQ_INT(len, strlen(out));
	free(out);
	fixture_free(&w);
}

/* ---- parameters ----------------------------------------------------------------------- */

static const char *kv_get(const void *ctx, const char *key)
{
	const char *const *kv = ctx;

	for (; kv[0]; kv += 2)
		if (strcmp(kv[0], key) == 0)
			return kv[1];
	return NULL;
}

TEST(params_durations_name_a_unit_of_a_second_or_more)
{
	int64_t t;

	CHECK_EQ_INT(query_parse_duration("15m", &t), 0);
	CHECK_EQ_INT(t, 900);
	CHECK_EQ_INT(query_parse_duration("30d", &t), 0);
	CHECK_EQ_INT(t, 30 * 86400);
	CHECK_EQ_INT(query_parse_duration("400d", &t), 0);
	CHECK_EQ_INT(query_parse_duration("401d", &t), -EINVAL);
	CHECK_EQ_INT(query_parse_duration("0m", &t), -EINVAL);
	CHECK_EQ_INT(query_parse_duration("5w", &t), -EINVAL);
	CHECK_EQ_INT(query_parse_duration("90", &t), -EINVAL);	   /* a bare number names no unit */
	CHECK_EQ_INT(query_parse_duration("1000ms", &t), -EINVAL); /* windows are whole seconds */
}

TEST(params_presets_end_now_and_align_to_buckets)
{
	const char *kv[] = {"service", "api", "profile_type", "cpu", "time_range", "1h", NULL};
	struct query_params p;
	char err[QUERY_ERR_MAX] = "";
	int64_t now = 1714564800 + 100; /* 100 s into a bucket */

	CHECK_EQ_INT(query_params_parse(kv_get, kv, now, 3600, &p, err, sizeof(err)), 0);
	CHECK_EQ_STR(p.service, "api");
	CHECK_EQ_STR(p.type->name, "cpu");
	CHECK_EQ_STR(p.type->unit, "nanoseconds");
	CHECK(!p.has_deployment);
	CHECK_EQ_INT(p.window.start, 1714564800 - 3600);
	CHECK_EQ_INT(p.window.end, 1714564800 + 300);
}

/* now on a bucket's edge is that bucket's first second: an upload stamped in it is read. */
TEST(params_window_ending_now_on_a_bucket_edge_reads_that_bucket)
{
	const char *preset[] = {"service", "api", "profile_type", "heap", "time_range", "1h", NULL};
	const char *none[] = {"service", "api", "profile_type", "heap", NULL};
	struct query_params p;
	char err[QUERY_ERR_MAX] = "";
	int64_t edge = 1714564800;

	CHECK_EQ_INT(query_params_parse(kv_get, preset, edge, 3600, &p, err, sizeof(err)), 0);
	CHECK_EQ_INT(p.window.start, edge - 3600);
	CHECK_EQ_INT(p.window.end, edge + 300);
	CHECK_EQ_INT(query_params_parse(kv_get, none, edge, 3600, &p, err, sizeof(err)), 0);
	CHECK_EQ_INT(p.window.end, edge + 300);
	/* its last second still ends the window with the bucket */
	CHECK_EQ_INT(query_params_parse(kv_get, preset, edge + 299, 3600, &p, err, sizeof(err)), 0);
	CHECK_EQ_INT(p.window.end, edge + 300);
}

TEST(params_explicit_window_and_deployment)
{
	const char *kv[] = {
	    "service", "api",	     "profile_type", "wall", "start", "2024-05-01T12:00:00Z",
	    "end",     "1714568400", "deployment",   "v2",   NULL};
	struct query_params p;
	char err[QUERY_ERR_MAX] = "";

	CHECK_EQ_INT(query_params_parse(kv_get, kv, 0, 3600, &p, err, sizeof(err)), 0);
	CHECK_EQ_INT(p.window.start, 1714564800);
	CHECK_EQ_INT(p.window.end - p.window.start, 3600);
	CHECK(p.has_deployment);
	CHECK_EQ_STR(p.deployment, "v2");
}

static int parse_err(const char *const *kv, char *err, size_t len)
{
	struct query_params p;

	return query_params_parse(kv_get, kv, 1714564800, 3600, &p, err, len);
}

TEST(params_refuse_missing_mixed_or_unknown_profile_type)
{
	const char *missing[] = {"service", "api", "time_range", "1h", NULL};
	const char *mixed[] = {"service", "api", "profile_type", "cpu,wall", NULL};
	const char *unknown[] = {"service", "api", "profile_type", "cpuwall", NULL};
	const char *no_service[] = {"profile_type", "cpu", NULL};
	char err[QUERY_ERR_MAX];

	CHECK_EQ_INT(parse_err(missing, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "profile_type is required"));
	CHECK_EQ_INT(parse_err(mixed, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "one profile_type"));
	CHECK_EQ_INT(parse_err(unknown, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "unknown profile_type"));
	CHECK_EQ_INT(parse_err(no_service, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "service"));
}

TEST(params_refuse_bad_windows)
{
	const char *preset[] = {"service", "a", "profile_type", "cpu", "time_range", "2h", NULL};
	const char *both[] = {"service", "a", "profile_type", "cpu", "time_range", "1h", "start",
			      "1",	 NULL};
	const char *half[] = {"service", "a", "profile_type", "cpu", "start", "1", NULL};
	const char *backwards[] = {"service", "a",   "profile_type", "cpu", "start",
				   "1000",    "end", "900",	     NULL};
	const char *garbage[] = {"service", "a",   "profile_type", "cpu", "start",
				 "soon",    "end", "900",	   NULL};
	char err[QUERY_ERR_MAX];

	CHECK_EQ_INT(parse_err(preset, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "15m, 1h"));
	CHECK_EQ_INT(parse_err(both, err, sizeof(err)), -EINVAL);
	CHECK_EQ_INT(parse_err(half, err, sizeof(err)), -EINVAL);
	CHECK_EQ_INT(parse_err(backwards, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "after"));
	CHECK_EQ_INT(parse_err(garbage, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "RFC 3339"));
}

TEST(params_int_bounds)
{
	const char *kv[] = {"max_nodes", "12", "limit", "-1", "bad", "7x", NULL};
	char err[QUERY_ERR_MAX];
	int64_t v;

	CHECK_EQ_INT(query_param_int(kv_get, kv, "max_nodes", 8192, 2, 100000, &v, err, 256), 0);
	CHECK_EQ_INT(v, 12);
	CHECK_EQ_INT(query_param_int(kv_get, kv, "absent", 8192, 2, 100000, &v, err, 256), 0);
	CHECK_EQ_INT(v, 8192);
	CHECK_EQ_INT(query_param_int(kv_get, kv, "limit", 50, 0, 10, &v, err, 256), -EINVAL);
	CHECK_EQ_INT(query_param_int(kv_get, kv, "bad", 50, 0, 10, &v, err, 256), -EINVAL);
}

TEST_MAIN("query", T(top_ranks_by_self_with_total_beside), T(top_counts_recursion_once_per_stack),
	  T(diff_product_docs_shares_and_ranking), T(diff_normalises_each_side_to_its_own_total),
	  T(diff_one_side_only_functions_have_zero_on_the_other),
	  T(diff_empty_before_has_no_total_change),
	  T(cost_3600_cpu_seconds_in_an_hour_is_730_vcpu_hours),
	  T(cost_is_null_with_a_reason_for_everything_but_cpu),
	  T(heap_is_a_gauge_averaged_over_uploads), T(collapsed_lines_biggest_first),
	  T(params_durations_name_a_unit_of_a_second_or_more),
	  T(params_presets_end_now_and_align_to_buckets),
	  T(params_window_ending_now_on_a_bucket_edge_reads_that_bucket),
	  T(params_explicit_window_and_deployment),
	  T(params_refuse_missing_mixed_or_unknown_profile_type), T(params_refuse_bad_windows),
	  T(params_int_bounds))
