/* SPDX-License-Identifier: Apache-2.0 */
/* A fake /proc for the runtimes' unit tests: <root>/<pid>/maps names one binary as the process's
 * code, found (as the process registry opens it) at <root>/<pid>/root/<name>. */
#ifndef ROOTTRACE_TEST_FAKE_PROC_H
#define ROOTTRACE_TEST_FAKE_PROC_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "process/build_id.h"
#include "runtimes/runtime_elf.h"

/* Gives the copy at path a build-id of its own (tag in its first bytes): a rebuilt binary is
 * another binary to the registry, as a real one is. 0 or -errno. */
static inline int fake_proc__rebuild_id(const char *path, uint32_t tag)
{
	char hex[BUILD_ID_HEX_MAX];
	unsigned char id[20], *image, *at;
	size_t n = 0;
	struct stat st;
	int fd = open(path, O_RDWR), err;

	if (fd < 0)
		return -errno;
	err = build_id__read_fd(fd, hex, sizeof(hex));
	for (; !err && hex[2 * n] && n < sizeof(id); n++)
		sscanf(hex + 2 * n, "%2hhx", &id[n]);
	if (!err && (n < sizeof(tag) || fstat(fd, &st)))
		err = -ENOENT;
	image =
	    err ? MAP_FAILED : mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (!err && image == MAP_FAILED)
		err = -errno;
	if (!err) {
		at = memmem(image, st.st_size, id, n);
		if (at)
			memcpy(at, &tag, sizeof(tag));
		else
			err = -ENOENT;
		munmap(image, st.st_size);
	}
	close(fd);
	return err;
}

/* Writes len bytes over the start of symbol's value in the ELF at path, as a corrupted read
 * would see it (a version the runtime has no table for). 0 or -errno. */
static inline int fake_proc__overwrite_symbol(const char *path, const char *symbol,
					      const void *bytes, size_t len)
{
	struct runtime_elf *elf = runtime_elf__open(path);
	uint64_t vaddr, size, base;
	const unsigned char *at;
	long off;
	int fd, ret = -ENOENT;

	if (!elf)
		return -errno;
	if (!runtime_elf__symbol(elf, symbol, &vaddr, &size) &&
	    !runtime_elf__load_base(elf, &base) && (at = runtime_elf__at(elf, vaddr, len))) {
		off = (long)(at - (const unsigned char *)runtime_elf__at(elf, base, 1));
		fd = open(path, O_WRONLY);
		ret = fd >= 0 && pwrite(fd, bytes, len, off) == (ssize_t)len ? 0 : -EIO;
		if (fd >= 0)
			close(fd);
	}
	runtime_elf__close(elf);
	return ret;
}

/* Copies binary to <root>/<pid>/root/<name> (with its own build-id), lets prepare (NULL: none)
 * alter the copy, and writes maps naming it, at its inode then, as the process's code from
 * offset 0. 0 or -errno. */
static inline int fake_proc__make(const char *root, int pid, const char *binary, const char *name,
				  int (*prepare)(const char *path))
{
	char path[512], cmd[1200];
	struct stat st;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d", root, pid);
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	snprintf(path, sizeof(path), "%s/%d/root", root, pid);
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	snprintf(path, sizeof(path), "%s/%d/root/%s", root, pid, name);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", binary, path);
	if (system(cmd) || fake_proc__rebuild_id(path, 0x7e570000u + pid) ||
	    (prepare && prepare(path)) || stat(path, &st))
		return -EIO;
	snprintf(path, sizeof(path), "%s/%d/maps", root, pid);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "55d0c8a00000-55d0c8b00000 r-xp 00000000 fd:01 %llu /%s\n",
		(unsigned long long)st.st_ino, name);
	fclose(f);
	return 0;
}

#endif
