// SPDX-License-Identifier: Apache-2.0
/* Unit tests of the collector's pure rules: config clamping and inheritance, name validation,
 * stack aggregation (root first, merged, sanitised), the route table's auth decisions. */
#include <errno.h>

#include "control/config.h"
#include "http/routes.h"
#include "ingest/stack_agg.h"
#include "http/validate.h"
#include "test.h"

TEST(clamps_sample_rate_upload_and_poll_intervals)
{
	CHECK_EQ_INT(clamp_sample_rate_hz(10000), 200);
	CHECK_EQ_INT(clamp_sample_rate_hz(1), 10);
	CHECK_EQ_INT(clamp_sample_rate_hz(-5), 10);
	CHECK_EQ_INT(clamp_sample_rate_hz(99), 99);
	CHECK_EQ_INT(clamp_upload_interval_s(1), 10);
	CHECK_EQ_INT(clamp_upload_interval_s(1LL << 40), 3600);
	CHECK_EQ_INT(clamp_poll_interval_s(600), 60);
}

TEST(effective_config_inherits_and_clamps_on_read)
{
	struct settings_record env = {.has_enabled = true,
				      .enabled = false,
				      .has_sample_rate_hz = true,
				      .sample_rate_hz = 5000};
	struct settings_record svc = {.has_enabled = true,
				      .enabled = true,
				      .has_upload_interval_s = true,
				      .upload_interval_s = 2};
	struct effective_config def = config_effective(NULL, NULL);
	struct effective_config e = config_effective(&env, &svc);

	CHECK(!def.enabled); /* off until turned on */
	CHECK(e.enabled);
	CHECK_EQ_INT(e.sample_rate_hz, 200);
	CHECK_EQ_INT(e.upload_interval_s, 10);
	CHECK_EQ_INT(e.poll_interval_s, DEFAULT_POLL_INTERVAL_S);
}

TEST(names_reject_empty_long_and_control_characters)
{
	char why[128], long_name[200];

	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	CHECK_EQ_INT(validate_name("service", "checkout-api", why, sizeof(why)), 0);
	CHECK_EQ_INT(validate_name("service", "", why, sizeof(why)), -EINVAL);
	CHECK_EQ_INT(validate_name("service", NULL, why, sizeof(why)), -EINVAL);
	CHECK_EQ_INT(validate_name("service", long_name, why, sizeof(why)), -EINVAL);
	CHECK(strstr(why, "service") != NULL);
	CHECK_EQ_INT(validate_name("service", "a\tb", why, sizeof(why)), -EINVAL);
	CHECK_EQ_INT(validate_name("service", "a\x7f", why, sizeof(why)), -EINVAL);
}

/* The name of frame f (root first) of an aggregated stack. */
static const char *frame_name(const struct stack_agg *a, const struct stack_value *sv, size_t f)
{
	const uint8_t *pos = sv->frames;
	size_t n;
	const char *const *names = stack_agg__names(a, &n);
	uint32_t index = stack_frame_next(&pos);

	for (size_t i = 0; i < f; i++)
		index = stack_frame_next(&pos);
	return index < n ? names[index] : "(out of range)";
}

TEST(stacks_become_root_first_and_identical_ones_merge)
{
	/* Two copies of "work" at different addresses: merged by content, not pointer. */
	static char work_a[] = "work", work_b[] = "work";
	const char *s1[] = {work_a, "main"}, *s2[] = {work_b, "main"}, *s3[] = {"main"};
	struct stack_agg *a = stack_agg__new();
	const struct stack_value *sv;
	size_t n;

	CHECK(a);
	CHECK_EQ_INT(stack_agg__add(a, s1, 2, 10), 0);
	CHECK_EQ_INT(stack_agg__add(a, s2, 2, 5), 0);
	CHECK_EQ_INT(stack_agg__add(a, s3, 1, 1), 0);
	CHECK_EQ_INT(stack_agg__add(a, NULL, 0, 2), 0);
	sv = stack_agg__stacks(a, &n);
	CHECK_EQ_INT(n, 3);
	CHECK_EQ_INT(sv[0].n_frames, 2);
	CHECK_EQ_STR(frame_name(a, &sv[0], 0), "main");
	CHECK_EQ_STR(frame_name(a, &sv[0], 1), "work");
	CHECK_EQ_INT(sv[0].value, 15);
	CHECK_EQ_INT(sv[1].value, 1);
	CHECK_EQ_STR(frame_name(a, &sv[2], 0), "[unknown]");
	stack_agg__names(a, &n);
	CHECK_EQ_INT(n, 3); /* main, work, [unknown]: each name once */
	CHECK_EQ_INT(stack_agg__total(a), 18);
	stack_agg__free(a);
}

