// SPDX-License-Identifier: Apache-2.0
/* Source lines for the lines view: a profile's file path matched by its trailing components
 * below --source-dir ("/build/src/app/main.go" is found as DIR/app/main.go or DIR/main.go,
 * the longest match first); ".." is refused, so nothing outside the directory is read. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "query/source_text.h"

#define MAX_TRIES 32

static bool has_dot_dot(const char *path)
{
	for (const char *p = path; (p = strstr(p, "..")) != NULL; p += 2)
		if ((p == path || p[-1] == '/') && (p[2] == '/' || p[2] == '\0'))
			return true;
	return false;
}

static int read_line(const char *path, uint32_t line, char *out, size_t len)
{
	FILE *f = fopen(path, "r");
	uint32_t at = 1;
	int c;
	size_t n = 0;

	if (!f)
		return -ENOENT;
	while (at < line && (c = getc(f)) != EOF)
		at += c == '\n';
	while (at == line && (c = getc(f)) != EOF && c != '\n')
		if (n + 1 < len)
			out[n++] = c == '\r' ? ' ' : (char)c;
	fclose(f);
	out[n] = '\0';
	return at == line ? 0 : -ENOENT;
}

int source_text__line(const char *dir, const char *file, uint32_t line, char *out, size_t len)
{
	const char *tail = file;
	char path[4096];
	struct stat sb;

	if (!dir || !*dir || !file || !*file || !line || !len)
		return -EINVAL;
	if (has_dot_dot(file))
		return -ENOENT;
	for (int i = 0; tail && i < MAX_TRIES; i++) {
		while (*tail == '/')
			tail++;
		if (!*tail)
			break;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, tail) < sizeof(path) &&
		    stat(path, &sb) == 0 && S_ISREG(sb.st_mode))
			return read_line(path, line, out, len);
		tail = strchr(tail, '/');
	}
	return -ENOENT;
}
