// SPDX-License-Identifier: Apache-2.0
/* Line detail entries: sorted, summed and bounded (the smallest positions folded into a
 * dropped value), then packed as varints grouped by (function, kind, source) with positions
 * as deltas and values divided by their common divisor. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "protowire.h"
#include "store/line_blob.h"

#define LINE_BLOB_VERSION 1

static int cmp_key(const void *a, const void *b)
{
	const struct line_entry *x = a, *y = b;

	if (x->function != y->function)
		return x->function < y->function ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->source != y->source)
		return x->source < y->source ? -1 : 1;
	return x->position < y->position ? -1 : x->position > y->position;
}

static bool same_key(const struct line_entry *a, const struct line_entry *b)
{
	return a->function == b->function && a->kind == b->kind && a->source == b->source &&
	       a->position == b->position;
}

/* Sorts and sums repeated keys in place; *ret_n the distinct keys. */
static int sum_keys(struct line_entry *e, size_t n, size_t *ret_n)
{
	size_t out = 0;

	if (n > 1)
		qsort(e, n, sizeof(*e), cmp_key);
	for (size_t i = 0; i < n; i++) {
		if (out && same_key(&e[out - 1], &e[i])) {
			if (__builtin_add_overflow(e[out - 1].value, e[i].value, &e[out - 1].value))
				return -EOVERFLOW;
			continue;
		}
		e[out++] = e[i];
	}
	*ret_n = out;
	return 0;
}

static int cmp_value_desc(const void *a, const void *b)
{
	const struct line_entry *x = *(const struct line_entry *const *)a;
	const struct line_entry *y = *(const struct line_entry *const *)b;

	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	return cmp_key(x, y);
}

/* Marks with `bound` every entry of refs past the first `keep` by value. */
static void mark_smallest(struct line_entry **refs, size_t n, size_t keep, uint32_t bound)
{
	if (n <= keep)
		return;
	qsort(refs, n, sizeof(*refs), cmp_value_desc);
	for (size_t i = keep; i < n; i++)
		refs[i]->drop = bound;
}

/* Marks what the two bounds drop (e sorted, summed, drop 0); 0 or -ENOMEM. */
static int mark_drops(struct line_entry *e, size_t n, size_t max_per_function, size_t max_total)
{
	struct line_entry **refs = malloc((n ? n : 1) * sizeof(*refs));
	size_t kept = 0;

	if (!refs)
		return -ENOMEM;
	for (size_t start = 0, end; start < n; start = end) {
		size_t k = 0;

		for (end = start; end < n && e[end].function == e[start].function; end++)
			if (e[end].kind != LINE_KIND_DROPPED)
				refs[k++] = &e[end];
		mark_smallest(refs, k, max_per_function, LINE_DROP_FUNCTION);
	}
	for (size_t i = 0; i < n; i++)
		if (e[i].kind != LINE_KIND_DROPPED && !e[i].drop)
			refs[kept++] = &e[i];
	mark_smallest(refs, kept, max_total, LINE_DROP_SERIES);
	free(refs);
	return 0;
}

int line_entries__normalise(struct line_entry *e, size_t n, size_t max_per_function,
			    size_t max_total, size_t *ret_n, uint64_t dropped[3])
{
	size_t m;
	int err;

	for (size_t i = 0; i < n; i++)
		e[i].drop = 0;
	err = sum_keys(e, n, &m);
	if (!err)
		err = mark_drops(e, m, max_per_function, max_total);
	if (err)
		return err;
	for (size_t i = 0; i < m; i++) {
		if (!e[i].drop)
			continue;
		dropped[e[i].drop]++;
		e[i].kind = LINE_KIND_DROPPED;
		e[i].source = 0;
		e[i].position = e[i].drop;
	}
	return sum_keys(e, m, ret_n);
}

