// SPDX-License-Identifier: Apache-2.0
/* Folded stacks (`root;caller;leaf 42` per line) to leaf-first frame arrays: the body of a
 * Pyroscope `format=folded` upload. Outside bytes: fuzzed by tests/fuzz/fuzz-folded.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/folded.h"

#define UNKNOWN_FRAME "[unknown]"

struct folded_line {
	char *text; /* the stack, NUL-terminated, split in place */
	const char *frames[FOLDED_MAX_FRAMES];
	size_t n_frames;
	int64_t value;
};

static int parse_value(const char *s, size_t len, int64_t *ret)
{
	int64_t v = 0;

	if (!len)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9' || v > (INT64_MAX - (s[i] - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	*ret = v;
	return 0;
}

/* Splits "a;b;c" into frames, leaf first. */
static int split_frames(struct folded_line *l, size_t line_no, char *err, size_t err_len)
{
	size_t n = 1;

	for (char *c = l->text; *c; c++)
		n += *c == ';';
	if (n > FOLDED_MAX_FRAMES) {
		snprintf(err, err_len, "line %zu has %zu frames, the limit is %d", line_no, n,
			 FOLDED_MAX_FRAMES);
		return -EINVAL;
	}
	l->n_frames = n;
	for (char *start = l->text;; start++) {
		char *semi = strchr(start, ';');

		if (semi)
			*semi = '\0';
		l->frames[--n] = *start ? start : UNKNOWN_FRAME;
		if (!semi)
			return 0;
		start = semi;
	}
}

/* One line (without its end of line): the stack, a space, the value. */
static int parse_line(struct folded_line *l, const char *line, size_t len, size_t line_no,
		      char *err, size_t err_len)
{
	const char *space = NULL;

	for (size_t i = len; i > 0; i--) {
		if (line[i - 1] == ' ') {
			space = line + i - 1;
			break;
		}
	}
	if (!space || parse_value(space + 1, len - (size_t)(space + 1 - line), &l->value)) {
		snprintf(err, err_len,
			 "line %zu does not end in a space and a non-negative integer value",
			 line_no);
		return -EINVAL;
	}
	if (memchr(line, '\0', (size_t)(space - line))) {
		snprintf(err, err_len, "line %zu contains a NUL byte", line_no);
		return -EINVAL;
	}
	memcpy(l->text, line, (size_t)(space - line));
	l->text[space - line] = '\0';
	return split_frames(l, line_no, err, err_len);
}

int folded_parse(const char *text, size_t len, folded_stack_fn fn, void *ctx, char *err,
		 size_t err_len)
{
	struct folded_line *l = calloc(1, sizeof(*l));
	size_t pos = 0, line_no = 0;
	int ret = 0;

	if (!l || !(l->text = malloc(len + 1))) {
		free(l);
		return -ENOMEM;
	}
	while (pos < len && !ret) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - text) : len, line_len = end - pos;

		line_no++;
		if (line_len && text[end - 1] == '\r')
			line_len--;
		if (line_len)
			ret = parse_line(l, text + pos, line_len, line_no, err, err_len);
		if (line_len && !ret)
			ret = fn(ctx, l->frames, l->n_frames, l->value);
		pos = end + 1;
	}
	free(l->text);
	free(l);
	return ret;
}
