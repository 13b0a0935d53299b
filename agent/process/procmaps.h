/* SPDX-License-Identifier: Apache-2.0 */
/* /proc/PID/maps reader: one parsed line per mapping (range, offset, device, inode, path).
 * Plain text parsing, no library; paths are copied, " (deleted)" is split off into a flag. */
#ifndef ROOTTRACE_PROCMAPS_H
#define ROOTTRACE_PROCMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROCMAPS_PATH_MAX 4096

struct procmap_entry {
	uint64_t start, end, offset;
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	bool readable, writable, executable;
	bool deleted;		      /* path ended in " (deleted)" */
	char path[PROCMAPS_PATH_MAX]; /* "" for anonymous mappings; "[vdso]", "[stack]"... */
};

/* Parses one line of /proc/PID/maps (trailing newline allowed). 0 or -EINVAL. */
int procmaps__parse_line(const char *line, struct procmap_entry *ret);

/* True for a file-backed mapping (path is absolute, not "[...]", not anonymous memfd). */
bool procmaps__is_file(const struct procmap_entry *e);

/* Calls fn for every line of <proc_root>/<pid>/maps, stops early when fn returns non-zero
 * (that value is returned). 0, fn's value, or -errno (-ESRCH when the process is gone). */
int procmaps__foreach(const char *proc_root, pid_t pid,
		      int (*fn)(const struct procmap_entry *e, void *ctx), void *ctx);

#endif
