/* SPDX-License-Identifier: Apache-2.0 */
/* Go's function table (.gopclntab) of an ELF file, in bounded memory: function names for
 * stripped Go binaries, and the inline tree so an inlined call becomes its own frame. */
#ifndef ROOTTRACE_GOPCLNTAB_H
#define ROOTTRACE_GOPCLNTAB_H

#include <stddef.h>
#include <stdint.h>

#define GOPCLNTAB_MAX_SEGMENTS 16
#define GOPCLNTAB_MAX_FRAMES                                                                       \
	16 /* names per address; deeper inlining keeps the innermost calls and the holder */

/* Table formats by header magic; the number is the first Go release that wrote it. */
enum gopclntab_version {
	GOPCLNTAB_V12 = 12,   /* 0xfffffffb, Go 1.2 - 1.15: names only */
	GOPCLNTAB_V116 = 116, /* 0xfffffffa, Go 1.16 - 1.17 */
	GOPCLNTAB_V118 = 118, /* 0xfffffff0, Go 1.18 - 1.19 */
	GOPCLNTAB_V120 = 120, /* 0xfffffff1, Go 1.20 and later */
};

/* An image of a file: its bytes and where its loadable segments go in memory, so the table's
 * pointers (the runtime's module data, 1.16's funcdata) can be followed. */
struct go_image {
	const uint8_t *data;
	size_t size;
	struct {
		uint64_t vaddr, offset, filesz;
		int writable, executable;
	} segs[GOPCLNTAB_MAX_SEGMENTS];
	size_t nsegs;
};

struct gopclntab;

/* Finds the table of an ELF64 file mapped at data: by section name (.gopclntab,
 * .data.rel.ro.gopclntab), else by a header signature in its loadable segments (section
 * headers gone). The inline tree's base comes from the runtime's module data. The result
 * points into data, which must outlive it. NULL + errno (ENOENT: not Go, ENOEXEC: not ELF64). */
struct gopclntab *gopclntab__open_elf(const void *data, size_t size);

/* The table at tab (tab_vaddr in the image), for tests and non-ELF callers. gofunc_vaddr is
 * the runtime's go:func.* base (0: unknown, then no inline frames for 1.18+). */
struct gopclntab *gopclntab__open(const struct go_image *img, const uint8_t *tab, size_t tab_len,
				  uint64_t tab_vaddr, uint64_t gofunc_vaddr);
/* The table of the ELF file open at fd and mapped at data (as gopclntab__open_elf), read with
 * pread afterwards: the mapping may go when this returns, fd is dup'ed. Memory held is bounded
 * by construction: 12 bytes a function plus a 1 MiB block cache plus 8 KiB (gopclntab.c). */
struct gopclntab *gopclntab__open_file(int fd, const void *data, size_t size);
void gopclntab__free(struct gopclntab *t);

/* Names of the code at vaddr, leaf first: inlined functions innermost first, then the
 * function that holds the code. Names are copies held by t, valid until its next lookup (or
 * free); names longer than 511 bytes are cut. 0 when no function covers it. Not for
 * concurrent use: lookups fill t's block cache. */
size_t gopclntab__lookup(const struct gopclntab *t, uint64_t vaddr, const char **ret_names,
			 size_t max);

enum gopclntab_version gopclntab__version(const struct gopclntab *t);
size_t gopclntab__count(const struct gopclntab *t);   /* functions */
size_t gopclntab__memory(const struct gopclntab *t);  /* heap bytes held */
int gopclntab__has_inline(const struct gopclntab *t); /* 1 when inlined frames are expanded */

#endif
