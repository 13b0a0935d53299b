// SPDX-License-Identifier: Apache-2.0
/* DWARF line tables of one ELF file through libdw: the units' address ranges are read once
 * into a sorted table (.debug_aranges is optional, clang omits it), a unit's line table when
 * an address first falls in it (libdw keeps it). */
#include "lines/dwarf_lines.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BUILD_ID_HEX_MAX 129 /* 64 bytes of note, hex, NUL */

struct unit_range {
	uint64_t start, end; /* [start, end) */
	Dwarf_Off die;	     /* the unit's DIE */
};

struct dwarf_lines {
	int fd;
	Elf *elf;
	Dwarf *dwarf; /* NULL: no DWARF in the file */
	char build_id[BUILD_ID_HEX_MAX];
	GElf_Phdr *loads; /* PT_LOAD segments */
	size_t n_loads;
	struct unit_range *ranges; /* sorted by start */
	size_t n_ranges, cap_ranges;
	char path[4096]; /* the last file looked up, joined to its unit's directory */
};

static void read_build_id(struct dwarf_lines *dl)
{
	const unsigned char *id;
	ssize_t n = dwelf_elf_gnu_build_id(dl->elf, (const void **)&id);

	dl->build_id[0] = '\0';
	for (ssize_t i = 0; i < n && 2 * (size_t)i + 2 < sizeof(dl->build_id); i++)
		snprintf(dl->build_id + 2 * i, 3, "%02x", id[i]);
}

static int read_loads(struct dwarf_lines *dl)
{
	size_t n;

	if (elf_getphdrnum(dl->elf, &n))
		return -ENOEXEC;
	dl->loads = calloc(n ? n : 1, sizeof(*dl->loads));
	if (!dl->loads)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(dl->elf, (int)i, &ph) && ph.p_type == PT_LOAD)
			dl->loads[dl->n_loads++] = ph;
	}
	return 0;
}

static int add_range(struct dwarf_lines *dl, uint64_t start, uint64_t end, Dwarf_Off die)
{
	if (start >= end)
		return 0;
	if (dl->n_ranges == dl->cap_ranges) {
		size_t cap = dl->cap_ranges ? 2 * dl->cap_ranges : 256;
		struct unit_range *grown = reallocarray(dl->ranges, cap, sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		dl->ranges = grown;
		dl->cap_ranges = cap;
	}
	dl->ranges[dl->n_ranges++] = (struct unit_range){start, end, die};
	return 0;
}

static int by_start(const void *a, const void *b)
{
	const struct unit_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Every compile unit's address ranges (DW_AT_ranges or low/high pc), sorted. */
static int read_ranges(struct dwarf_lines *dl)
{
	Dwarf_Off off = 0, next;
	size_t header;
	int ret = 0;

	while (!ret && dwarf_nextcu(dl->dwarf, off, &next, &header, NULL, NULL, NULL) == 0) {
		Dwarf_Addr base, start, end;
		ptrdiff_t it = 0;
		Dwarf_Die cu;

		if (dwarf_offdie(dl->dwarf, off + header, &cu))
			while (!ret && (it = dwarf_ranges(&cu, it, &base, &start, &end)) > 0)
				ret = add_range(dl, start, end, dwarf_dieoffset(&cu));
		off = next;
	}
	if (!ret && dl->n_ranges)
		qsort(dl->ranges, dl->n_ranges, sizeof(*dl->ranges), by_start);
	return ret;
}

int dwarf_lines__open(const char *path, struct dwarf_lines **ret)
{
	struct dwarf_lines *dl;
	int err;

	*ret = NULL;
	elf_version(EV_CURRENT);
	dl = calloc(1, sizeof(*dl));
	if (!dl)
		return -ENOMEM;
	dl->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (dl->fd < 0) {
		err = -errno;
		free(dl);
		return err;
	}
	dl->elf = elf_begin(dl->fd, ELF_C_READ_MMAP, NULL);
	err = dl->elf && elf_kind(dl->elf) == ELF_K_ELF ? read_loads(dl) : -ENOEXEC;
	if (!err) {
		read_build_id(dl);
		dl->dwarf = dwarf_begin_elf(dl->elf, DWARF_C_READ, NULL); /* NULL: no DWARF */
		err = dl->dwarf ? read_ranges(dl) : 0;
	}
	if (err) {
		dwarf_lines__free(dl);
		return err;
	}
	*ret = dl;
	return 0;
}

void dwarf_lines__free(struct dwarf_lines *dl)
{
	if (!dl)
		return;
	if (dl->dwarf)
		dwarf_end(dl->dwarf);
	if (dl->elf)
		elf_end(dl->elf);
	close(dl->fd);
	free(dl->loads);
	free(dl->ranges);
	free(dl);
}

const char *dwarf_lines__build_id(const struct dwarf_lines *dl)
{
	return dl->build_id;
}

bool dwarf_lines__has_lines(const struct dwarf_lines *dl)
{
	return dl->n_ranges > 0;
}

bool dwarf_lines__maps_offsets(const struct dwarf_lines *dl)
{
	for (size_t i = 0; i < dl->n_loads; i++)
		if ((dl->loads[i].p_flags & PF_X) && dl->loads[i].p_filesz)
			return true;
	return false;
}

int dwarf_lines__offset_to_vaddr(const struct dwarf_lines *dl, uint64_t offset, uint64_t *ret_vaddr)
{
	for (size_t i = 0; i < dl->n_loads; i++) {
		const GElf_Phdr *ph = &dl->loads[i];

		if (offset >= ph->p_offset && offset - ph->p_offset < ph->p_filesz) {
			*ret_vaddr = offset - ph->p_offset + ph->p_vaddr;
			return 0;
		}
	}
	return -ERANGE;
}

/* The range holding vaddr, or NULL. Units do not overlap; the last start <= vaddr is it. */
static const struct unit_range *find_range(const struct dwarf_lines *dl, uint64_t vaddr)
{
	size_t lo = 0, hi = dl->n_ranges;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (dl->ranges[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || vaddr >= dl->ranges[lo - 1].end)
		return NULL;
	return &dl->ranges[lo - 1];
}

/* A relative source name is relative to its unit's build directory (as eu-addr2line shows). */
static const char *join_comp_dir(struct dwarf_lines *dl, Dwarf_Die *cu, const char *file)
{
	Dwarf_Attribute attr;
	const char *dir;

	if (file[0] == '/')
		return file;
	dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr));
	if (!dir || !*dir)
		return file;
	snprintf(dl->path, sizeof(dl->path), "%s/%s", dir, file);
	return dl->path;
}

int dwarf_lines__lookup(struct dwarf_lines *dl, uint64_t vaddr, const char **ret_file,
			uint32_t *ret_line)
{
	const struct unit_range *r = dl->dwarf ? find_range(dl, vaddr) : NULL;
	const char *file;
	Dwarf_Line *line;
	Dwarf_Die cu;
	int lineno = 0;

	if (!r || !dwarf_offdie(dl->dwarf, r->die, &cu))
		return -ESRCH;
	line = dwarf_getsrc_die(&cu, vaddr);
	file = line ? dwarf_linesrc(line, NULL, NULL) : NULL;
	if (!file || dwarf_lineno(line, &lineno) || lineno <= 0)
		return -ESRCH;
	*ret_file = join_comp_dir(dl, &cu, file);
	*ret_line = (uint32_t)lineno;
	return 0;
}
