// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the in-kernel per-service filter's cgroup set: only cgroups used by disabled,
 * cgroup-named services alone are excluded; exclusions outlive the windows that no longer
 * see them and end when their service is enabled again. */
#include <stdbool.h>
#include <string.h>

#include "service/exclusion.h"
#include "test.h"

static const char *enabled_services[4];

/* The services that are on: up to three, NULL-terminated. */
static void turn_on(const char *a, const char *b, const char *c)
{
	enabled_services[0] = a;
	enabled_services[1] = a ? b : NULL;
	enabled_services[2] = a && b ? c : NULL;
	enabled_services[3] = NULL;
}

static bool is_enabled(const char *service, void *ctx)
{
	for (size_t i = 0; i < 4 && enabled_services[i]; i++)
		if (!strcmp(enabled_services[i], service))
			return true;
	return false;
}

#define SAMPLE(id, svc, on, named)                                                                 \
	{                                                                                          \
		.cgroup_id = (id), .service = (svc), .enabled = (on), .cgroup_named = (named)      \
	}

static size_t ids_of(const struct exclusion *x, uint64_t *out)
{
	for (size_t i = 0; i < x->n; i++)
		out[i] = x->items[i].id;
	return x->n;
}

TEST(only_cgroups_of_disabled_named_services_alone_are_excluded)
{
	const struct exclusion_sample window[] = {
	    SAMPLE(30, "batch", false, true), /* disabled unit: excluded */
	    SAMPLE(10, "api", true, true),    /* enabled: kept */
	    SAMPLE(20, "cron", false, true),  /* shares 20 with an enabled service: kept */
	    SAMPLE(20, "web", true, true),
	    SAMPLE(1, "kworker", false, false), /* fallback name (root cgroup): kept */
	    SAMPLE(1, "python3", true, false),
	    SAMPLE(0, "lost", false, true), /* no id: never */
	    SAMPLE(30, "batch", false, true),
	};
	struct exclusion x = {0};
	uint64_t ids[8];
	bool changed;

	turn_on("api", "web", NULL);
	CHECK_EQ_INT(exclusion__update(&x, window, 8, is_enabled, NULL, &changed), 0);
	CHECK(changed);
	CHECK_EQ_INT(ids_of(&x, ids), 1);
	CHECK(ids[0] == 30);
	CHECK_EQ_STR(x.items[0].service, "batch");
	exclusion__clear(&x);
}

TEST(a_fallback_named_disabled_service_never_silences_its_cgroup)
{
	const struct exclusion_sample window[] = {SAMPLE(1, "kworker", false, false)};
	struct exclusion x = {0};
	bool changed;

	turn_on(NULL, NULL, NULL);
	CHECK_EQ_INT(exclusion__update(&x, window, 1, is_enabled, NULL, &changed), 0);
	CHECK(!changed);
	CHECK_EQ_INT(x.n, 0);
	CHECK(x.items == NULL); /* an empty set holds no memory */
}

TEST(exclusion_outlives_quiet_windows_and_ends_when_enabled_again)
{
	const struct exclusion_sample first[] = {SAMPLE(30, "batch", false, true),
						 SAMPLE(40, "etl", false, true)};
	const struct exclusion_sample later[] = {SAMPLE(10, "api", true, true)};
	struct exclusion x = {0};
	uint64_t ids[4];
	bool changed;

	turn_on("api", NULL, NULL);
	CHECK_EQ_INT(exclusion__update(&x, first, 2, is_enabled, NULL, &changed), 0);
	CHECK(changed);
	/* BPF drops 30 and 40 now, so later windows do not see them: they stay excluded */
	CHECK_EQ_INT(exclusion__update(&x, later, 1, is_enabled, NULL, &changed), 0);
	CHECK(!changed);
	CHECK_EQ_INT(ids_of(&x, ids), 2);
	/* "batch" switched on again: a config recheck (no samples) lets 30 through */
	turn_on("api", "batch", NULL);
	CHECK_EQ_INT(exclusion__update(&x, NULL, 0, is_enabled, NULL, &changed), 0);
	CHECK(changed);
	CHECK_EQ_INT(ids_of(&x, ids), 1);
	CHECK(ids[0] == 40);
	exclusion__clear(&x);
}

TEST(a_cgroup_later_used_by_an_enabled_service_is_sampled_again)
{
	const struct exclusion_sample first[] = {SAMPLE(30, "batch", false, true)};
	const struct exclusion_sample later[] = {SAMPLE(30, "batch-v2", true, true)};
	struct exclusion x = {0};
	uint64_t *ids;
	size_t n;
	bool changed;

	turn_on("batch-v2", NULL, NULL);
	CHECK_EQ_INT(exclusion__update(&x, first, 1, is_enabled, NULL, &changed), 0);
	CHECK_EQ_INT(x.n, 1);
	CHECK_EQ_INT(exclusion__update(&x, later, 1, is_enabled, NULL, &changed), 0);
	CHECK(changed);
	CHECK_EQ_INT(exclusion__ids(&x, &ids, &n), 0);
	CHECK_EQ_INT(n, 0);
	CHECK(ids == NULL);
	exclusion__clear(&x);
}

TEST(ids_come_out_sorted_and_distinct)
{
	const struct exclusion_sample window[] = {
	    SAMPLE(50, "c", false, true),
	    SAMPLE(20, "a", false, true),
	    SAMPLE(50, "c", false, true),
	    SAMPLE(35, "b", false, true),
	};
	struct exclusion x = {0};
	uint64_t *ids;
	size_t n;
	bool changed;

	turn_on(NULL, NULL, NULL);
	CHECK_EQ_INT(exclusion__update(&x, window, 4, is_enabled, NULL, &changed), 0);
	CHECK_EQ_INT(exclusion__ids(&x, &ids, &n), 0);
	CHECK_EQ_INT(n, 3);
	CHECK(ids[0] == 20 && ids[1] == 35 && ids[2] == 50);
	free(ids);
	exclusion__clear(&x);
}

TEST_MAIN("exclusion", T(only_cgroups_of_disabled_named_services_alone_are_excluded),
	  T(a_fallback_named_disabled_service_never_silences_its_cgroup),
	  T(exclusion_outlives_quiet_windows_and_ends_when_enabled_again),
	  T(a_cgroup_later_used_by_an_enabled_service_is_sampled_again),
	  T(ids_come_out_sorted_and_distinct))
