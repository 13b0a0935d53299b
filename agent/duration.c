// SPDX-License-Identifier: Apache-2.0
/* Human durations ("500ms", "10s", "2m", "1h", bare seconds) to milliseconds, and short ones
 * ("50us", "2ms") to microseconds, with strtoll and every failure reported. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"

static const struct {
	const char *suffix;
	int64_t ms;
} units[] = {
    {"ms", 1}, {"s", 1000}, {"", 1000}, {"m", 60 * 1000}, {"h", 3600 * 1000},
};

int duration_parse_ms(const char *text, int64_t *ret_ms)
{
	char *end;
	long long value;

	if (!text || *text < '0' || *text > '9')
		return -EINVAL;
	errno = 0;
	value = strtoll(text, &end, 10);
	if (errno)
		return -errno;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].suffix))
			continue;
		if (value > INT64_MAX / units[i].ms)
			return -ERANGE;
		*ret_ms = value * units[i].ms;
		return 0;
	}
	return -EINVAL;
}

static const struct {
	const char *suffix;
	int64_t us;
} short_units[] = {
    {"us", 1},
    {"ms", 1000},
    {"s", 1000000},
    {"", 1000000},
};

int duration_parse_us(const char *text, int64_t *ret_us)
{
	char *end;
	long long value;

	if (!text || *text < '0' || *text > '9')
		return -EINVAL;
	errno = 0;
	value = strtoll(text, &end, 10);
	if (errno)
		return -errno;
	for (size_t i = 0; i < sizeof(short_units) / sizeof(short_units[0]); i++) {
		if (strcmp(end, short_units[i].suffix))
			continue;
		if (value > INT64_MAX / short_units[i].us)
			return -ERANGE;
		*ret_us = value * short_units[i].us;
		return 0;
	}
	return -EINVAL;
}
