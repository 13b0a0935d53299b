// SPDX-License-Identifier: Apache-2.0
/* Section lookup by name over a mapped ELF64 image, every offset checked against its size
 * (the file is whatever a process mapped: it may be truncated or hostile). */
#include <elf.h>
#include <errno.h>
#include <string.h>

#include "symbolize/elf_image.h"

int elf_image__section(const void *data, size_t size, const char *name, const void **ret,
		       size_t *ret_len)
{
	const uint8_t *base = data;
	Elf64_Ehdr eh;
	Elf64_Shdr strs, sh;

	if (size < sizeof(eh))
		return -ENOEXEC;
	memcpy(&eh, base, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64)
		return -ENOEXEC;
	if (!eh.e_shoff || eh.e_shentsize != sizeof(sh) || eh.e_shoff > size ||
	    (size - eh.e_shoff) / sizeof(sh) < eh.e_shnum || eh.e_shstrndx >= eh.e_shnum)
		return -ENOENT;
	memcpy(&strs, base + eh.e_shoff + eh.e_shstrndx * sizeof(sh), sizeof(sh));
	if (strs.sh_offset > size || strs.sh_size > size - strs.sh_offset)
		return -ENOENT;
	for (size_t i = 0; i < eh.e_shnum; i++) {
		const char *n;

		memcpy(&sh, base + eh.e_shoff + i * sizeof(sh), sizeof(sh));
		if (sh.sh_name >= strs.sh_size || sh.sh_type == SHT_NOBITS)
			continue;
		n = (const char *)base + strs.sh_offset + sh.sh_name;
		if (!memchr(n, '\0', strs.sh_size - sh.sh_name) || strcmp(n, name))
			continue;
		if (sh.sh_offset > size || sh.sh_size > size - sh.sh_offset)
			return -ENOENT;
		*ret = base + sh.sh_offset;
		*ret_len = sh.sh_size;
		return 0;
	}
	return -ENOENT;
}

int elf_image__debuglink(const void *data, size_t size, const char **ret_name, uint32_t *ret_crc)
{
	const char *sec;
	size_t len, name_len;
	int err = elf_image__section(data, size, ".gnu_debuglink", (const void **)&sec, &len);

	if (err)
		return err;
	/* name, NUL, padding to 4, then the CRC (in the file's byte order: little-endian here) */
	name_len = strnlen(sec, len);
	if (!name_len || name_len == len)
		return -ENOENT;
	size_t crc_off = (name_len + 1 + 3) & ~(size_t)3;

	if (crc_off + 4 > len)
		return -ENOENT;
	memcpy(ret_crc, sec + crc_off, 4);
	*ret_name = sec;
	return 0;
}
