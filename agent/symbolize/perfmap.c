// SPDX-License-Identifier: Apache-2.0
/* perf map reader: "START SIZE name" lines (hex, optional 0x) into an array sorted by start,
 * one string blob for the names. Later lines override earlier ones at the same address. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/perfmap.h"

struct pm_entry {
	uint64_t start, size;
	uint32_t name_off;
	uint32_t seq; /* line number: the later line wins */
};

struct perfmap {
	struct pm_entry *v;
	size_t n, cap;
	char *names;
	size_t names_len, names_cap;
};

static int add_entry(struct perfmap *pm, uint64_t start, uint64_t size, const char *name)
{
	size_t len = strlen(name) + 1;

	if (pm->n == pm->cap) {
		size_t cap = pm->cap ? pm->cap * 2 : 64;
		struct pm_entry *v = realloc(pm->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		pm->v = v;
		pm->cap = cap;
	}
	if (pm->names_len + len > pm->names_cap) {
		size_t cap = pm->names_cap ? pm->names_cap * 2 : 4096;
		char *names;

		while (cap < pm->names_len + len)
			cap *= 2;
		if (cap > UINT32_MAX)
			return -E2BIG;
		names = realloc(pm->names, cap);
		if (!names)
			return -ENOMEM;
		pm->names = names;
		pm->names_cap = cap;
	}
	memcpy(pm->names + pm->names_len, name, len);
	pm->v[pm->n] = (struct pm_entry){.start = start,
					 .size = size,
					 .name_off = (uint32_t)pm->names_len,
					 .seq = (uint32_t)pm->n};
	pm->n++;
	pm->names_len += len;
	return 0;
}

static int parse_line(struct perfmap *pm, char *line)
{
	uint64_t start, size;
	char *p = line, *end;

	errno = 0;
	start = strtoull(p, &end, 16);
	if (errno || end == p || *end != ' ')
		return 0; /* not a map line: skip, never guess */
	p = end + 1;
	size = strtoull(p, &end, 16);
	if (errno || end == p || *end != ' ' || !size)
		return 0;
	p = end + 1;
	p[strcspn(p, "\n")] = '\0';
	if (!*p)
		return 0;
	return add_entry(pm, start, size, p);
}

static int entry_cmp(const void *a, const void *b)
{
	const struct pm_entry *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq > y->seq ? -1 : x->seq < y->seq; /* latest first */
}

static void finish(struct perfmap *pm)
{
	size_t out = 0;

	if (pm->n == 0) /* empty map file: v is NULL, and qsort(NULL, 0) is undefined */
		return;
	qsort(pm->v, pm->n, sizeof(*pm->v), entry_cmp);
	for (size_t i = 0; i < pm->n; i++) {
		if (out && pm->v[out - 1].start == pm->v[i].start)
			continue;
		pm->v[out++] = pm->v[i];
	}
	pm->n = out;
}

struct perfmap *perfmap__load(const char *path)
{
	struct perfmap *pm = calloc(1, sizeof(*pm));
	char *line = NULL;
	size_t cap = 0;
	int err = 0;
	FILE *f;

	if (!pm)
		return NULL;
	f = fopen(path, "re");
	if (!f) {
		err = -errno;
		free(pm);
		errno = -err;
		return NULL;
	}
	while (!err && getline(&line, &cap, f) > 0)
		err = parse_line(pm, line);
	free(line);
	fclose(f);
	if (err) {
		perfmap__free(pm);
		errno = -err;
		return NULL;
	}
	finish(pm);
	return pm;
}

void perfmap__free(struct perfmap *pm)
{
	if (!pm)
		return;
	free(pm->v);
	free(pm->names);
	free(pm);
}

const char *perfmap__lookup(const struct perfmap *pm, uint64_t addr)
{
	const struct pm_entry *best = NULL;
	size_t lo = 0, hi = pm->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pm->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Entries may overlap: look back a little for the latest one covering addr. */
	for (size_t i = lo, seen = 0; i > 0 && seen < 8; i--, seen++) {
		const struct pm_entry *e = &pm->v[i - 1];

		if (addr - e->start < e->size && (!best || e->seq > best->seq))
			best = e;
	}
	return best ? pm->names + best->name_off : NULL;
}

size_t perfmap__count(const struct perfmap *pm)
{
	return pm->n;
}

size_t perfmap__memory(const struct perfmap *pm)
{
	return sizeof(*pm) + pm->cap * sizeof(*pm->v) + pm->names_cap;
}
