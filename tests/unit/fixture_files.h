/* SPDX-License-Identifier: Apache-2.0 */
/* Unit-test helpers for file fixtures: the path of a built fixture (build/fixtures/), a small
 * file written into a directory, a temporary tree removed (fake /proc roots). */
#ifndef ROOTTRACE_FIXTURE_FILES_H
#define ROOTTRACE_FIXTURE_FILES_H

#include <errno.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

/* $(BUILD)/tests/test-NAME -> $(BUILD)/fixtures/name (a static buffer, the next call reuses). */
static inline const char *fixture_path(const char *name)
{
	static char path[PATH_MAX];
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return name;
	exe[n] = '\0';
	snprintf(path, sizeof(path), "%s/../fixtures/%s", dirname(exe), name);
	return path;
}

/* dir/name holding text (replaced). 0 or -errno. */
static inline int write_file(const char *dir, const char *name, const char *text)
{
	char path[2 * PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fputs(text, f);
	return fclose(f) ? -errno : 0;
}

static inline int rm_tree_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

/* Removes dir and everything below it. */
static inline void rm_tree(const char *dir)
{
	nftw(dir, rm_tree_entry, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
