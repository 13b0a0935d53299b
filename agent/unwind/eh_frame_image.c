// SPDX-License-Identifier: Apache-2.0
/* The .eh_frame_hdr-first image (see eh_frame_image.h): ELF header, the two sections'
 * bytes, a section-name table and four section headers, built with the binary's own ELF
 * identity (class, byte order, machine) so that libdw reads the CFI as it would in place. */
#include <elf.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unwind/eh_frame_image.h"

static const char SHSTRTAB[] = "\0.eh_frame_hdr\0.eh_frame\0.shstrtab";
enum { NAME_HDR = 1, NAME_EH = 15, NAME_SHSTRTAB = 25 };

Elf_Scn *elf_section_named(Elf *elf, const char *name, GElf_Shdr *ret_shdr)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, ret_shdr) || ret_shdr->sh_type == SHT_NOBITS)
			continue;
		n = elf_strptr(elf, shstrndx, ret_shdr->sh_name);
		if (n && !strcmp(n, name) && ret_shdr->sh_size)
			return scn;
	}
	return NULL;
}

/* The index of the section called name, 0 when there is none. */
static size_t section_index(Elf *elf, const char *name, GElf_Shdr *ret_shdr)
{
	Elf_Scn *scn = elf_section_named(elf, name, ret_shdr);

	return scn ? elf_ndxscn(scn) : 0;
}

int eh_frame_image__needed(Elf *elf)
{
	GElf_Shdr hdr, eh;
	size_t hdr_index = section_index(elf, ".eh_frame_hdr", &hdr);
	size_t eh_index = section_index(elf, ".eh_frame", &eh);

	return hdr_index && eh_index && hdr_index > eh_index;
}

static int read_exact(int fd, void *buf, size_t len, off_t offset)
{
	while (len) {
		ssize_t n = pread(fd, buf, len, offset);

		if (n <= 0)
			return -EIO;
		buf = (char *)buf + n;
		len -= (size_t)n;
		offset += n;
	}
	return 0;
}

static Elf64_Shdr section(uint32_t name, uint32_t type, uint64_t flags, uint64_t addr,
			  uint64_t offset, uint64_t size, uint64_t align)
{
	return (Elf64_Shdr){.sh_name = name,
			    .sh_type = type,
			    .sh_flags = flags,
			    .sh_addr = addr,
			    .sh_offset = offset,
			    .sh_size = size,
			    .sh_addralign = align};
}

int eh_frame_image__open(Elf *elf, int fd, uint64_t max_bytes, struct eh_frame_image *ret)
{
	const Elf64_Ehdr *src = elf64_getehdr(elf);
	GElf_Shdr hdr, eh;
	size_t hdr_off = sizeof(Elf64_Ehdr), eh_off, str_off, sh_off, total;
	Elf64_Ehdr *ehdr;
	Elf64_Shdr *shdrs;
	char *bytes;

	memset(ret, 0, sizeof(*ret));
	if (!src || !section_index(elf, ".eh_frame_hdr", &hdr) ||
	    !section_index(elf, ".eh_frame", &eh))
		return -ENOEXEC;
	if (hdr.sh_size > max_bytes || eh.sh_size > max_bytes)
		return -E2BIG; /* the section sizes come from the file: bounded before malloc */
	eh_off = (hdr_off + hdr.sh_size + 7) & ~(size_t)7;
	str_off = eh_off + eh.sh_size;
	sh_off = (str_off + sizeof(SHSTRTAB) + 7) & ~(size_t)7;
	total = sh_off + 4 * sizeof(Elf64_Shdr);
	bytes = calloc(1, total);
	if (!bytes)
		return -ENOMEM;
	if (read_exact(fd, bytes + hdr_off, hdr.sh_size, (off_t)hdr.sh_offset) ||
	    read_exact(fd, bytes + eh_off, eh.sh_size, (off_t)eh.sh_offset)) {
		free(bytes);
		return -EIO;
	}
	memcpy(bytes + str_off, SHSTRTAB, sizeof(SHSTRTAB));
	ehdr = (Elf64_Ehdr *)bytes;
	*ehdr = *src;
	ehdr->e_phoff = ehdr->e_phnum = ehdr->e_phentsize = 0;
	ehdr->e_shoff = sh_off;
	ehdr->e_shnum = 4;
	ehdr->e_shentsize = sizeof(Elf64_Shdr);
	ehdr->e_shstrndx = 3;
	shdrs = (Elf64_Shdr *)(bytes + sh_off);
	shdrs[1] = section(NAME_HDR, SHT_PROGBITS, SHF_ALLOC, hdr.sh_addr, hdr_off, hdr.sh_size, 4);
	shdrs[2] = section(NAME_EH, SHT_PROGBITS, SHF_ALLOC, eh.sh_addr, eh_off, eh.sh_size, 8);
	shdrs[3] = section(NAME_SHSTRTAB, SHT_STRTAB, 0, 0, str_off, sizeof(SHSTRTAB), 1);
	ret->elf = elf_memory(bytes, total);
	if (!ret->elf) {
		free(bytes);
		return -ENOMEM;
	}
	ret->bytes = bytes;
	return 0;
}

void eh_frame_image__close(struct eh_frame_image *img)
{
	if (img->elf)
		elf_end(img->elf);
	free(img->bytes);
	img->elf = NULL;
	img->bytes = NULL;
}
