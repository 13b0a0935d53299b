/* SPDX-License-Identifier: Apache-2.0 */
/* Sections of an ELF64 file mapped in memory, read in place without a library: what the
 * symbol sources need before libelf is worth opening (.gnu_debugdata, .gnu_debuglink). */
#ifndef ROOTTRACE_ELF_IMAGE_H
#define ROOTTRACE_ELF_IMAGE_H

#include <stddef.h>
#include <stdint.h>

/* The contents of the section named name: 0, -ENOENT or -ENOEXEC (not ELF64). */
int elf_image__section(const void *data, size_t size, const char *name, const void **ret,
		       size_t *ret_len);

/* .gnu_debuglink: the debug file's name and the CRC-32 of its contents. 0 or -ENOENT. */
int elf_image__debuglink(const void *data, size_t size, const char **ret_name, uint32_t *ret_crc);

#endif
