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

/* Entries of e[start..n) that continue the group of e[start]. */
static bool same_group(const struct line_entry *a, const struct line_entry *b)
{
	return a->function == b->function && a->kind == b->kind && a->source == b->source;
}

/* A group's header: the function as a delta from the group before, with the kind in its low
 * bits (a function id's delta takes the same byte either way), the source, the count. */
static size_t put_header(uint8_t *out, const struct line_entry *e, int64_t last_function,
			 size_t count)
{
	size_t len =
	    protowire__put_varint(out, ((uint64_t)(e->function - last_function) << 2) | e->kind);

	len += protowire__put_varint(out + len, (uint64_t)e->source);
	return len + protowire__put_varint(out + len, count);
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* What entry i costs at most in a part (its value before the scale divides it): its group's
 * header when it opens one (the count at most 3 bytes), its position and its value. */
static size_t entry_cost(const struct line_entry *e, size_t i)
{
	bool opens = i == 0 || !same_group(&e[i - 1], &e[i]);
	int64_t last_function = i ? e[i - 1].function : 0;
	uint64_t step = opens ? e[i].position : e[i].position - e[i - 1].position;
	size_t cost = varint_len(step) + varint_len((uint64_t)e[i].value);

	if (opens)
		cost += varint_len(((uint64_t)(e[i].function - last_function) << 2) | e[i].kind) +
			varint_len((uint64_t)e[i].source) + 3;
	return cost;
}

/* The part's entries: how many fit in max_bytes (at least one), and their scale. */
static size_t part_entries(const struct line_entry *e, size_t n, size_t max_bytes,
			   uint64_t *ret_scale)
{
	size_t bytes = 3 * PROTOWIRE_VARINT_MAX, i = 0;
	uint64_t scale = 0;

	for (; i < n; i++) {
		size_t cost = entry_cost(e, i);

		if (i && bytes + cost > max_bytes)
			break;
		bytes += cost;
		scale = gcd(scale, (uint64_t)e[i].value);
	}
	*ret_scale = scale ? scale : 1;
	return i;
}

size_t line_blob__encode(const struct line_entry *e, size_t n, size_t max_bytes, uint8_t *out,
			 size_t *ret_used)
{
	uint64_t scale, groups = 0;
	int64_t last_function = 0;
	size_t len = 0, used = part_entries(e, n, max_bytes, &scale);

	for (size_t i = 0; i < used; i++)
		groups += i == 0 || !same_group(&e[i - 1], &e[i]);
	len += protowire__put_varint(out + len, LINE_BLOB_VERSION);
	len += protowire__put_varint(out + len, scale);
	len += protowire__put_varint(out + len, groups);
	for (size_t start = 0, end; start < used; start = end) {
		uint64_t last_position = 0;

		for (end = start + 1; end < used && same_group(&e[start], &e[end]); end++)
			;
		len += put_header(out + len, &e[start], last_function, end - start);
		for (size_t i = start; i < end; i++) {
			len += protowire__put_varint(out + len, e[i].position - last_position);
			len += protowire__put_varint(out + len, (uint64_t)e[i].value / scale);
			last_position = e[i].position;
		}
		last_function = e[start].function;
	}
	*ret_used = used;
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
	uint64_t delta_kind, kind, source, count, position = 0, step, value;
	struct line_entry e = {0};

	if (protowire__varint(pos, end, &delta_kind) || protowire__varint(pos, end, &source) ||
	    protowire__varint(pos, end, &count))
		return -EINVAL;
	kind = delta_kind & 3;
	if (kind >= LINE_KINDS)
		return -EINVAL;
	*function += (int64_t)(delta_kind >> 2);
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
	/* groups are in function order: past the one wanted, the rest is not read */
	for (uint64_t g = 0; !err && g < groups && (function < 0 || at <= function); g++)
		err = decode_group(&pos, end, &at, scale, function, arr, n, cap);
	return err;
}
