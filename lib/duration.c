// SPDX-License-Identifier: Apache-2.0
/* Human durations ("500ms", "10s", "2m", "1h", "7d", bare seconds) to milliseconds, and short
 * ones ("50us", "2ms") to microseconds, with strtoll and every failure reported. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"

struct unit {
	const char *suffix;
	int64_t factor; /* in the result's unit */
};

static const struct unit ms_units[] = {
    {"ms", 1}, {"s", 1000}, {"", 1000}, {"m", 60 * 1000}, {"h", 3600 * 1000}, {"d", 86400 * 1000},
};

static const struct unit us_units[] = {
    {"us", 1},
    {"ms", 1000},
    {"s", 1000000},
    {"", 1000000},
};

static int parse(const char *text, const struct unit *units, size_t n_units, int64_t *ret)
{
	char *end;
	long long value;

	if (!text || *text < '0' || *text > '9')
		return -EINVAL;
	errno = 0;
	value = strtoll(text, &end, 10);
	if (errno)
		return -errno;
	for (size_t i = 0; i < n_units; i++) {
		if (strcmp(end, units[i].suffix))
			continue;
		if (value > INT64_MAX / units[i].factor)
			return -ERANGE;
		*ret = value * units[i].factor;
		return 0;
	}
	return -EINVAL;
}

int duration_parse_ms(const char *text, int64_t *ret_ms)
{
	return parse(text, ms_units, sizeof(ms_units) / sizeof(ms_units[0]), ret_ms);
}

int duration_parse_us(const char *text, int64_t *ret_us)
{
	return parse(text, us_units, sizeof(us_units) / sizeof(us_units[0]), ret_us);
}

bool duration_has_seconds_unit(const char *text)
{
	size_t len = text ? strlen(text) : 0;

	if (!len || !strchr("smhd", text[len - 1]))
		return false;
	return !(len >= 2 && text[len - 2] == 'm' && text[len - 1] == 's');
}
