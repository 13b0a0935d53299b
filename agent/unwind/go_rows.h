/* SPDX-License-Identifier: Apache-2.0 */
/* Unwind rows of a Go binary from its .gopclntab: each function's pcsp table (SP delta at each
 * pc) is a CFI of its own, so frameless leaves keep their callers without .eh_frame; alone, or
 * between a cgo binary's FDEs (cfi_compile.c). */
#ifndef ROOTTRACE_GO_ROWS_H
#define ROOTTRACE_GO_ROWS_H

#include "unwind/cfi_compile.h"

/* Compiles the Go text of the ELF file open at fd into sink, the same rows and bounds as
 * cfi_compile's (CFI_MAX_ROWS; a table over 64k rows counted, then streamed). t's header
 * (segments, build-id) is kept; source becomes CFI_SOURCE_GOPCLNTAB. 0 or -errno: ENOENT (not
 * an x86-64 Go binary), EINVAL (its table is damaged), E2BIG (over the bounds), the sink's. */
int go_rows__compile_fd(int fd, struct cfi_table *t, const struct cfi_row_sink *sink);

/* Beside .eh_frame (a cgo binary: its FDEs cover the C code, none the Go code): the Go
 * functions' rows interleaved with a .eh_frame compile's, in address order. */
struct go_rows;
struct cfi_rows;

/* The Go table of the ELF file open at fd (read with pread afterwards). NULL: not x86-64 Go. */
struct go_rows *go_rows__open(int fd);
void go_rows__free(struct go_rows *g);
/* Starts a pass: rows go to rows (the compile's stage), counted in t. */
void go_rows__rewind(struct go_rows *g, struct cfi_table *t, struct cfi_rows *rows);
/* Pushes the Go functions with a pcsp table that lie in [*floor, limit), in order (one that
 * runs past limit, into an FDE, is skipped); *floor becomes the end of the last one. 0 or the
 * rows stage's -errno. */
int go_rows__push_until(struct go_rows *g, uint64_t limit, uint64_t *floor);

#endif
