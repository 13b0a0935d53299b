/* SPDX-License-Identifier: Apache-2.0 */
/* One ELF file's DWARF line tables (libdw): a file offset of the binary to its virtual address
 * through the program headers, and an address to its source file and line. */
#ifndef ROOTTRACE_DWARF_LINES_H
#define ROOTTRACE_DWARF_LINES_H

#include <stdbool.h>
#include <stdint.h>

struct dwarf_lines;

/* Opens path (a debug file, or a plain ELF with or without DWARF). 0, or -errno (-ENOENT: no
 * file, -ENOEXEC: not ELF). Not thread-safe: the caller serialises calls on one object. */
int dwarf_lines__open(const char *path, struct dwarf_lines **ret);
void dwarf_lines__free(struct dwarf_lines *dl);

/* The GNU build-id as lowercase hex, "" when the file has none. */
const char *dwarf_lines__build_id(const struct dwarf_lines *dl);

/* True when the file has line tables (at least one unit covering an address). */
bool dwarf_lines__has_lines(const struct dwarf_lines *dl);

/* True when the executable segments' program headers hold the binary's file offsets: a plain
 * ELF, or a debug file split with eu-strip -f. `objcopy --only-keep-debug` (Debian's dh_strip)
 * rewrites them (p_offset 0, p_filesz 0): such a file cannot map offsets alone. */
bool dwarf_lines__maps_offsets(const struct dwarf_lines *dl);

/* The virtual address of a file offset, through the PT_LOAD segment holding it. 0, or -ERANGE
 * when no segment with file bytes holds it. */
int dwarf_lines__offset_to_vaddr(const struct dwarf_lines *dl, uint64_t offset,
				 uint64_t *ret_vaddr);

/* The source file (valid until dwarf_lines__free()) and 1-based line of vaddr. 0, or -ESRCH
 * when no unit or line row covers it. */
int dwarf_lines__lookup(struct dwarf_lines *dl, uint64_t vaddr, const char **ret_file,
			uint32_t *ret_line);

#endif
