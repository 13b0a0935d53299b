/* SPDX-License-Identifier: Apache-2.0 */
/* MiniDebugInfo: the xz-compressed ELF in .gnu_debugdata (Fedora, RHEL, Amazon Linux) that
 * holds a stripped binary's function symbols; the only module that uses liblzma. */
#ifndef ROOTTRACE_MINIDEBUGINFO_H
#define ROOTTRACE_MINIDEBUGINFO_H

#include <stddef.h>

#define MINIDEBUGINFO_MAX_BYTES (64u << 20) /* decompressed, a bound against xz bombs */

/* Decompresses .gnu_debugdata's contents into a malloc'd ELF image (*ret, *ret_len).
 * 0, -EINVAL (not xz or damaged), -EFBIG (over MINIDEBUGINFO_MAX_BYTES) or -ENOMEM. */
int minidebuginfo__decompress(const void *xz, size_t len, void **ret, size_t *ret_len);

#endif
