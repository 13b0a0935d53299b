// SPDX-License-Identifier: Apache-2.0
/* /proc/PID/maps reader: parses "start-end perms offset major:minor inode path" lines.
 * No library; the caller decides which mappings matter (executable ones, usually). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "process/procmaps.h"

static const char DELETED_SUFFIX[] = " (deleted)";

/* Parses a hex number ending at one of the stop characters; advances *p past it. */
static int parse_hex(const char **p, char stop, uint64_t *ret)
{
	char *end;

	errno = 0;
	*ret = strtoull(*p, &end, 16);
	if (errno || end == *p || *end != stop)
		return -EINVAL;
	*p = end + 1;
	return 0;
}

static int parse_perms(const char **p, struct procmap_entry *ret)
{
	const char *s = *p;

	if (strlen(s) < 5 || s[4] != ' ')
		return -EINVAL;
	ret->readable = s[0] == 'r';
	ret->writable = s[1] == 'w';
	ret->executable = s[2] == 'x';
	*p = s + 5;
	return 0;
}

static void copy_path(const char *s, struct procmap_entry *ret)
{
	size_t len;

	while (*s == ' ')
		s++;
	len = strcspn(s, "\n");
	if (len >= sizeof(ret->path))
		len = sizeof(ret->path) - 1;
	memcpy(ret->path, s, len);
	ret->path[len] = '\0';
	if (len >= sizeof(DELETED_SUFFIX) - 1 &&
	    strcmp(ret->path + len - (sizeof(DELETED_SUFFIX) - 1), DELETED_SUFFIX) == 0) {
		ret->deleted = true;
		ret->path[len - (sizeof(DELETED_SUFFIX) - 1)] = '\0';
	}
}

int procmaps__parse_line(const char *line, struct procmap_entry *ret)
{
	const char *p = line;
	uint64_t major, minor;
	char *end;

	memset(ret, 0, sizeof(*ret) - sizeof(ret->path));
	ret->path[0] = '\0';
	if (parse_hex(&p, '-', &ret->start) || parse_hex(&p, ' ', &ret->end))
		return -EINVAL;
	if (ret->end < ret->start || parse_perms(&p, ret))
		return -EINVAL;
	if (parse_hex(&p, ' ', &ret->offset) || parse_hex(&p, ':', &major) ||
	    parse_hex(&p, ' ', &minor))
		return -EINVAL;
	ret->dev_major = (uint32_t)major;
	ret->dev_minor = (uint32_t)minor;
	errno = 0;
	ret->inode = strtoull(p, &end, 10);
	if (errno || end == p || (*end != ' ' && *end != '\n' && *end != '\0'))
		return -EINVAL;
	copy_path(end, ret);
	return 0;
}

bool procmaps__is_file(const struct procmap_entry *e)
{
	return e->path[0] == '/' && e->inode != 0 && strncmp(e->path, "/memfd:", 7) != 0;
}

int procmaps__foreach(const char *proc_root, pid_t pid,
		      int (*fn)(const struct procmap_entry *e, void *ctx), void *ctx)
{
	struct procmap_entry *e;
	char path[128], *line = NULL;
	size_t cap = 0;
	int ret = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d/maps", proc_root, (int)pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	e = malloc(sizeof(*e));
	if (!e) {
		fclose(f);
		return -ENOMEM;
	}
	while (getline(&line, &cap, f) > 0) {
		if (procmaps__parse_line(line, e))
			continue; /* a format we do not know: skip, never guess */
		ret = fn(e, ctx);
		if (ret)
			break;
	}
	/* A process that exits while we read leaves a short or empty file, not an error. */
	free(line);
	free(e);
	fclose(f);
	return ret;
}
