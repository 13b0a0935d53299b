/* SPDX-License-Identifier: Apache-2.0 */
/* Finds a binary's separate debug file the way gdb does: by build-id under the debug root,
 * then by .gnu_debuglink beside the binary, in its .debug/ and under the debug root, CRC checked.
 */
#ifndef ROOTTRACE_DEBUG_FILE_H
#define ROOTTRACE_DEBUG_FILE_H

#include <stddef.h>
#include <stdint.h>

#define DEBUG_FILE_ROOT "/usr/lib/debug"

/* What the binary says about its debug file; any field may be empty. */
struct debug_file_query {
	const char *build_id;	 /* lowercase hex, "" or NULL when none */
	const char *binary_path; /* the binary's path, for .gnu_debuglink's directories */
	const char *debuglink;	 /* .gnu_debuglink's file name, NULL when none */
	uint32_t debuglink_crc;	 /* its CRC-32 of the debug file's contents */
};

/* Opens the first debug file found, read-only: an fd, or -ENOENT. A debuglink candidate whose
 * CRC differs is skipped (a debug file of another build). root: DEBUG_FILE_ROOT unless testing. */
int debug_file__open(const struct debug_file_query *q, const char *root);

/* CRC-32 as .gnu_debuglink uses it (the zlib/IEEE polynomial), continued from crc. */
uint32_t debug_file__crc32(uint32_t crc, const void *buf, size_t len);

/* CRC-32 of a whole open file (read with pread). 0 or -errno. */
int debug_file__crc32_fd(int fd, uint32_t *ret_crc);

#endif
