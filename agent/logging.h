/* SPDX-License-Identifier: Apache-2.0 */
/* Daemon logging: one line per state change on stderr, with a level threshold.
 * Debug-level lines may be per upload; info and above are for state changes only. */
#ifndef ROOTTRACE_LOGGING_H
#define ROOTTRACE_LOGGING_H

enum log_level {
	LOG_LVL_DEBUG = 0,
	LOG_LVL_INFO,
	LOG_LVL_WARN,
	LOG_LVL_ERROR,
};

/* "debug", "info", "warn"/"warning", "error" -> level; -EINVAL otherwise. */
int log_level_parse(const char *name);
void log_set_level(enum log_level level);
enum log_level log_get_level(void);

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_LVL_ERROR, __VA_ARGS__)

#endif