size_t line_blob__max_bytes(size_t n)
{
	return 3 * PROTOWIRE_VARINT_MAX + n * 6 * PROTOWIRE_VARINT_MAX;
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

static size_t group_end(const struct line_entry *e, size_t n, size_t start)
{
	size_t end = start + 1;

	while (end < n && e[end].function == e[start].function && e[end].kind == e[start].kind &&
	       e[end].source == e[start].source)
		end++;
	return end;
}

size_t line_blob__encode(const struct line_entry *e, size_t n, uint8_t *out)
{
	uint64_t scale = 0, groups = 0;
	int64_t last_function = 0;
	size_t len = 0;

	for (size_t i = 0; i < n; i++)
		scale = gcd(scale, (uint64_t)e[i].value);
	if (!scale)
		scale = 1;
	for (size_t i = 0; i < n; i = group_end(e, n, i))
		groups++;
	len += protowire__put_varint(out + len, LINE_BLOB_VERSION);
	len += protowire__put_varint(out + len, scale);
	len += protowire__put_varint(out + len, groups);
	for (size_t start = 0, end; start < n; start = end) {
		uint64_t last_position = 0;

		end = group_end(e, n, start);
		len +=
		    protowire__put_varint(out + len, (uint64_t)(e[start].function - last_function));
		len += protowire__put_varint(out + len, e[start].kind);
		len += protowire__put_varint(out + len, (uint64_t)e[start].source);
		len += protowire__put_varint(out + len, end - start);
		for (size_t i = start; i < end; i++) {
			len += protowire__put_varint(out + len, e[i].position - last_position);
			len += protowire__put_varint(out + len, (uint64_t)e[i].value / scale);
			last_position = e[i].position;
		}
		last_function = e[start].function;
	}
	return len;
}

static int push(struct line_entry **arr, size_t *n, size_t *cap, const struct line_entry *e)
{
	if (*n == *cap) {
		size_t grown_cap = *cap ? *cap * 2 : 64;
		struct line_entry *grown = realloc(*arr, grown_cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		*arr = grown;
		*cap = grown_cap;
	}
	(*arr)[(*n)++] = *e;
	return 0;
}

/* Reads one group's header and, when it is wanted, its entries; skips them otherwise. */
static int decode_group(const uint8_t **pos, const uint8_t *end, int64_t *function, uint64_t scale,
			int64_t wanted, struct line_entry **arr, size_t *n, size_t *cap)
{
	uint64_t delta, kind, source, count, position = 0, step, value;
	struct line_entry e = {0};

	if (protowire__varint(pos, end, &delta) || protowire__varint(pos, end, &kind) ||
	    protowire__varint(pos, end, &source) || protowire__varint(pos, end, &count) ||
	    kind >= LINE_KINDS)
		return -EINVAL;
	*function += (int64_t)delta;
	for (uint64_t i = 0; i < count; i++) {
		if (protowire__varint(pos, end, &step) || protowire__varint(pos, end, &value))
			return -EINVAL;
		position += step;
		if (wanted >= 0 && *function != wanted)
			continue;
		e = (struct line_entry){*function,	(int64_t)source,
					position,	(int64_t)(value * scale),
					(uint32_t)kind, 0};
		if (push(arr, n, cap, &e))
			return -ENOMEM;
	}
	return 0;
}

int line_blob__decode(const uint8_t *blob, size_t len, int64_t function, struct line_entry **arr,
		      size_t *n, size_t *cap)
{
	const uint8_t *pos = blob, *end = blob + len;
	uint64_t version, scale, groups;
	int64_t at = 0;
	int err = 0;

	if (!len)
		return 0;
	if (protowire__varint(&pos, end, &version) || version != LINE_BLOB_VERSION ||
	    protowire__varint(&pos, end, &scale) || protowire__varint(&pos, end, &groups))
		return -EINVAL;
	for (uint64_t g = 0; !err && g < groups; g++)
		err = decode_group(&pos, end, &at, scale, function, arr, n, cap);
	return err;
}
