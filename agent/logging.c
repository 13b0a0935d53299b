// SPDX-License-Identifier: Apache-2.0
/* Daemon logging: timestamped lines on stderr above a threshold; thread-safe (one fprintf
 * per line, stderr is unbuffered and locked by stdio). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "logging.h"

static enum log_level threshold = LOG_LVL_INFO;

static const char *const level_names[] = {
    [LOG_LVL_DEBUG] = "debug",
    [LOG_LVL_INFO] = "info",
    [LOG_LVL_WARN] = "warn",
    [LOG_LVL_ERROR] = "error",
};

int log_level_parse(const char *name)
{
	if (!name)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (strcasecmp(name, level_names[i]) == 0)
			return (int)i;
	if (strcasecmp(name, "warning") == 0)
		return LOG_LVL_WARN;
	return -EINVAL;
}

void log_set_level(enum log_level level)
{
	threshold = level;
}

enum log_level log_get_level(void)
{
	return threshold;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	char line[1024], stamp[32];
	struct timespec ts;
	struct tm tm;
	va_list ap;

	if (level < threshold)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s.%03ldZ %s %s\n", stamp, ts.tv_nsec / 1000000, level_names[level], line);
}
