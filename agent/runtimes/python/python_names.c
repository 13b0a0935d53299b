// SPDX-License-Identifier: Apache-2.0
/* How a CPython frame is named: the str objects of a code object decoded to UTF-8, and the
 * module derived from its file name (module.qualname, stable across deploys and lines). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "runtimes/python/python_names.h"

#define STR_MAX_CHARS 512 /* longer names are cut: a frame name is at most SYM_NAME_MAX */

/* Appends code point c as UTF-8 when it fits (with the NUL); false when full. */
static bool put_utf8(char *ret, size_t len, size_t *pos, uint32_t c)
{
	unsigned char b[4];
	size_t n;

	if (c < 0x80) {
		b[0] = c;
		n = 1;
	} else if (c < 0x800) {
		b[0] = 0xc0 | c >> 6;
		b[1] = 0x80 | (c & 0x3f);
		n = 2;
	} else if (c < 0x10000) {
		b[0] = 0xe0 | c >> 12;
		b[1] = 0x80 | (c >> 6 & 0x3f);
		b[2] = 0x80 | (c & 0x3f);
		n = 3;
	} else if (c < 0x110000) {
		b[0] = 0xf0 | c >> 18;
		b[1] = 0x80 | (c >> 12 & 0x3f);
		b[2] = 0x80 | (c >> 6 & 0x3f);
		b[3] = 0x80 | (c & 0x3f);
		n = 4;
	} else {
		b[0] = '?';
		n = 1;
	}
	if (*pos + n >= len)
		return false;
	memcpy(ret + *pos, b, n);
	*pos += n;
	return true;
}

int python_str_decode(const struct python_version *v, python_read_fn read, void *ctx, uint64_t addr,
		      char *ret, size_t len)
{
	unsigned char head[PYTHON_STR_STATE + 4], data[STR_MAX_CHARS * 4];
	unsigned kind, compact, ascii;
	int64_t n_chars;
	size_t pos = 0;
	int err;

	if (!len)
		return -EINVAL;
	ret[0] = '\0';
	err = read(ctx, addr, head, sizeof(head));
	if (err)
		return err;
	memcpy(&n_chars, head + PYTHON_STR_LENGTH, sizeof(n_chars));
	kind = head[PYTHON_STR_STATE] >> 2 & 7;
	compact = head[PYTHON_STR_STATE] >> 5 & 1;
	ascii = head[PYTHON_STR_STATE] >> 6 & 1;
	if (!compact || (kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1) ||
	    n_chars < 0)
		return -EINVAL;
	if (n_chars > STR_MAX_CHARS)
		n_chars = STR_MAX_CHARS;
	err = read(ctx, addr + (ascii ? v->str_ascii_data : v->str_compact_data), data,
		   n_chars * kind);
	if (err)
		return err;
	for (int64_t i = 0; i < n_chars; i++) {
		uint32_t c = kind == 1	 ? data[i]
			     : kind == 2 ? (uint32_t)data[2 * i] | (uint32_t)data[2 * i + 1] << 8
					 : (uint32_t)data[4 * i] | (uint32_t)data[4 * i + 1] << 8 |
					       (uint32_t)data[4 * i + 2] << 16 |
					       (uint32_t)data[4 * i + 3] << 24;

		if (!put_utf8(ret, len, &pos, c))
			break;
	}
	ret[pos] = '\0';
	return 0;
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n >= k && !memcmp(s + n - k, suffix, k);
}

/* Where the import path starts in file: after a packages folder or a stdlib folder, else at
 * the base name. */
static const char *import_root(const char *file)
{
	static const char *const roots[] = {"/site-packages/", "/dist-packages/"};
	const char *best = NULL, *p, *slash;

	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		for (p = strstr(file, roots[i]); p; p = strstr(p + 1, roots[i]))
			if (!best || p + strlen(roots[i]) > best)
				best = p + strlen(roots[i]);
	if (best)
		return best;
	p = strstr(file, "/lib/python");
	if (p && (slash = strchr(p + strlen("/lib/python"), '/')) && slash[1])
		return slash + 1;
	slash = strrchr(file, '/');
	return slash ? slash + 1 : file;
}

void python_module_name(const char *file, char *ret, size_t len)
{
	const char *start;
	size_t n, out = 0;

	if (!len)
		return;
	if (file[0] == '<') { /* <frozen importlib._bootstrap>, <string>, <stdin> */
		const char *frozen = "<frozen ";

		n = strlen(file);
		if (!strncmp(file, frozen, strlen(frozen)) && n > strlen(frozen) + 1)
			snprintf(ret, len, "%.*s", (int)(n - strlen(frozen) - 1),
				 file + strlen(frozen));
		else
			snprintf(ret, len, "%s", file);
		return;
	}
	start = import_root(file);
	n = strlen(start);
	if (ends_with(start, n, ".py"))
		n -= 3;
	if (ends_with(start, n, "/__init__"))
		n -= strlen("/__init__");
	for (size_t i = 0; i < n && out + 1 < len; i++)
		ret[out++] = start[i] == '/' ? '.' : start[i];
	ret[out] = '\0';
}
