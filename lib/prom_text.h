/* SPDX-License-Identifier: Apache-2.0 */
/* Writer of the Prometheus text exposition format (version 0.0.4), shared by the collector's
 * and the agent's GET /metrics: a growable buffer, HELP/TYPE headers, samples. */
#ifndef ROOTTRACE_PROM_TEXT_H
#define ROOTTRACE_PROM_TEXT_H

#include <stddef.h>
#include <stdint.h>

#define PROM_TEXT_CONTENT_TYPE "text/plain; version=0.0.4"

/* Zero-initialise; the first failure sticks in err and later calls do nothing. */
struct prom_text {
	char *buf;
	size_t len, cap;
	int err; /* 0, -ENOMEM or -EINVAL */
};

void prom_text__appendf(struct prom_text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* "# HELP name help\n# TYPE name type\n" (type: counter, gauge, histogram). */
void prom_text__header(struct prom_text *t, const char *name, const char *type, const char *help);
/* One sample line; labels is "" or the inside of the braces (`reason="x"`), already escaped. */
void prom_text__sample(struct prom_text *t, const char *name, const char *labels, double value);
/* A header and one unlabelled sample. */
void prom_text__counter(struct prom_text *t, const char *name, const char *help, uint64_t value);
void prom_text__gauge(struct prom_text *t, const char *name, const char *help, double value);
/* Hands over the text (*ret malloc'd, NUL-terminated); on an earlier failure frees it and
 * returns that error. */
int prom_text__finish(struct prom_text *t, char **ret, size_t *ret_len);

#endif