TEST(control_characters_in_frames_are_replaced)
{
	const char *s[] = {"evil\nname", "main"};
	struct stack_agg *a = stack_agg__new();
	const struct stack_value *sv;
	size_t n;

	CHECK(a);
	CHECK_EQ_INT(stack_agg__add(a, s, 2, 1), 0);
	sv = stack_agg__stacks(a, &n);
	CHECK_EQ_STR(frame_name(a, &sv[0], 1), "evil?name");
	stack_agg__free(a);
}

TEST(merged_values_refuse_to_overflow)
{
	const char *s[] = {"main"};
	struct stack_agg *a = stack_agg__new();

	CHECK(a);
	CHECK_EQ_INT(stack_agg__add(a, s, 1, INT64_MAX), 0);
	CHECK_EQ_INT(stack_agg__add(a, s, 1, 1), -EOVERFLOW);
	stack_agg__free(a);
}

TEST(route_table_auth_decisions)
{
	const struct route *r;

	CHECK_EQ_INT(routes_find("PUT", "/api/apm/config", &r), 0);
	CHECK_EQ_INT(r->kinds, ROUTE_KIND_USER);
	CHECK_EQ_INT(r->min_role, TOKEN_ROLE_ENGINEER);
	CHECK_EQ_INT(routes_find("POST", "/api/apm/profiles", &r), 0);
	CHECK_EQ_INT(r->kinds, ROUTE_KIND_COLLECTOR);
	CHECK_EQ_INT(routes_find("POST", "/api/apm/deployments", &r), 0);
	CHECK_EQ_INT(r->kinds, ROUTE_KIND_COLLECTOR | ROUTE_KIND_USER);
	CHECK_EQ_INT(routes_find("GET", "/healthz", &r), 0);
	CHECK_EQ_INT(r->kinds, 0);
	CHECK_EQ_INT(routes_find("DELETE", "/api/apm/config", &r), -EOPNOTSUPP);
	CHECK_EQ_INT(routes_find("GET", "/nope", &r), -ENOENT);
	CHECK_EQ_INT(routes_find("GET", "/api/apm/config", &r), 0);
	CHECK_EQ_INT(r->kinds, ROUTE_KIND_COLLECTOR | ROUTE_KIND_USER);
	CHECK_EQ_INT(r->min_role, TOKEN_ROLE_VIEWER);
}

/* The prefix route matches the files under /ui/ only; "/" is the page alone, not a prefix. */
TEST(prefix_route_serves_the_ui_files_only)
{
	const struct route *r, *page;

	CHECK_EQ_INT(routes_find("GET", "/", &page), 0);
	CHECK_EQ_INT(page->kinds, 0);
	CHECK_EQ_INT(routes_find("GET", "/ui/app.js", &r), 0);
	CHECK(r->handler == page->handler);
	CHECK_EQ_INT(r->kinds, 0);
	CHECK_EQ_INT(routes_find("GET", "/ui", &r), -ENOENT);
	CHECK_EQ_INT(routes_find("GET", "/uix/app.js", &r), -ENOENT);
	CHECK_EQ_INT(routes_find("GET", "/index.html", &r), -ENOENT);
	CHECK_EQ_INT(routes_find("POST", "/ui/app.js", &r), -EOPNOTSUPP);
}

TEST_MAIN("collector-core", T(clamps_sample_rate_upload_and_poll_intervals),
	  T(effective_config_inherits_and_clamps_on_read),
	  T(names_reject_empty_long_and_control_characters),
	  T(stacks_become_root_first_and_identical_ones_merge),
	  T(control_characters_in_frames_are_replaced), T(merged_values_refuse_to_overflow),
	  T(route_table_auth_decisions), T(prefix_route_serves_the_ui_files_only))
