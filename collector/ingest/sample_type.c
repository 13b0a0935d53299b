// SPDX-License-Identifier: Apache-2.0
/* Sample type choice per profile type: the first fitting type name in preference order, in any
 * time unit (seconds, milliseconds, microseconds, nanoseconds) for time-valued measurements,
 * with the factor to nanoseconds; bytes and counts are kept as they are. */
#include <errno.h>
#include <string.h>

#include "ingest/sample_type.h"

enum unit_kind { UNIT_TIME, UNIT_BYTES, UNIT_COUNT };

struct fit_rule {
	const char *profile_type;
	const char *types[3]; /* accepted type names, preferred first */
	enum unit_kind unit;
	const char *expected;
};

/* "time" is what some CPU profilers call their CPU-time sample type. */
static const struct fit_rule rules[] = {
    {"cpu", {"cpu", "time"}, UNIT_TIME, "cpu/nanoseconds (cpu or time, in ns, us, ms or s)"},
    {"wall", {"wall"}, UNIT_TIME, "wall/nanoseconds (in ns, us, ms or s)"},
    {"offcpu",
     {"off_cpu", "offcpu"},
     UNIT_TIME,
     "off_cpu/nanoseconds or offcpu/nanoseconds (in ns, us, ms or s)"},
    /* gperftools/tcmalloc heap profiles name their in-use columns objects/count and
     * space/bytes: space is in-use bytes, as go tool pprof reads it. */
    {"heap", {"inuse_space", "space"}, UNIT_BYTES, "inuse_space/bytes or space/bytes"},
    {"alloc", {"alloc_space"}, UNIT_BYTES, "alloc_space/bytes"},
    {"alloc_objects", {"alloc_objects"}, UNIT_COUNT, "alloc_objects/count"},
    {"lock", {"delay"}, UNIT_TIME, "delay/nanoseconds (in ns, us, ms or s)"},
};

static const struct {
	const char *name;
	int64_t ns;
} time_units[] = {
    {"nanoseconds", 1},	    {"ns", 1},
    {"microseconds", 1000}, {"us", 1000},
    {"µs", 1000},	    {"milliseconds", 1000000},
    {"ms", 1000000},	    {"seconds", 1000000000},
    {"s", 1000000000},
};

/* The factor to the stored unit, or 0 when unit is not of this kind. */
static int64_t unit_scale(enum unit_kind kind, const char *unit)
{
	if (!unit)
		return 0;
	if (kind == UNIT_BYTES)
		return strcmp(unit, "bytes") == 0;
	if (kind == UNIT_COUNT)
		return strcmp(unit, "count") == 0;
	for (size_t i = 0; i < sizeof(time_units) / sizeof(time_units[0]); i++)
		if (strcmp(time_units[i].name, unit) == 0)
			return time_units[i].ns;
	return 0;
}

static const struct fit_rule *rule_of(const char *profile_type)
{
	for (size_t i = 0; profile_type && i < sizeof(rules) / sizeof(rules[0]); i++)
		if (strcmp(rules[i].profile_type, profile_type) == 0)
			return &rules[i];
	return NULL;
}

int sample_type_choose(const char *profile_type, const struct pprof_value_type *types, size_t n,
		       struct sample_type_choice *ret)
{
	const struct fit_rule *rule = rule_of(profile_type);

	memset(ret, 0, sizeof(*ret));
	ret->index = -1;
	if (!rule)
		return -EINVAL;
	ret->expected = rule->expected;
	for (size_t t = 0; t < sizeof(rule->types) / sizeof(rule->types[0]) && rule->types[t];
	     t++) {
		for (size_t i = 0; i < n; i++) {
			int64_t scale;

			if (!types[i].type || strcmp(types[i].type, rule->types[t]) != 0)
				continue;
			scale = unit_scale(rule->unit, types[i].unit);
			if (!scale)
				continue;
			ret->index = (int)i;
			ret->scale = scale;
			ret->type = types[i].type;
			ret->unit = types[i].unit;
			return 0;
		}
	}
	return -ENOENT;
}

int sample_type_scale(int64_t value, int64_t scale, int64_t *ret)
{
	return __builtin_mul_overflow(value, scale, ret) ? -EOVERFLOW : 0;
}
