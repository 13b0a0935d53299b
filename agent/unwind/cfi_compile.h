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
/* Bounds of one compile. Its memory is 8 bytes an FDE plus at most 64k rows (12 bytes each);
 * a bigger table is compiled twice (counted, then streamed to the sink in batches). The
 * section bound keeps compile time bounded: libc has 150 KB of .eh_frame (23k rows, ~7 ms),
 * node 2.7 MB (277k rows), GCC's cc1 2.4 MB (430k rows). A bigger one is refused (-E2BIG)
 * and its code is walked with frame pointers. */
#define CFI_MAX_ROWS (1u << 20)
#define CFI_MAX_SECTION_BYTES (8u << 20)

enum cfi_source {
	CFI_SOURCE_EH_FRAME = 1,
	CFI_SOURCE_DEBUG_FRAME = 2,
	CFI_SOURCE_GOPCLNTAB = 3, /* Go without .eh_frame: pcsp tables (go_rows.c) */
};

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

/* Where compiled rows go: begin() once with the table's header (n_rows and counts known),
 * then write() in pc order, in batches; an error from either ends the compile with it. */
struct cfi_row_sink {
	void *ctx;
	size_t in_memory_max; /* rows compiled in one pass in memory; 0: the default (64k) */
	int (*begin)(void *ctx, const struct cfi_table *t);
	int (*write)(void *ctx, size_t first, const struct unwind_row *rows, size_t n);
};

/* Compiles the ELF open at fd into sink; *t gets the header (t->rows stays NULL).
 * 0 or -errno as below. */
int cfi_compile_fd_to(int fd, struct cfi_table *t, const struct cfi_row_sink *sink);
int cfi_compile_own_vdso_to(struct cfi_table *t, const struct cfi_row_sink *sink);

/* Compiles the ELF open at fd (the fd is not kept). NULL + errno: ENOENT (no CFI at all),
 * ENOEXEC (not ELF), EINVAL (CFI unreadable), E2BIG (more than CFI_MAX_ROWS rows). */
struct cfi_table *cfi_compile_fd(int fd);
/* Same for an in-memory image (the vDSO). */
struct cfi_table *cfi_compile_memory(const void *image, size_t size);
/* This process's vDSO (the same image the kernel maps into every process). */
struct cfi_table *cfi_compile_own_vdso(void);
void cfi_table__free(struct cfi_table *t);

/* Size of the CFI section a compile of fd would read (.eh_frame, else a Go table as the
 * .eh_frame of the same compile cost, else .debug_frame); 0 when there is none or fd is not
 * ELF. Cheap: section headers only. */
uint64_t cfi_bytes_fd(int fd);

/* The row covering a table pc (last row at or before it), or NULL when pc is below the first. */
const struct unwind_row *cfi_table__lookup(const struct cfi_table *t, uint32_t pc);

/* Translates a mapping's file offset to the ELF virtual address (PT_LOAD). 0 or -ENOENT. */
int cfi_table__offset_to_vaddr(const struct cfi_table *t, uint64_t file_offset,
			       uint64_t *ret_vaddr);

#endif
