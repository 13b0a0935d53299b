// SPDX-License-Identifier: Apache-2.0
/* Separate debug files: the build-id path, then .gnu_debuglink's three places with the
 * link's CRC checked. Serves the symboliser and the unwinder's .debug_frame (one lookup). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/debug_file.h"

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_table_fill(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

uint32_t debug_file__crc32(uint32_t crc, const void *buf, size_t len)
{
	const uint32_t *table = crc_table;
	const uint8_t *p = buf;

	pthread_once(&crc_once, crc_table_fill); /* the symboliser and the unwinder's builder */
	crc = ~crc;
	while (len--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

int debug_file__crc32_fd(int fd, uint32_t *ret_crc)
{
	char buf[65536];
	uint32_t crc = 0;
	off_t off = 0;
	ssize_t n;

	while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
		crc = debug_file__crc32(crc, buf, (size_t)n);
		off += n;
	}
	if (n < 0)
		return -errno;
	*ret_crc = crc;
	return 0;
}

static int open_regular(const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -ENOENT;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -ENOENT;
	}
	return fd;
}

static int open_by_build_id(const char *build_id, const char *root)
{
	char path[PATH_MAX];

	if (!build_id || strlen(build_id) < 3)
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", root, build_id, build_id + 2);
	return open_regular(path);
}

/* A debuglink candidate, kept only when its CRC matches. */
static int open_checked(const char *path, uint32_t crc)
{
	uint32_t got;
	int fd = open_regular(path);

	if (fd < 0)
		return fd;
	if (debug_file__crc32_fd(fd, &got) || got != crc) {
		close(fd);
		return -ENOENT;
	}
	return fd;
}

static int open_by_debuglink(const struct debug_file_query *q, const char *root)
{
	char copy[PATH_MAX], dir[PATH_MAX], path[PATH_MAX * 2 + 32];
	int fd;

	if (!q->debuglink || !q->debuglink[0] || strchr(q->debuglink, '/') || !q->binary_path ||
	    q->binary_path[0] != '/')
		return -ENOENT;
	snprintf(copy, sizeof(copy), "%s", q->binary_path);
	snprintf(dir, sizeof(dir), "%s", dirname(copy));
	if (strcmp(dir, "/") == 0)
		dir[0] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dir, q->debuglink);
	/* The link names another file: never the binary itself. */
	if (strcmp(path, q->binary_path) != 0 && (fd = open_checked(path, q->debuglink_crc)) >= 0)
		return fd;
	snprintf(path, sizeof(path), "%s/.debug/%s", dir, q->debuglink);
	if ((fd = open_checked(path, q->debuglink_crc)) >= 0)
		return fd;
	snprintf(path, sizeof(path), "%s%s/%s", root, dir, q->debuglink);
	return open_checked(path, q->debuglink_crc);
}

int debug_file__open(const struct debug_file_query *q, const char *root)
{
	int fd;

	if (!root)
		root = DEBUG_FILE_ROOT;
	fd = open_by_build_id(q->build_id, root);
	if (fd >= 0)
		return fd;
	return open_by_debuglink(q, root);
}
