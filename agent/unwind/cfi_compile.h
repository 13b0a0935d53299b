/* SPDX-License-Identifier: Apache-2.0 */
/* Compiles one ELF file's call-frame information (.eh_frame, else .debug_frame, also from
 * the build-id debug file) into sorted unwind rows for the BPF unwinder. The only libdw user
 * of agent/unwind/. */
#ifndef ROOTTRACE_CFI_COMPILE_H
#define ROOTTRACE_CFI_COMPILE_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind.h"

#define CFI_BUILD_ID_MAX 41 /* hex, NUL-terminated */
#define CFI_MAX_SEGMENTS 16
/* Bounds of one compile (memory ~12 bytes a row while it runs): a bigger binary's table is
 * refused (-E2BIG) and its code is walked with frame pointers: the agent stays within its RSS
 * budget. libc has 150 KB of .eh_frame (23k rows), python3 411 KB, GCC's cc1 2.4 MB (refused). */
#define CFI_MAX_ROWS (1u << 20)
#define CFI_MAX_SECTION_BYTES (1u << 20)

enum cfi_source { CFI_SOURCE_EH_FRAME = 1, CFI_SOURCE_DEBUG_FRAME = 2 };

struct cfi_segment {
	uint64_t offset, vaddr, filesz;
};

struct cfi_table {
	char build_id[CFI_BUILD_ID_MAX]; /* "" when the file has none */
	enum cfi_source source;
	uint64_t vaddr_base; /* row pc = ELF virtual address - vaddr_base (0: code below 4 GiB) */
	struct unwind_row *rows;
	size_t n_rows;
	size_t n_fdes;
	size_t bad_entries;			   /* CIEs/FDEs libdw could not read (skipped) */
	uint64_t cannot[UNWIND_CANNOT__COUNT];	   /* "cannot unwind here" rows, by reason */
	struct cfi_segment segs[CFI_MAX_SEGMENTS]; /* PT_LOAD segments */
	size_t n_segs;
};

/* Compiles the ELF open at fd (the fd is not kept). NULL + errno: ENOENT (no CFI at all),
 * ENOEXEC (not ELF), EINVAL (CFI unreadable), E2BIG (more than CFI_MAX_ROWS rows). */
struct cfi_table *cfi_compile_fd(int fd);
/* Same for an in-memory image (the vDSO). */
struct cfi_table *cfi_compile_memory(const void *image, size_t size);
/* This process's vDSO (the same image the kernel maps into every process). */
struct cfi_table *cfi_compile_own_vdso(void);
void cfi_table__free(struct cfi_table *t);

/* The GNU build-id of the ELF open at fd, as hex: cheaper than compiling (cache key).
 * 0, -ENOENT (none), -ENOEXEC. */
int cfi_build_id_fd(int fd, char *ret_hex, size_t len);

/* The row covering a table pc (last row at or before it), or NULL when pc is below the first. */
const struct unwind_row *cfi_table__lookup(const struct cfi_table *t, uint32_t pc);

/* Translates a mapping's file offset to the ELF virtual address (PT_LOAD). 0 or -ENOENT. */
int cfi_table__offset_to_vaddr(const struct cfi_table *t, uint64_t file_offset,
			       uint64_t *ret_vaddr);

#endif
