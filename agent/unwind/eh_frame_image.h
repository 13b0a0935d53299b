/* SPDX-License-Identifier: Apache-2.0 */
/* An in-memory ELF image holding only a binary's .eh_frame_hdr and .eh_frame, in that order.
 * libdw's dwarf_getcfi_elf reads the binary-search table of .eh_frame_hdr only when that
 * section comes before .eh_frame in the section table. GNU gold lays them out the other way
 * (Debian's libLLVM and libclang-cpp, and big C++ projects that link with gold), and without
 * the table every FDE lookup scans the section from its start and keeps each FDE it passes:
 * libLLVM's 95k FDEs took 4-5 s and 14 MiB to compile. Over this image the lookups are binary
 * searches again (0.3 s, 8 MiB, the same rows). */
#ifndef ROOTTRACE_EH_FRAME_IMAGE_H
#define ROOTTRACE_EH_FRAME_IMAGE_H

#include <gelf.h>
#include <libelf.h>
#include <stdint.h>

struct eh_frame_image {
	void *bytes; /* the image (malloc'd), read from the file with pread */
	Elf *elf;    /* libelf over bytes: sections 1 = .eh_frame_hdr, 2 = .eh_frame */
};

/* The section called name with content (not NOBITS, not empty), its header in *ret_shdr;
 * NULL when there is none. Shared with cfi_compile.c. */
Elf_Scn *elf_section_named(Elf *elf, const char *name, GElf_Shdr *ret_shdr);

/* Whether elf (open on fd) needs the image: it has both sections, the header after. */
int eh_frame_image__needed(Elf *elf);
/* Builds the image from fd. 0, -E2BIG (a section over max_bytes), -ENOMEM, -EIO, -ENOEXEC
 * (not a 64-bit ELF, or a section missing). */
int eh_frame_image__open(Elf *elf, int fd, uint64_t max_bytes, struct eh_frame_image *ret);
void eh_frame_image__close(struct eh_frame_image *img);

#endif
