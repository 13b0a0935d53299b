// SPDX-License-Identifier: Apache-2.0
/* Prometheus text exposition: printf into a growing buffer, integers printed exactly, other
 * values with enough digits to round-trip. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "prom_text.h"

static int reserve(struct prom_text *t, size_t need)
{
	size_t new_cap;
	char *grown;

	if (t->len + need < t->cap)
		return 0;
	new_cap = (t->cap + need + 1) * 2;
	if (new_cap < 4096)
		new_cap = 4096;
	grown = realloc(t->buf, new_cap);
	if (!grown)
		return -ENOMEM;
	t->buf = grown;
	t->cap = new_cap;
	return 0;
}

void prom_text__appendf(struct prom_text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->err || (t->err = reserve(t, 256)))
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->err = -EINVAL;
			return;
		}
		if ((size_t)n < t->cap - t->len)
			break;
		t->err = reserve(t, (size_t)n + 1);
		if (t->err)
			return;
	}
	t->len += (size_t)n;
}

void prom_text__header(struct prom_text *t, const char *name, const char *type, const char *help)
{
	prom_text__appendf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void prom_text__sample(struct prom_text *t, const char *name, const char *labels, double value)
{
	const char *open = labels[0] ? "{" : "", *close = labels[0] ? "}" : "";

	/* integers below 2^53 are exact in a double: print them as integers */
	if (value > -9007199254740992.0 && value < 9007199254740992.0 &&
	    (double)(int64_t)value == value)
		prom_text__appendf(t, "%s%s%s%s %.0f\n", name, open, labels, close, value);
	else
		prom_text__appendf(t, "%s%s%s%s %.15g\n", name, open, labels, close, value);
}

void prom_text__counter(struct prom_text *t, const char *name, const char *help, uint64_t value)
{
	prom_text__header(t, name, "counter", help);
	prom_text__appendf(t, "%s %llu\n", name, (unsigned long long)value);
}

void prom_text__gauge(struct prom_text *t, const char *name, const char *help, double value)
{
	prom_text__header(t, name, "gauge", help);
	prom_text__sample(t, name, "", value);
}

int prom_text__finish(struct prom_text *t, char **ret, size_t *ret_len)
{
	if (!t->err && !t->buf)
		t->err = reserve(t, 1);
	if (t->err) {
		int err = t->err;

		free(t->buf);
		*t = (struct prom_text){0};
		return err;
	}
	t->buf[t->len] = '\0';
	*ret = t->buf;
	*ret_len = t->len;
	*t = (struct prom_text){0};
	return 0;
}
