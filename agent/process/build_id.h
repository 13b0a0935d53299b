/* SPDX-License-Identifier: Apache-2.0 */
/* The one build-id reader: the GNU build-id note of an ELF file, as lowercase hex. Reads
 * the ELF and program (else section) headers with pread; no library, nothing mapped. */
#ifndef ROOTTRACE_BUILD_ID_H
#define ROOTTRACE_BUILD_ID_H

#include <stddef.h>

#define BUILD_ID_HEX_MAX 41 /* 20 bytes (SHA-1, what linkers write) as hex, NUL-terminated */

/* The build-id of the ELF file open at fd. 0 with ret_hex "" when it has none (or a longer
 * one than fits), -ENOEXEC when the file is not ELF, -errno when it cannot be read. */
int build_id__read_fd(int fd, char *ret_hex, size_t len);

#endif
